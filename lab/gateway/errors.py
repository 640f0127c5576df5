"""The gateway's errors; they belong in ``lab.errors``'s tree under ``LabError``::

    LabError
      GatewayError         the gateway could not start or serve (infrastructure)
        UpstreamError      the live provider could not be reached, timed out, or broke a stream

A replay divergence is ``lab.replay.matching.ReplayDivergence`` (a ``CassetteMiss``).
"""

from __future__ import annotations

from lab.errors import LabError


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
