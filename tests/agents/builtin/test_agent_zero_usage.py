"""The built-in agent reads usage of 0 input / 0 output tokens on a call with a prompt and output as not
reported: an incident that says so, no usage total (so no cost estimate of $0.00)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.agents.builtin.budget import Budget
from tests.agents.builtin.agent_helpers import incidents, run

FIXTURE = Path(__file__).resolve().parents[2] / "providers" / "fixtures" / "zero_usage.json"


class ZeroUsageProxy:
    """A provider answering every call with the recorded answer of a proxy that reports zeros
    (tests/providers/fixtures/zero_usage.json): a stand-in Provider, not a mock of one."""

    name = "zero-usage-proxy"

    def send(self, request: dict[str, Any], *, purpose: str = "main", timeout_s: float | None = None) -> dict[str, Any]:
        import json

        return {"type": "json", "status": 200, "body": json.loads(FIXTURE.read_text())}


def test_zeros_are_not_reported_usage_with_an_incident(workspace: Path) -> None:
    result = run(workspace, ZeroUsageProxy(), budget=Budget(max_turns=3, max_wall_ms=60_000, max_tokens=100))

    assert (result.stop_reason, result.final_message) == ("answered", "Fixed it.")
    assert (result.usage, result.usage_turns_reported) == (None, 0)
    [incident] = incidents(result, "usage_unreported")
    assert "reported 0 tokens for a call that carried a prompt and produced output" in incident["detail"]
