"""Property: any two requests that differ give a non-empty divergence path; equal ones give none."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lab.replay.matching import Matcher, Recording, ReplayDivergence, first_difference, same
from lab.replay.normalise import canonical

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False) \
    | st.sampled_from(["", "a", "b", "edit_file", "x-y"])
names = st.sampled_from(["", "a", "b", "name", "function", "type", "tools", "messages", "x-y", "0"])
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(names, inner, max_size=4), max_leaves=20)
tool_items = st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "b", "c"]), "description": st.sampled_from(["x", "y"])})})
bodies = st.fixed_dictionaries({"model": st.sampled_from(["m", "n"])}, optional={
    "messages": st.lists(json_values, max_size=4), "tools": st.lists(tool_items, max_size=3),
    "temperature": scalars})


@given(json_values, json_values)
def test_differing_values_always_have_a_non_empty_path(recorded: Any, actual: Any) -> None:
    difference = first_difference(recorded, actual)

    if same(canonical(recorded), canonical(actual)):
        assert difference is None
    else:
        assert difference is not None and difference.path != ""


@given(json_values)
def test_a_value_never_differs_from_itself(value: Any) -> None:
    assert first_difference(value, value) is None


@given(bodies, bodies)
def test_a_replay_miss_always_names_a_field(recorded: dict[str, Any], actual: dict[str, Any]) -> None:
    matcher = Matcher([Recording(0, "chat", canonical(recorded), {"type": "json", "body": {}})])

    try:
        matcher.take("chat", canonical(actual))
    except ReplayDivergence as error:
        assert error.field != "" and error.kind == "mismatch"
    else:
        assert same(canonical(recorded), canonical(actual))
