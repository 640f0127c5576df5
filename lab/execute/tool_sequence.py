"""The ``tool-sequence`` verifier's rules over a run's tool calls (SPEC V6).

Rules: ``before`` (no ``then`` call before the first ``first``), ``never``,
``max-calls`` and ``no-repeat-failure`` (a failed call is not repeated with
the same arguments). Each returns an :data:`lab.execute.verifier_spec.Outcome`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from lab.execute.verifier_spec import Outcome, SpecInvalid, spec_field


def _tool_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == "tool_call"]


def _seq(event: Mapping[str, Any]) -> Any:
    return event.get("seq")


def _rule_before(spec: Mapping[str, Any], calls: list[dict[str, Any]]) -> Outcome:
    first, then = spec_field(spec, "first", str), spec_field(spec, "then", str)
    for call in calls:
        if call.get("tool") == first:
            break
        if call.get("tool") == then:
            return "fail", f"{then} called (seq {_seq(call)}) before any {first}", \
                {"violationSeq": _seq(call)}
    return "pass", f"no {then} call before the first {first}", {}


def _rule_never(spec: Mapping[str, Any], calls: list[dict[str, Any]]) -> Outcome:
    tool = spec_field(spec, "tool", str)
    hits = [c for c in calls if c.get("tool") == tool]
    if hits:
        return "fail", f"{tool} was called {len(hits)} time(s) (first at seq {_seq(hits[0])})", \
            {"calls": len(hits), "violationSeq": _seq(hits[0])}
    return "pass", f"{tool} was never called", {"calls": 0}


def _rule_max_calls(spec: Mapping[str, Any], calls: list[dict[str, Any]]) -> Outcome:
    tool, limit = spec_field(spec, "tool", str), spec_field(spec, "max", int)
    if limit < 0:
        raise SpecInvalid(f"field 'max': expected >= 0, got {limit}")
    count = sum(1 for c in calls if c.get("tool") == tool)
    diagnostics = {"calls": count, "max": limit}
    if count > limit:
        return "fail", f"{tool} called {count} times, at most {limit} allowed", diagnostics
    return "pass", f"{tool} called {count} time(s), at most {limit} allowed", diagnostics


def _rule_no_repeat_failure(spec: Mapping[str, Any], calls: list[dict[str, Any]]) -> Outcome:
    tool = spec_field(spec, "tool", str)
    failed: set[str] = set()
    for call in calls:
        if call.get("tool") != tool:
            continue
        key = json.dumps(call.get("arguments"), sort_keys=True, default=str)
        if key in failed:
            return "fail", (f"{tool} repeated (seq {_seq(call)}) with the same arguments "
                            "after a failed call"), {"violationSeq": _seq(call)}
        if call.get("outcome") in ("error", "denied"):
            failed.add(key)
    return "pass", f"no failed {tool} call was repeated with the same arguments", {}


_RULES: dict[str, Callable[[Mapping[str, Any], list[dict[str, Any]]], Outcome]] = {
    "before": _rule_before,
    "never": _rule_never,
    "max-calls": _rule_max_calls,
    "no-repeat-failure": _rule_no_repeat_failure,
}


def check_tool_sequence(spec: Mapping[str, Any], events: list[dict[str, Any]]) -> Outcome:
    """The ``tool-sequence`` verifier over a run's events: ``spec["rule"]`` applied to its tool calls.

    Raises:
        SpecInvalid: an unknown rule, or a rule's field missing or of the wrong type.
    """
    rule = spec_field(spec, "rule", str)
    if rule not in _RULES:
        raise SpecInvalid(f"field 'rule': unknown rule {rule!r}; known: {', '.join(_RULES)}")
    return _RULES[rule](spec, _tool_calls(events))
