"""Content matching: queues per fingerprint in recorded order; divergences name the nearest recording's field."""

from __future__ import annotations

from typing import Any

import pytest

from lab.errors import CassetteMiss
from lab.replay.matching import Difference, Matcher, Recording, ReplayDivergence, first_difference


def chat(*contents: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": c} for c in contents], **extra}


def tool(name: str, description: str = "d") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object"}}}


def recordings(*requests: dict[str, Any]) -> list[Recording]:
    return [Recording(i, "chat", r, {"type": "json", "status": 200, "body": {"n": i}})
            for i, r in enumerate(requests)]


def test_identical_requests_are_served_in_recorded_order() -> None:
    matcher = Matcher(recordings(chat("a"), chat("a")))

    assert [matcher.take("chat", chat("a")).index for _ in range(2)] == [0, 1]
    assert matcher.unused == []


def test_requests_are_matched_by_content_not_position() -> None:
    matcher = Matcher(recordings(chat("title?"), chat("task")))

    assert matcher.take("chat", chat("task")).index == 1
    assert matcher.take("chat", chat("title?")).index == 0


def test_the_api_is_part_of_the_match() -> None:
    matcher = Matcher(recordings(chat("a")))

    with pytest.raises(ReplayDivergence):
        matcher.take("responses", chat("a"))


def test_a_miss_names_the_field_of_the_nearest_unused_recording() -> None:
    matcher = Matcher(recordings(chat("sys", "task", "out 1"), chat("sys", "task", "out 1", "more", "out 2")),
                      source="smoke/fix-bug")

    with pytest.raises(ReplayDivergence) as info:
        matcher.take("chat", chat("sys", "task", "out X"))

    error = info.value
    assert isinstance(error, CassetteMiss)
    assert (error.kind, error.recording_index, error.field) == ("mismatch", 0, "messages[2].content")
    assert (error.recorded, error.actual) == ("out 1", "out X")
    assert str(error).startswith("smoke/fix-bug: call 0: request differs from recorded call 0 at "
                                 "messages[2].content")


def test_the_nearest_recording_shares_the_longest_conversation_prefix() -> None:
    matcher = Matcher(recordings(chat("sys", "other"), chat("sys", "task", "a", "b")))

    with pytest.raises(ReplayDivergence) as info:
        matcher.take("chat", chat("sys", "task", "a", "c"))

    assert (info.value.recording_index, info.value.field) == (1, "messages[3].content")


def test_used_recordings_are_not_candidates() -> None:
    matcher = Matcher(recordings(chat("a"), chat("b")))
    matcher.take("chat", chat("a"))

    with pytest.raises(ReplayDivergence) as info:
        matcher.take("chat", chat("a"))

    assert (info.value.recording_index, info.value.field) == (1, "messages[0].content")


def test_a_call_after_every_recording_was_used_is_an_extra_call() -> None:
    matcher = Matcher(recordings(chat("a")))
    matcher.take("chat", chat("a"))

    with pytest.raises(ReplayDivergence, match="call 1: an extra chat call") as info:
        matcher.take("chat", chat("a"))

    assert (info.value.kind, info.value.field, info.value.call_index) == ("extra_call", "(extra call)", 1)


def test_finish_names_the_first_recording_never_requested() -> None:
    matcher = Matcher(recordings(chat("a"), chat("b"), chat("c")))
    matcher.take("chat", chat("b"))

    with pytest.raises(ReplayDivergence, match=r"recorded call 0 was never made \(2 of 3 recorded calls unused"):
        matcher.finish()


def test_finish_passes_when_everything_was_served() -> None:
    matcher = Matcher(recordings(chat("a")))
    matcher.take("chat", chat("a"))

    matcher.finish()


@pytest.mark.parametrize(("recorded", "actual", "path"), [
    ({"tools": [tool("read"), tool("edit", "old")]}, {"tools": [tool("read"), tool("edit", "new")]},
     "tools[edit].description"),
    ({"tools": [tool("read"), tool("edit")]}, {"tools": [tool("read")]}, "tools[edit]"),
    ({"tools": [tool("read")]}, {"tools": [tool("read"), tool("grep")]}, "tools[grep]"),
    ({"tools": [tool("read"), tool("edit")]}, {"tools": [tool("edit"), tool("read")]}, "tools"),
    ({"tools": [{"type": "function", "name": "edit", "strict": True}]},
     {"tools": [{"type": "function", "name": "edit", "strict": False}]}, "tools[edit].strict"),
    ({"tools": [tool("a"), tool("a")]}, {"tools": [tool("a"), tool("b")]}, "tools[1].function.name"),
    ({"input": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}] * 3},
     {"input": [{"role": "user", "content": [{"type": "input_text", "text": "x"}]}] * 2
      + [{"role": "user", "content": [{"type": "input_text", "text": "y"}]}]}, "input[2].content[0].text"),
    ({"metadata": {"x-y": 1}}, {"metadata": {"x-y": 2}}, 'metadata["x-y"]'),
    ({"": 1}, {"": 2}, '[""]'),
    ({"a": 1}, [1], "<body>"),
    ("a", "b", "<body>"),
    ({"n": True}, {"n": 1}, "n"),
    ({"messages": []}, {"messages": [{"role": "user"}]}, "messages[0]"),
])
def test_first_difference_paths(recorded: Any, actual: Any, path: str) -> None:
    difference = first_difference(recorded, actual)

    assert difference is not None and difference.path == path


def test_equal_values_have_no_difference_and_integral_floats_equal_ints() -> None:
    assert first_difference({"a": [1.0, {"b": 2}]}, {"a": [1, {"b": 2.0}]}) is None


def test_long_strings_are_excerpted_around_the_difference() -> None:
    recorded, actual = "x" * 100 + "recorded tail" + "y" * 100, "x" * 100 + "actual tail" + "y" * 100

    assert first_difference({"s": recorded}, {"s": actual}) == Difference(
        "s", "…" + "x" * 40 + "recorded tail" + "y" * 27 + "…", "…" + "x" * 40 + "actual tail" + "y" * 29 + "…")


def test_a_missing_key_has_no_excerpt_on_that_side() -> None:
    assert first_difference({"a": 1}, {"a": 1, "temperature": 0.5}) == Difference("temperature", None, "0.5")
