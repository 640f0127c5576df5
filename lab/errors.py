"""The lab's exception tree.

Every error a user can cause is a ``LabError`` whose message names the place
(file, task id, field path), what was expected and what was found. The CLI
prints it as one line and exits 1; nothing else is a user-facing traceback.

```
LabError
  ConfigError            bad Hydra config or command-line override
  SuiteError             suite.json invalid (has .problems: every problem found)
  WorkspaceError         fixture copy or snapshot failed (infrastructure)
  ProcessStartError      a command could not be started (not found, not executable)
  SandboxError           the sandbox cannot be used as asked (lab.sandbox: unknown backend,
                         bwrap unusable when asked for, a path it cannot show inside)
  ToolError              tool misuse; becomes an observation for the model
  PolicyViolation        an effect the policy does not grant; an observation
  ProviderError          the provider could not answer (infrastructure)
    ProviderTimeout      connect/read timeout
    ProviderRateLimited  HTTP 429 after the retries ran out
    ProviderAuthError    HTTP 401/403
    ProviderResponseInvalid  a body or stream the client cannot parse
  CassetteError          a cassette is missing, malformed or unsafe to write
    CassetteMiss         replay: the harness asked for something not recorded
  RecordVersionError     a record written by a newer lab
```
"""

from __future__ import annotations

from typing import Any


class LabError(Exception):
    """Base of every error the lab raises on purpose."""


class ConfigError(LabError):
    """The composed configuration or a command-line override is invalid."""


class SuiteError(LabError):
    """A suite failed to load.

    Attributes:
        problems: every problem found, each already formatted as
            ``suite <id>: task <task-id>: <field path>: <what is wrong>``.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class WorkspaceError(LabError):
    """The task copy could not be made or inspected."""


class ProcessStartError(LabError):
    """A command could not be started (missing program, permission denied)."""


class SandboxError(LabError):
    """The sandbox cannot be used as asked (infrastructure or setup mistake).

    Raised by ``lab.sandbox`` (``registry.resolve_backend``, a backend's
    ``prepare`` and ``wrap``, ``reaper.RunRoot``) for an unknown backend name
    (the message lists the known ones), a requested backend that cannot run
    on this host (the message names the fix), a bind or workspace path the
    sandbox cannot reach, or an invalid limit. Never raised for what a
    sandboxed command does: a command that fails inside the sandbox is an
    ordinary non-zero exit.
    """


class ToolError(LabError):
    """A tool was used wrongly; the message is shown to the model."""


class PolicyViolation(LabError):
    """A tool call needs an effect the policy does not grant."""


class ProviderError(LabError):
    """The provider could not produce an answer (an infrastructure error).

    Attributes:
        cause: a short machine-readable cause (``connect``, ``timeout``,
            ``auth``, ``rate_limited``, ``server``, ``bad_request``,
            ``invalid_response``, ``response_too_large``).
        status: the HTTP status of the answer, when there was one.
        server: the server's own error, ``{"message", "type", "code"}``
            (strings or None), when it sent one.
    """

    cause = "provider"
    #: what the answer carried before the failure (``{"content", "toolCalls"}``), if anything
    partial: dict[str, Any] | None = None
    #: the exchange as received when the answer itself was the failure (kept for cassettes)
    exchange: dict[str, Any] | None = None

    def __init__(self, message: str, *, cause: str | None = None, status: int | None = None,
                 server: dict[str, str | None] | None = None, partial: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        if cause is not None:
            self.cause = cause
        self.status = status
        self.server = server
        if partial is not None:
            self.partial = partial

    def redacted(self, secret: str) -> ProviderError:
        """A copy of this error with ``secret`` replaced by ``<redacted>`` everywhere."""
        server = None if self.server is None else {
            k: None if v is None else v.replace(secret, "<redacted>") for k, v in self.server.items()}
        copy = type(self)(str(self).replace(secret, "<redacted>"), cause=self.cause, status=self.status,
                          server=server, partial=self.partial)
        copy.exchange = self.exchange  # written to cassettes only through their secret redaction
        return copy


class ProviderTimeout(ProviderError):
    cause = "timeout"


class ProviderRateLimited(ProviderError):
    cause = "rate_limited"


class ProviderAuthError(ProviderError):
    cause = "auth"


class ProviderResponseInvalid(ProviderError):
    cause = "invalid_response"


class CassetteError(LabError):
    """A cassette is missing, malformed, or refused by the safe writer."""


class CassetteMiss(CassetteError):
    """Replay divergence: the request differs from the recording.

    Attributes:
        call_index: zero-based index of the provider call.
        field: first differing field path, e.g. ``messages[3].content``.
        recorded: short excerpt of the recorded value (or None).
        actual: short excerpt of the actual value (or None).
    """

    def __init__(self, message: str, *, call_index: int, field: str,
                 recorded: str | None = None, actual: str | None = None) -> None:
        super().__init__(message)
        self.call_index = call_index
        self.field = field
        self.recorded = recorded
        self.actual = actual


class RecordVersionError(LabError):
    """A record's schemaVersion is newer than this lab can read."""
