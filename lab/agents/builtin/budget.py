"""Run budgets (SPEC H4): turns, wall time, main-loop tokens, tool calls.

``maxTurns`` and ``maxWallMs`` are always set; ``maxTokens`` and
``maxToolCalls`` are optional. A budget is *exceeded* when the agent would
spend more than it: one more model call after ``maxTurns`` calls, one more
tool call after ``maxToolCalls``, another turn once ``maxTokens`` were used
(so the last response may overshoot it), or any action once ``maxWallMs``
elapsed. Wall time also bounds each model call and command while it runs:
callers pass ``remaining_s()`` as their timeout.

Tokens are counted only when the provider reports them. After the first turn
without usage, ``maxTokens`` is no longer enforced (a figure that is not
known is never guessed) and the caller records one ``usage_unreported``
incident.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from lab.providers.base import Usage

BudgetName = Literal["maxTurns", "maxWallMs", "maxTokens", "maxToolCalls"]


class UsageTally:
    """Sums reported usage over calls; knows how many calls reported it.

    Attributes:
        calls: calls added.
        reported: calls whose input and output tokens were both reported.
        cached_reported: calls that also reported cached input tokens.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.reported = 0
        self.cached_reported = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_input_tokens = 0
        # cache writes and provider cost: summed over the calls that reported them
        self.cache_write_reported = 0
        self.cache_write_tokens = 0
        self.cost_reported = 0
        self.provider_cost_usd = 0.0

    def add(self, usage: Usage | None) -> bool:
        """Add one call's usage; returns False when that call reported none."""
        self.calls += 1
        if usage is None or usage.input_tokens is None or usage.output_tokens is None:
            return False
        self.reported += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        if usage.cached_input_tokens is not None:
            self.cached_reported += 1
            self.cached_input_tokens += usage.cached_input_tokens
        if usage.cache_write_tokens is not None:
            self.cache_write_reported += 1
            self.cache_write_tokens += usage.cache_write_tokens
        if usage.provider_cost_usd is not None:
            self.cost_reported += 1
            self.provider_cost_usd += usage.provider_cost_usd
        return True

    def total(self) -> Usage | None:
        """The sum, or None when no call was made or any call lacked usage.

        Cached input, cache write tokens and provider cost are each None
        unless every call reported them (absent is not zero).
        """
        if self.calls == 0 or self.reported < self.calls:
            return None
        cached = self.cached_input_tokens if self.cached_reported == self.calls else None
        writes = self.cache_write_tokens if self.cache_write_reported == self.calls else None
        cost = round(self.provider_cost_usd, 12) if self.cost_reported == self.calls else None
        return Usage(self.input_tokens, self.output_tokens, cached, writes, cost)


class Budget:
    """Counts what a run spends and says which budget, if any, is used up.

    Args:
        max_turns: model calls allowed (>= 1).
        max_wall_ms: wall time allowed, in milliseconds (>= 1).
        max_tokens: main-loop input+output tokens allowed, or None.
        max_tool_calls: tool calls allowed, or None.
        clock: monotonic seconds; injected so tests control time.

    Raises:
        ValueError: a limit below 1 (names it).
    """

    def __init__(self, max_turns: int, max_wall_ms: int, max_tokens: int | None = None,
                 max_tool_calls: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        for name, value in (("maxTurns", max_turns), ("maxWallMs", max_wall_ms),
                            ("maxTokens", max_tokens), ("maxToolCalls", max_tool_calls)):
            if value is not None and value < 1:
                raise ValueError(f"budget.{name}: expected >= 1, got {value}")
        self.max_turns = max_turns
        self.max_wall_ms = max_wall_ms
        self.max_tokens = max_tokens
        self.max_tool_calls = max_tool_calls
        self.clock = clock
        self.turns = 0
        self.tool_calls = 0
        self.usage = UsageTally()
        self._started_at: float | None = None

    def start(self) -> None:
        """Start the wall clock (idempotent; the first call wins)."""
        if self._started_at is None:
            self._started_at = self.clock()

    def elapsed_ms(self) -> int:
        """Milliseconds since ``start()`` (0 before it)."""
        if self._started_at is None:
            return 0
        return int((self.clock() - self._started_at) * 1000)

    def remaining_s(self) -> float:
        """Seconds of wall budget left (>= 0): the timeout for a model call or command."""
        if self._started_at is None:
            return self.max_wall_ms / 1000
        return max(0.0, self._started_at + self.max_wall_ms / 1000 - self.clock())

    def add_turn(self, usage: Usage | None) -> bool:
        """Count one main model call and its usage.

        Returns:
            True when this is the first call of the run without usage: the
            caller records the one ``usage_unreported`` incident.
        """
        self.turns += 1
        before = self.usage.calls - self.usage.reported
        reported = self.usage.add(usage)
        return not reported and before == 0

    def add_tool_call(self) -> None:
        self.tool_calls += 1

    @property
    def tokens_enforced(self) -> bool:
        """True while every main call so far reported usage."""
        return self.usage.reported == self.usage.calls

    @property
    def tokens(self) -> int:
        """Main-loop input + output tokens reported so far."""
        return self.usage.input_tokens + self.usage.output_tokens

    def exceeded(self, *, before: Literal["turn", "tool_call"] = "turn") -> BudgetName | None:
        """The budget the next action would exceed, or None.

        Args:
            before: the next action: ``turn`` (a model call: checks wall time,
                tokens, turns) or ``tool_call`` (checks wall time, tool calls).
        """
        if self._started_at is not None and self.remaining_s() <= 0:
            return "maxWallMs"
        if before == "tool_call":
            if self.max_tool_calls is not None and self.tool_calls >= self.max_tool_calls:
                return "maxToolCalls"
            return None
        if (self.max_tokens is not None and self.tokens_enforced
                and self.tokens >= self.max_tokens):
            return "maxTokens"
        if self.turns >= self.max_turns:
            return "maxTurns"
        return None

    def describe(self, name: BudgetName) -> str:
        """A one-line account of a budget, e.g. ``maxTurns: 12 of 12 turns used``."""
        used, limit, unit = {
            "maxTurns": (self.turns, self.max_turns, "turns"),
            "maxWallMs": (self.elapsed_ms(), self.max_wall_ms, "ms"),
            "maxTokens": (self.tokens, self.max_tokens, "tokens"),
            "maxToolCalls": (self.tool_calls, self.max_tool_calls, "tool calls"),
        }[name]
        return f"{name}: {used} of {limit} {unit} used"
