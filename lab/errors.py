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
            ``auth``, ``rate_limited``, ``server``, ``invalid_response``).
    """

    cause = "provider"

    def __init__(self, message: str, *, cause: str | None = None) -> None:
        super().__init__(message)
        if cause is not None:
            self.cause = cause


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
