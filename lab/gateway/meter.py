"""What one run spends through the gateway, against its budget (SPEC H4, G1).

Same meaning as the built-in agent's budget: a budget is *exceeded* when the
agent would spend more than it — one more model call after ``maxTurns``
calls, another call once ``maxTokens`` input+output tokens were reported (the
last answer may overshoot), or anything once ``maxWallMs`` elapsed (the
gateway also fires at the deadline on its own, so an agent that hangs or
never calls is ended too). Exceeding is sticky: every later model call is
refused.

Tokens count only what the provider reported. After the first successful
call without usage, ``maxTokens`` is no longer enforced (a figure that is not
known is never guessed) and :attr:`GatewayStats.usage` is None. Zeros that
cannot be measurements (0 input tokens; 0 output tokens beside output) count
as not reported (``lab.providers.usage.implausible_zero``). So does a call
*abandoned* before the lab saw its usage: a stream the agent hung up on
before its end (providers report usage in a stream's last events), or a call
still in flight when the run ended.

Besides spending, the meter keeps what the run's report needs to tell an
outage or a setup error from the agent's own failure: upstream faults that
persisted past the gateway's retries (cause and message, by call), retries
made, and requests the gateway could not serve (method, path, status).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from lab.providers.answer import Answer, Fault
from lab.providers.base import Usage

MAX_KEPT = 20
"""Faults and unserved requests kept by name per run (all are counted)."""

BudgetName = Literal["maxTurns", "maxTokens", "maxWallMs"]


@dataclass(frozen=True)
class GatewayBudget:
    """Limits for one run; None means unlimited.

    Attributes:
        max_turns: model calls allowed (>= 1).
        max_tokens: reported input + output tokens allowed (>= 1).
        max_wall_ms: milliseconds from :meth:`Meter.start` (>= 1).

    Raises:
        ValueError: a limit below 1 (names it).
    """

    max_turns: int | None = None
    max_tokens: int | None = None
    max_wall_ms: int | None = None

    def __post_init__(self) -> None:
        for name, value in (("maxTurns", self.max_turns), ("maxTokens", self.max_tokens),
                            ("maxWallMs", self.max_wall_ms)):
            if value is not None and value < 1:
                raise ValueError(f"budget.{name}: expected >= 1, got {value}")


@dataclass(frozen=True)
class GatewayStats:
    """A snapshot of one run's spending.

    Attributes:
        calls: model calls admitted (forwarded to the upstream or replayed).
        refused: model calls the gateway answered with an error itself
            (budget exceeded, replay divergence, malformed body).
        upstream_errors: admitted calls whose upstream fault persisted past the retries.
        calls_with_usage: successful calls whose answer reported usage.
        calls_without_usage: successful calls whose answer reported none, and
            abandoned calls (their usage was never seen).
        input_tokens: sum over the calls that reported usage.
        output_tokens: sum over the calls that reported usage.
        cached_input_tokens: sum, or None unless every reporting call gave it.
        exceeded: the budget exceeded, or None.
        exceeded_detail: e.g. ``maxTurns: 3 of 3 calls used``, or None.
        elapsed_ms: wall time since the meter started.
        cached_calls: reporting calls that gave a cached-input figure.
        zero_usage_calls: answers whose usage was zeros (read as not reported).
        abandoned_calls: calls left before their usage arrived (the agent hung
            up mid-stream, or the run ended with the call in flight); counted
            in ``calls_without_usage`` too.
        empty_answers: complete answers with no text and no tool call.
        retries: upstream attempts made again after a transient fault.
        faults: the faults that persisted past retries, in order (at most
            ``MAX_KEPT``): ``{"callIndex", "attempts", "cause", "message", "status", "server"}``.
        unserved: requests the gateway could not serve (unknown path, wrong
            token, undecodable body), ``"POST /v1/v1/chat/completions (404)"``,
            distinct, at most ``MAX_KEPT``.
        unserved_count: all such requests.
    """

    calls: int
    refused: int
    upstream_errors: int
    calls_with_usage: int
    calls_without_usage: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int | None
    exceeded: BudgetName | None
    exceeded_detail: str | None
    elapsed_ms: int
    cached_calls: int = 0
    zero_usage_calls: int = 0
    empty_answers: int = 0
    retries: int = 0
    faults: tuple[dict[str, Any], ...] = ()
    unserved: tuple[str, ...] = ()
    unserved_count: int = 0
    abandoned_calls: int = 0

    @property
    def cached_partial(self) -> bool:
        """Some reporting calls gave a cached-input figure and some did not (as the built-in agent's
        ``cachedPartial``)."""
        return 0 < self.cached_calls < self.calls_with_usage

    @property
    def usage(self) -> Usage | None:
        """Total usage, or None when no call succeeded or some call reported none."""
        if self.calls_with_usage == 0 or self.calls_without_usage:
            return None
        return Usage(self.input_tokens, self.output_tokens, self.cached_input_tokens)

    def to_json(self) -> dict[str, Any]:
        """camelCase JSON (the shape a run record embeds)."""
        usage = self.usage
        return {"calls": self.calls, "refused": self.refused, "upstreamErrors": self.upstream_errors,
                "callsWithUsage": self.calls_with_usage, "callsWithoutUsage": self.calls_without_usage,
                "usage": usage.to_json() if usage else None, "exceeded": self.exceeded,
                "exceededDetail": self.exceeded_detail, "elapsedMs": self.elapsed_ms,
                "zeroUsageCalls": self.zero_usage_calls, "emptyAnswers": self.empty_answers,
                "retries": self.retries, "faults": list(self.faults), "unserved": list(self.unserved),
                "unservedCount": self.unserved_count, "abandonedCalls": self.abandoned_calls}


class Meter:
    """Counts calls and reported tokens; decides when a budget is exceeded. Thread-safe.

    Args:
        budget: the run's limits.
        clock: monotonic seconds; injected so tests control time.
    """

    def __init__(self, budget: GatewayBudget, clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.clock = clock
        self._lock = threading.Lock()
        self._started_at: float | None = None
        self._calls = self._refused = self._upstream_errors = 0
        self._with_usage = self._without_usage = self._cached_reported = 0
        self._input = self._output = self._cached = 0
        self._exceeded: BudgetName | None = None
        self._detail: str | None = None
        self._zero = self._empty = self._retries = self._unserved_count = self._abandoned = 0
        self._faults: list[dict[str, Any]] = []
        self._unserved: list[str] = []

    def start(self) -> None:
        """Start the wall clock (the first call wins)."""
        with self._lock:
            if self._started_at is None:
                self._started_at = self.clock()

    def admit(self) -> BudgetName | None:
        """Count one model call, or name the budget it would exceed (then it is not counted)."""
        with self._lock:
            name = self._exceeded or self._check()
            if name is not None:
                self._refused += 1
                self._mark(name)
                return name
            self._calls += 1
            return None

    def expire(self) -> bool:
        """Mark ``maxWallMs`` exceeded (the deadline timer fired); False when already exceeded."""
        with self._lock:
            if self._exceeded is not None:
                return False
            self._mark("maxWallMs")
            return True

    def refuse(self) -> None:
        """Count a model call refused for another reason (divergence, malformed body)."""
        with self._lock:
            self._refused += 1

    def retried(self) -> None:
        """Count one upstream attempt made again after a transient fault."""
        with self._lock:
            self._retries += 1

    def fault(self, call_index: int, fault: Fault, attempts: int) -> None:
        """Count an admitted call whose upstream fault persisted past the retries."""
        with self._lock:
            self._upstream_errors += 1
            if len(self._faults) < MAX_KEPT:
                self._faults.append({"callIndex": call_index, "attempts": attempts, **fault.to_json()})

    def unserved(self, what: str) -> None:
        """Count a request the gateway could not serve (``"POST /path (404)"``)."""
        with self._lock:
            self._unserved_count += 1
            if what not in self._unserved and len(self._unserved) < MAX_KEPT:
                self._unserved.append(what)

    def add_answer(self, answer: Answer) -> None:
        """Add one successful call's answer as the lab reads it (``lab.providers.answer``)."""
        self.add_usage(answer.usage)
        with self._lock:
            self._zero += answer.zero_usage
            self._empty += answer.empty

    def add_usage(self, usage: Usage | None) -> None:
        """Add one successful call's reported usage (None: it reported none)."""
        with self._lock:
            if usage is None or usage.input_tokens is None or usage.output_tokens is None:
                self._without_usage += 1
                return
            self._with_usage += 1
            self._input += usage.input_tokens
            self._output += usage.output_tokens
            if usage.cached_input_tokens is not None:
                self._cached_reported += 1
                self._cached += usage.cached_input_tokens

    def abandon(self) -> None:
        """Count one call left before its usage arrived: a call without usage (never guessed)."""
        with self._lock:
            self._without_usage += 1
            self._abandoned += 1

    def snapshot(self) -> GatewayStats:
        """The counts so far."""
        with self._lock:
            cached = self._cached if self._with_usage and self._cached_reported == self._with_usage else None
            return GatewayStats(self._calls, self._refused, self._upstream_errors, self._with_usage,
                                self._without_usage, self._input, self._output, cached, self._exceeded,
                                self._detail, self._elapsed_ms(), self._cached_reported, self._zero,
                                self._empty, self._retries, tuple(self._faults), tuple(self._unserved),
                                self._unserved_count, self._abandoned)

    def _check(self) -> BudgetName | None:
        b = self.budget
        if b.max_wall_ms is not None and self._elapsed_ms() >= b.max_wall_ms:
            return "maxWallMs"
        if (b.max_tokens is not None and self._without_usage == 0
                and self._input + self._output >= b.max_tokens):
            return "maxTokens"
        if b.max_turns is not None and self._calls >= b.max_turns:
            return "maxTurns"
        return None

    def _mark(self, name: BudgetName) -> None:
        if self._exceeded is None:
            self._exceeded = name
            used, limit, unit = {
                "maxTurns": (self._calls, self.budget.max_turns, "calls"),
                "maxTokens": (self._input + self._output, self.budget.max_tokens, "tokens"),
                "maxWallMs": (self._elapsed_ms(), self.budget.max_wall_ms, "ms"),
            }[name]
            self._detail = f"{name}: {used} of {limit} {unit} used"

    def _elapsed_ms(self) -> int:
        if self._started_at is None:
            return 0
        return int((self.clock() - self._started_at) * 1000)
