"""lab.agents.builtin's public surface: exports and the result record."""

from __future__ import annotations

import json
from pathlib import Path

from agent_helpers import answer, call, run, scripted

import lab.agents.builtin


def test_all_is_sorted_and_complete() -> None:
    assert lab.agents.builtin.__all__ == sorted(lab.agents.builtin.__all__, key=lambda n: (not n.isupper(), n))
    for name in lab.agents.builtin.__all__:
        assert hasattr(lab.agents.builtin, name), name


def test_result_to_json_uses_camel_case_and_is_serialisable(workspace: Path) -> None:
    result = run(workspace, scripted(call("list_dir"), answer("DONE: listed")))
    data = result.to_json()
    assert json.loads(json.dumps(data)) == data
    assert {k: data[k] for k in ("stopReason", "claim", "budgetExceeded", "turns", "toolCalls",
                                 "usageTurnsReported", "compactions", "error")} == {
        "stopReason": "answered", "claim": "success", "budgetExceeded": None, "turns": 2,
        "toolCalls": 1, "usageTurnsReported": 2, "compactions": 0, "error": None}
    assert set(data["usage"]) == {"inputTokens", "outputTokens", "cachedInputTokens"}
