"""lab.agents.builtin.compaction (SPEC H5): checkpoints keep the task verbatim and count apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_helpers import Recording, answer, call, calls, incidents, of_type, run, scripted

from lab.agents.builtin.compaction import CHECKPOINT_PREFIX, context_chars, needs_compaction, split_for_compaction
from lab.agents.builtin.loop import AgentSettings
from lab.providers.base import Usage

TASK = "Keep this exact task statement: change BIG.txt's first line to 'done'.\n  (verbatim!)"


def small_context(enabled: bool = True) -> AgentSettings:
    return AgentSettings(model="m", compaction_enabled=enabled, compaction_threshold=0.5,
                         max_context_chars=6000)


def big_workspace(workspace: Path) -> Path:
    (workspace / "BIG.txt").write_text("".join(f"line {i:04d} {'x' * 60}\n" for i in range(25)))
    return workspace


def assert_valid_pairs(messages: list[dict[str, Any]]) -> None:
    """Every tool message answers a call made by the assistant message before it."""
    open_ids: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            open_ids = {c["id"] for c in message.get("tool_calls") or []}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in open_ids
            open_ids.discard(message["tool_call_id"])


def test_compaction_keeps_the_task_verbatim_and_counts_apart(workspace: Path) -> None:
    provider = Recording(scripted(*[call("read_file", path="BIG.txt") for _ in range(6)],
                                  answer("DONE: read it")))
    result = run(big_workspace(workspace), provider, settings=small_context(), task=TASK)
    assert result.compactions >= 1
    assert len(incidents(result, "compaction")) == result.compactions
    summaries = [e for e in of_type(result, "model_call") if e["purpose"] == "compaction"]
    assert len(summaries) == result.compactions
    assert result.compaction_usage == Usage(sum(e["usage"]["inputTokens"] for e in summaries),
                                            sum(e["usage"]["outputTokens"] for e in summaries))
    mains = [e for e in of_type(result, "model_call") if e["purpose"] == "main"]
    assert result.turns == len(mains) == 7
    assert result.usage == Usage(sum(e["usage"]["inputTokens"] for e in mains),
                                 sum(e["usage"]["outputTokens"] for e in mains), None)
    after = [r for r in provider.requests() if len(r["messages"]) > 2
             and (r["messages"][2]["content"] or "").startswith(CHECKPOINT_PREFIX)]
    assert after, "no main request carried a checkpoint"
    for request in after:
        messages = request["messages"]
        assert messages[0]["role"] == "system" and messages[1] == {"role": "user", "content": TASK}
        assert messages[2]["content"].startswith(CHECKPOINT_PREFIX + "Summary of ")
        assert messages[3]["role"] == "assistant"
        assert_valid_pairs(messages)
        assert context_chars(messages) < 6000
    assert (result.stop_reason, result.claim) == ("answered", "success")


def test_compaction_request_is_separate_and_has_no_tools(workspace: Path) -> None:
    provider = Recording(scripted(*[call("read_file", path="BIG.txt") for _ in range(4)],
                                  answer("DONE")))
    run(big_workspace(workspace), provider, settings=small_context(), task=TASK)
    request = provider.requests("compaction")[0]
    assert "tools" not in request and request["model"] == "m"
    assert TASK in request["messages"][1]["content"]


def test_disabled_compaction_sends_the_whole_conversation(workspace: Path) -> None:
    provider = Recording(scripted(*[call("read_file", path="BIG.txt") for _ in range(4)],
                                  answer("DONE")))
    result = run(big_workspace(workspace), provider, settings=small_context(enabled=False))
    assert result.compactions == 0 and provider.requests("compaction") == []
    assert len(provider.requests()[-1]["messages"]) == 2 + 4 * 2


def msgs(*groups: int) -> list[dict[str, Any]]:
    """system, task, then per group an assistant with ``n`` calls and their results."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "s"},
                                 {"role": "user", "content": "t"}]
    for g, n in enumerate(groups):
        ids = [f"c{g}_{j}" for j in range(n)]
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for i in ids]})
        out += [{"role": "tool", "tool_call_id": i, "content": "r" * 100} for i in ids]
    return out


def test_split_cuts_only_between_call_groups() -> None:
    split = split_for_compaction(msgs(2, 3, 2), keep_chars=250)
    assert split is not None
    older, recent = split
    assert [m["role"] for m in recent] == ["assistant", "tool", "tool"]
    assert len(older) == 3 + 4
    assert_valid_pairs(recent)


def test_split_keeps_at_least_the_last_group_and_needs_something_older() -> None:
    assert split_for_compaction(msgs(3), keep_chars=0) is None
    split = split_for_compaction(msgs(1, 3), keep_chars=0)
    assert split is not None and len(split[1]) == 4


def test_context_chars_counts_content_and_call_arguments() -> None:
    messages = msgs(1)
    assert context_chars(messages) == 1 + 1 + len("f") + len("{}") + 100
    assert needs_compaction(messages, 0.5, 200) and not needs_compaction(messages, 0.5, 300)


def test_compaction_with_several_calls_per_turn_keeps_pairs(workspace: Path) -> None:
    turn = calls(("read_file", {"path": "BIG.txt"}), ("list_dir", {}))
    provider = Recording(scripted(*[turn for _ in range(5)], answer("DONE")))
    result = run(big_workspace(workspace), provider, settings=small_context())
    assert result.compactions >= 1
    for request in provider.requests():
        assert_valid_pairs(request["messages"])
