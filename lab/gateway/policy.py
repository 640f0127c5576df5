"""How the gateway retries a provider fault, and why it halts a run (``lab.gateway.server``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lab.errors import CassetteMiss
from lab.providers.answer import Fault

HaltReason = Literal["maxTurns", "maxTokens", "maxWallMs", "replay_divergence", "upstream_fault"]


@dataclass(frozen=True)
class RetryPolicy:
    """How the gateway retries a transient upstream fault, as the built-in provider does.

    Attributes:
        max_retries: attempts after the first (``provider.max_retries``).
        wait: wait between attempts (``Retry-After``, else backoff:
            ``lab.providers.faults.backoff_s``); False in replay, where the
            recorded attempts are answered at once.
    """

    max_retries: int = 2
    wait: bool = True


@dataclass(frozen=True)
class Halt:
    """Why the gateway wants the agent ended.

    Attributes:
        reason: the budget exceeded, ``replay_divergence``, or ``upstream_fault``
            (a provider fault persisted past the retries: the run is an error).
        detail: one line, e.g. ``maxTurns: 3 of 3 calls used`` or the divergence message.
        divergence: the divergence, when that is the reason.
        fault: the fault, when that is the reason.
    """

    reason: HaltReason
    detail: str
    divergence: CassetteMiss | None = None
    fault: Fault | None = None


