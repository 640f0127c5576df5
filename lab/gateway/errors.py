"""The gateway's errors, and the JSON error answer it gives an agent; the errors belong in ``lab.errors``'s tree under ``LabError``::

    LabError
      GatewayError         the gateway could not start or serve (infrastructure)
        UpstreamError      the live provider could not be reached, timed out, or broke a stream

A replay divergence is ``lab.replay.matching.ReplayDivergence`` (a ``CassetteMiss``).

The gateway's own
error answers (:func:`error_response`) are JSON ``{"error": {"message", "type", "code", "param"}}``:

=====  ======================  ================================================
 400   ``budget_exceeded``     a budget is used up (sticky); 400 because SDKs
                               do not retry it, so a well-behaved agent stops
 400   ``replay_divergence``   replay has no recording for this request (sticky)
 400   ``invalid_request``     the body is not a JSON object
 400   ``invalid_encoding``    the body does not decode as its Content-Encoding says
 401   ``unauthorized``        missing or wrong token
 404   ``not_found``           any other route (the message names the routes)
 415   ``unsupported_encoding`` a Content-Encoding other than gzip, deflate, br, zstd
 500   ``internal_error``      a bug in the gateway (kept in ``internal_errors``)
 5xx   ``upstream_error``      a provider fault that persisted past the retries
                               (``code``: its cause; the provider's status when
                               it sent one, else 502)
 504   ``upstream_timeout``    the provider timed out
=====  ======================  ================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.errors import LabError

if TYPE_CHECKING:
    from aiohttp import web


class GatewayError(LabError):
    """The gateway could not start (address in use, socket path too long) or serve."""


class UpstreamError(GatewayError):
    """The upstream provider could not be reached or timed out.

    Attributes:
        cause: ``connect``, ``timeout``, ``stream`` (the answer broke off midway),
            ``response_too_large`` or ``invalid_response`` (a body that does not decode).
    """

    def __init__(self, message: str, *, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


def error_response(status: int, kind: str, message: str, code: str | None = None) -> web.Response:
    """The gateway's answer to a request it refuses or cannot serve: OpenAI's error shape,
    ``{"error": {"message", "type", "code", "param"}}`` (``code`` defaults to ``kind``)."""
    from aiohttp import web  # the gateway's server has it loaded; importers of the errors need not

    body: dict[str, Any] = {"error": {"message": message, "type": kind, "code": code or kind, "param": None}}
    return web.json_response(body, status=status)
