"""lab.agents.builtin.budget (SPEC H4): each budget stops a real run with its name."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from agent_helpers import PY, Recording, answer, call, calls, incidents, of_type, run, scripted

from lab.agents.builtin.budget import Budget, UsageTally
from lab.errors import ProviderTimeout
from lab.providers.base import Usage


class FakeClock:
    """Monotonic seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_remaining_and_wall_exceeded_follow_the_clock() -> None:
    clock = FakeClock()
    budget = Budget(max_turns=5, max_wall_ms=2000, clock=clock)
    budget.start()
    clock.now += 1.5
    assert budget.remaining_s() == pytest.approx(0.5)
    assert budget.exceeded() is None
    clock.now += 0.5
    assert (budget.remaining_s(), budget.exceeded(), budget.exceeded(before="tool_call")) == (
        0.0, "maxWallMs", "maxWallMs")
    assert budget.describe("maxWallMs") == "maxWallMs: 2000 of 2000 ms used"


def test_turns_and_tool_calls_are_exceeded_only_by_one_more() -> None:
    budget = Budget(max_turns=1, max_wall_ms=1000, max_tool_calls=1, clock=FakeClock())
    assert budget.exceeded() is None
    budget.add_turn(None)
    budget.add_tool_call()
    assert budget.exceeded() == "maxTurns"
    assert budget.exceeded(before="tool_call") == "maxToolCalls"


def test_tokens_stop_being_enforced_after_a_turn_without_usage() -> None:
    budget = Budget(max_turns=9, max_wall_ms=1000, max_tokens=10, clock=FakeClock())
    assert budget.add_turn(Usage(8, 4)) is False
    assert budget.exceeded() == "maxTokens"
    assert budget.add_turn(None) is True       # first unreported turn: record the incident
    assert budget.add_turn(Usage(1, 1)) is False
    assert budget.add_turn(None) is False      # only once per run
    assert budget.exceeded() is None and not budget.tokens_enforced


@pytest.mark.parametrize("field", ["max_turns", "max_wall_ms", "max_tokens", "max_tool_calls"])
def test_limits_below_one_are_refused(field: str) -> None:
    limits = {"max_turns": 1, "max_wall_ms": 1, field: 0}
    with pytest.raises(ValueError, match="expected >= 1, got 0"):
        Budget(**limits)


def test_usage_tally_is_unknown_unless_every_call_reported() -> None:
    tally = UsageTally()
    assert tally.total() is None
    tally.add(Usage(10, 2, 4))
    tally.add(Usage(5, 1, None))
    assert tally.total() == Usage(15, 3, None)
    tally.add(Usage(None, 7))
    assert (tally.total(), tally.reported, tally.cached_reported) == (None, 2, 1)


def reads(n: int) -> list[dict[str, object]]:
    return [call("read_file", path="calc.py") for _ in range(n)]


def test_max_turns_stops_the_run(workspace: Path) -> None:
    result = run(workspace, scripted(*reads(5), answer("DONE")),
                 budget=Budget(max_turns=2, max_wall_ms=60_000))
    assert (result.stop_reason, result.budget_exceeded, result.turns, result.claim) == (
        "budget_exceeded", "maxTurns", 2, "none")
    assert incidents(result, "budget_exceeded")[0]["detail"] == "maxTurns: 2 of 2 turns used"


def test_answer_on_the_last_allowed_turn_is_not_exceeded(workspace: Path) -> None:
    result = run(workspace, scripted(*reads(1), answer("DONE")),
                 budget=Budget(max_turns=2, max_wall_ms=60_000))
    assert (result.stop_reason, result.budget_exceeded) == ("answered", None)


def test_max_tool_calls_stops_inside_a_turn(workspace: Path) -> None:
    three = calls(("list_dir", {}), ("list_dir", {}), ("list_dir", {}))
    result = run(workspace, scripted(three, answer("DONE")),
                 budget=Budget(max_turns=9, max_wall_ms=60_000, max_tool_calls=2))
    assert (result.stop_reason, result.budget_exceeded, result.tool_calls) == (
        "budget_exceeded", "maxToolCalls", 2)
    assert len(of_type(result, "tool_call")) == 2


