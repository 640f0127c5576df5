"""suite.json against its JSON Schema, in time linear in the suite (SPEC S2, S4).

jsonschema finds every problem with its field path, at a few milliseconds a
task: 20,000 tasks would take a minute. A large suite (``FAST_FROM`` tasks
and verifiers or more) is therefore first checked by a compiled validator
(fastjsonschema, compiled once per process); only the tasks it rejects, and
the top level when it is at fault, go through jsonschema for the messages.
Both read the same shipped schema, so they accept the same documents.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from lab.suites.text import excerpt, shorten

FAST_FROM = 200
END = "(?![\\s\\S])"
_LOCAL_REF = "#/$defs/"
CONTROL = re.compile("[\x00-\x1f\x7f]")
Problem = tuple[list[Any], str]


def schema_problems(doc: Any, *, fast_from: int = FAST_FROM) -> list[Problem]:
    """Every schema problem of ``doc`` as (field path parts, message); messages quote values as excerpts."""
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list) or _size(tasks) < fast_from:
        return _problems(_validator("suite"), doc, [])
    fast = _fast()
    rejected = _rejected(fast, tasks)
    if not rejected and _passes(fast["top"], doc):
        return []
    # The top level without its tasks (their minItems error dropped: there are tasks), then each rejected task.
    problems = [p for p in _problems(_validator("suite"), {**doc, "tasks": []}, []) if p[0] != ["tasks"]]
    for i in rejected:
        problems += _problems(_validator("task"), tasks[i], ["tasks", i])
    return problems


def _rejected(fast: dict[str, Any], tasks: list[Any]) -> list[int]:
    """Indices of the tasks the compiled validators reject: the task itself, or one of its
    verifiers checked against its own kind's validator."""
    from fastjsonschema import JsonSchemaException

    check_task, kinds = fast["task"], fast["kinds"]
    rejected = []
    for i, task in enumerate(tasks):
        try:
            check_task(task)  # a list of at least one verifier, each unchecked
            for verifier in task["verifiers"]:
                kinds[verifier["kind"]](verifier)
        except (JsonSchemaException, KeyError, TypeError):
            # KeyError, TypeError: a verifier that is no object, or has no known kind; jsonschema says which
            rejected.append(i)
    return rejected


def _size(tasks: list[Any]) -> int:
    return len(tasks) + sum(len(t["verifiers"]) for t in tasks
                            if isinstance(t, dict) and isinstance(t.get("verifiers"), list))


def _problems(validator: Any, doc: Any, prefix: list[Any]) -> list[Problem]:
    return [([*prefix, *err.absolute_path], _message(err)) for err in validator.iter_errors(doc)]


def _message(err: Any) -> str:
    """jsonschema's message, values cut to excerpts; a pattern is shown with a plain ``$``
    (the schema spells "end of text" ``(?![\\s\\S])`` because ``$`` also matches before a final newline)."""
    if err.validator == "pattern" and isinstance(err.instance, str):
        pattern = str(err.validator_value).replace(END, "$")
        hint = " (control characters are not allowed)" if CONTROL.search(err.instance) else ""
        return f"{excerpt(err.instance)} does not match {pattern!r}{hint}"
    return shorten(err.message, err.instance)


def _schema(part: str) -> dict[str, Any]:
    from lab.schemas import load_schema

    schema = load_schema("suite")
    if part == "suite":
        return dict(schema)
    return {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/task"}


@functools.cache
def _validator(part: str) -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(_schema(part))


@functools.cache
def _fast() -> dict[str, Any]:
    """Compiled validators: the top level (tasks unchecked), a task (verifiers unchecked) and
    one per verifier kind, each taken from the schema's ``if kind == … then …`` branches, so a
    verifier is checked against its own kind alone."""
    import copy

    import fastjsonschema

    schema = {k: v for k, v in copy.deepcopy(_schema("suite")).items() if k != "$schema"}
    defs = schema["$defs"]
    top = {**schema, "properties": {**schema["properties"], "tasks": {"type": "array", "minItems": 1}}}
    task_def = copy.deepcopy(defs["task"])
    task_def["properties"]["verifiers"]["items"] = True

    def compile_part(name: str, part: dict[str, Any]) -> Any:
        # Its own local $id, and no handlers for remote refs: compiling never leaves the machine.
        inlined = {k: v for k, v in _inline(part, defs).items() if k != "$defs"}
        return fastjsonschema.compile({**inlined, "$id": f"urn:lab:suite:{name}"},
                                      handlers={"http": _no_remote, "https": _no_remote})

    kinds = {}
    for branch in defs["verifier"]["allOf"]:
        if "if" in branch:
            kind = branch["if"]["properties"]["kind"]["const"]
            kinds[kind] = compile_part(kind, {"type": "object",
                                              "allOf": [{"$ref": "#/$defs/verifierBase"}, branch["then"]]})
    return {"top": compile_part("top", top), "task": compile_part("task", task_def), "kinds": kinds}


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every ``{"$ref": "#/$defs/<name>"}`` replaced by that definition (the suite
    schema is not recursive), so the compiled code calls no function per reference; a reference
    with sibling keywords becomes ``allOf`` of both, which is how draft 2020-12 reads it."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_LOCAL_REF):
        target = _inline(defs[ref[len(_LOCAL_REF):]], defs)
        rest = _inline({k: v for k, v in node.items() if k != "$ref"}, defs)
        return {"allOf": [target, rest]} if rest else target
    return {k: v if k in ("const", "enum") else _inline(v, defs) for k, v in node.items()}


def _no_remote(uri: str) -> Any:
    raise ValueError(f"suite schema: remote reference {uri} (the shipped schema refers only to itself)")


def _passes(check: Callable[[Any], Any], doc: Any) -> bool:
    import fastjsonschema

    try:
        check(doc)
    except fastjsonschema.JsonSchemaException:
        return False
    return True