def test_max_tokens_stops_after_the_response_that_passes_it(workspace: Path) -> None:
    result = run(workspace, scripted(*reads(3), answer("DONE")),
                 budget=Budget(max_turns=9, max_wall_ms=60_000, max_tokens=100))
    assert (result.stop_reason, result.budget_exceeded, result.turns) == (
        "budget_exceeded", "maxTokens", 1)
    assert result.usage is not None
    assert result.usage.input_tokens + result.usage.output_tokens >= 100  # overshoot allowed
    assert len(of_type(result, "tool_call")) == 1  # the last response's calls still ran


def test_usage_unreported_is_one_incident_and_disables_max_tokens(workspace: Path) -> None:
    quiet = {"toolCalls": [{"name": "list_dir", "arguments": {}}], "reportUsage": False}
    result = run(workspace, scripted(call("list_dir"), quiet, quiet,
                                     {"content": "DONE", "reportUsage": False}),
                 budget=Budget(max_turns=9, max_wall_ms=60_000, max_tokens=10_000_000))
    assert (result.stop_reason, result.claim) == ("answered", "success")
    found = incidents(result, "usage_unreported")
    assert len(found) == 1 and found[0]["detail"].startswith("turn 2:")
    assert (result.usage, result.usage_turns_reported) == (None, 1)


def test_unreported_usage_never_trips_max_tokens(workspace: Path) -> None:
    quiet = {"toolCalls": [{"name": "list_dir", "arguments": {}}], "reportUsage": False}
    result = run(workspace, scripted(quiet, quiet, {"content": "DONE", "reportUsage": False}),
                 budget=Budget(max_turns=9, max_wall_ms=60_000, max_tokens=1))
    assert (result.stop_reason, result.budget_exceeded) == ("answered", None)


def test_wall_budget_is_checked_between_turns(workspace: Path) -> None:
    clock = FakeClock()

    def advance(n: int, purpose: str) -> None:
        clock.now += 0.6  # every model call takes 600 ms

    provider = Recording(scripted(*reads(5), answer("DONE")), on_send=advance)
    result = run(workspace, provider, clock=clock,
                 budget=Budget(max_turns=9, max_wall_ms=1000, clock=clock))
    assert (result.stop_reason, result.budget_exceeded, result.turns) == (
        "budget_exceeded", "maxWallMs", 2)
    assert [timeout for _, _, timeout in provider.sent] == [pytest.approx(1.0),
                                                             pytest.approx(0.4)]
    assert [e["latencyMs"] for e in of_type(result, "model_call")] == [600, 600]


@pytest.mark.slow
def test_wall_budget_is_enforced_while_a_command_runs(workspace: Path) -> None:
    sleeper = call("run_command", argv=[PY, "-c", "import time; time.sleep(30)"])
    started = time.monotonic()
    result = run(workspace, scripted(sleeper, answer("DONE")),
                 budget=Budget(max_turns=9, max_wall_ms=500))
    elapsed_s = time.monotonic() - started
    assert (result.stop_reason, result.budget_exceeded, result.turns) == (
        "budget_exceeded", "maxWallMs", 1)
    event = of_type(result, "tool_call")[0]
    assert event["outcome"] == "error" and event["error"].startswith("timed out after ")
    assert int(event["error"].split()[3]) <= 500
    assert elapsed_s < 5


class TimingOut:
    """A provider whose call runs for ``seconds`` of the fake clock, then times out."""

    name = "timing-out"

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        self.clock, self.seconds = clock, seconds

    def send(self, request: dict[str, object], *, purpose: str = "main",
             timeout_s: float | None = None) -> dict[str, object]:
        self.clock.now += self.seconds
        raise ProviderTimeout(f"no answer within {timeout_s} s")


def test_model_call_cut_off_by_the_wall_budget_is_budget_exceeded(workspace: Path) -> None:
    clock = FakeClock()
    result = run(workspace, TimingOut(clock, 2.0), clock=clock,
                 budget=Budget(max_turns=9, max_wall_ms=1000, clock=clock))
    assert (result.stop_reason, result.budget_exceeded, result.error) == (
        "budget_exceeded", "maxWallMs", None)


def test_provider_timeout_with_wall_time_left_is_an_infrastructure_error(workspace: Path) -> None:
    clock = FakeClock()
    result = run(workspace, TimingOut(clock, 0.5), clock=clock,
                 budget=Budget(max_turns=9, max_wall_ms=1000, clock=clock))
    assert result.stop_reason == "error"
    assert result.error is not None and result.error["cause"] == "timeout"
