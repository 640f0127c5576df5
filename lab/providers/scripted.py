"""Scripted provider (SPEC P2): plays a per-task list of turns as real wire shapes.

Script file ``<suite dir>/scripts/<task id>.json``::

    {"schemaVersion": 1, "taskId": "fix-off-by-one", "turns": [
      {"toolCalls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
      {"toolCalls": [{"name": "edit_file", "arguments": {"path": "calc.py",
                      "sha256": "@sha256:calc.py", "old": "a", "new": "b"}}]},
      {"content": "DONE: fixed."}]}

A turn has ``content`` (non-empty string), ``toolCalls`` (non-empty list of
``{"name": str, "arguments": object | str}``) or both, and optionally
``finishReason`` (string; default ``tool_calls`` when the turn has tool calls,
else ``stop``) and ``reportUsage`` (false: send no usage, as some servers do).
String ``arguments`` are sent verbatim (to play malformed JSON); object
arguments are JSON-encoded after ``@sha256:<path>`` strings (at any depth) are
replaced by the latest sha256 the harness reported for ``<path>`` in a
``role: "tool"`` message starting ``path: <path>\\nsha256: <64 hex>``; with
no report the literal string stays.

Main call ``n`` (0-based, ``purpose="main"`` only) answers ``turns[n]`` with
tool-call ids ``call_<n>_<j>`` and response id ``scripted-<n>``; past the end it
answers ``GIVE UP: script exhausted``. Compaction calls do not consume turns:
they answer ``Summary of <N> earlier messages.`` with id
``scripted-compaction-<m>``.

Usage is deterministic and independent of noisy text, so re-recording a
cassette is byte-identical (SPEC R6) even when tool output differs in length
(timings, temporary paths): ``prompt_tokens`` = sum over messages of
(4 + whitespace-separated words in content and tool-call arguments),
``completion_tokens`` = characters of content + tool names + arguments // 4.
No cached-input count is reported.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.errors import SuiteError
from lab.files import loads_json, read_text
from lab.providers.base import Completion, Exchange, Purpose, ToolCall, Usage
from lab.providers.encode import completion_to_exchange

GIVE_UP = "GIVE UP: script exhausted"
SCRIPT_SCHEMA_VERSION = 1
SHA256_PLACEHOLDER = "@sha256:"
_TOP_KEYS = {"schemaVersion", "taskId", "turns", "description"}
_TURN_KEYS = {"content", "toolCalls", "finishReason", "reportUsage"}
_CALL_KEYS = {"name", "arguments"}
_REPORTED_SHA = re.compile(r"path: (?P<path>[^\n]*)\nsha256: (?P<hex>[0-9a-f]{64})(?:\n|$)")


def load_script(path: Path) -> dict[str, Any]:
    """Read and validate a script file.

    Returns:
        The script object as parsed (shape in the module docstring).

    Raises:
        SuiteError: file missing or unreadable, not JSON, or fields invalid;
            every problem names the file and the field path.
    """
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise SuiteError([f"{path}: cannot read the scripted-provider script: {reason}"]) from exc
    try:
        script = loads_json(text)
    except json.JSONDecodeError as exc:
        raise SuiteError([f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}"]) from exc
    problems = validate_script(script, source=str(path))
    if problems:
        raise SuiteError(problems)
    return script  # type: ignore[no-any-return]


def validate_script(script: Any, *, source: str) -> list[str]:
    """Every problem in ``script``, each as ``<source>: field "<path>": <problem>``."""
    if not isinstance(script, dict):
        return [f"{source}: expected a JSON object, got {_kind(script)}"]
    problems: list[str] = []

    def bad(field: str, expected: str, value: Any) -> None:
        problems.append(f'{source}: field "{field}": expected {expected}, got {_show(value)}')

    version = script.get("schemaVersion")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        bad("schemaVersion", f"{SCRIPT_SCHEMA_VERSION}", version)
    elif version > SCRIPT_SCHEMA_VERSION:
        bad("schemaVersion", f"<= {SCRIPT_SCHEMA_VERSION} (written by a newer lab)", version)
    if not isinstance(script.get("taskId"), str) or not script.get("taskId"):
        bad("taskId", "a non-empty string", script.get("taskId"))
    for key in sorted(set(script) - _TOP_KEYS):
        problems.append(f'{source}: field "{key}": unknown field (known: {", ".join(sorted(_TOP_KEYS))})')
    turns = script.get("turns")
    if not isinstance(turns, list):
        bad("turns", "a list of turns", turns)
        return problems
    for n, turn in enumerate(turns):
        _validate_turn(turn, f"turns[{n}]", bad, problems, source)
    return problems


def _validate_turn(turn: Any, where: str, bad: Callable[[str, str, Any], None],
                   problems: list[str], source: str) -> None:
    if not isinstance(turn, dict):
        bad(where, "an object", turn)
        return
    for key in sorted(set(turn) - _TURN_KEYS):
        problems.append(f'{source}: field "{where}.{key}": unknown field '
                        f'(known: {", ".join(sorted(_TURN_KEYS))})')
    if "content" not in turn and "toolCalls" not in turn:
        bad(where, 'at least one of "content" and "toolCalls"', turn)
    if "content" in turn and (not isinstance(turn["content"], str) or not turn["content"]):
        bad(f"{where}.content", "a non-empty string", turn["content"])
    if "finishReason" in turn and not isinstance(turn["finishReason"], str):
        bad(f"{where}.finishReason", "a string", turn["finishReason"])
    if "reportUsage" in turn and not isinstance(turn["reportUsage"], bool):
        bad(f"{where}.reportUsage", "true or false", turn["reportUsage"])
    if "toolCalls" not in turn:
        return
    calls = turn["toolCalls"]
    if not isinstance(calls, list) or not calls:
        bad(f"{where}.toolCalls", "a non-empty list", calls)
        return
    for j, call in enumerate(calls):
        at = f"{where}.toolCalls[{j}]"
        if not isinstance(call, dict):
            bad(at, "an object", call)
            continue
        for key in sorted(set(call) - _CALL_KEYS):
            problems.append(f'{source}: field "{at}.{key}": unknown field (known: arguments, name)')
        if not isinstance(call.get("name"), str) or not call.get("name"):
            bad(f"{at}.name", "a non-empty string", call.get("name"))
        if not isinstance(call.get("arguments"), (dict, str)):
            bad(f"{at}.arguments", "an object (or a raw JSON string)", call.get("arguments"))


class ScriptedProvider:
    """Deterministic provider playing a validated script.

    Args:
        script: the script object (as ``load_script`` returns).
        stream: emit the SSE exchange shape instead of one JSON body.
        source: names the script in validation errors (e.g. its path).

    Raises:
        SuiteError: the script is invalid.
    """

    name = "scripted"

    def __init__(self, script: dict[str, Any], stream: bool = False, *, source: str = "<script>") -> None:
        problems = validate_script(script, source=source)
        if problems:
            raise SuiteError(problems)
        self.task_id: str = script["taskId"]
        self.stream = stream
        self.last_retries: list[dict[str, Any]] = []  # same attribute as OpenAICompatProvider; always empty
        self._turns: list[dict[str, Any]] = script["turns"]
        self._main_calls = 0
        self._compaction_calls = 0

    def send(self, request: dict[str, Any], *, purpose: Purpose = "main",
             timeout_s: float | None = None) -> Exchange:
        """Answer the next turn (or a compaction summary) as a wire exchange.

        ``timeout_s`` is ignored: the answer is immediate.
        """
        messages = request.get("messages") or []
        if purpose == "compaction":
            response_id = f"scripted-compaction-{self._compaction_calls}"
            self._compaction_calls += 1
            summary = f"Summary of {len(messages)} earlier messages."
            completion = Completion(content=summary, finish_reason="stop",
                                    usage=_usage(messages, summary))
        else:
            response_id = f"scripted-{self._main_calls}"
            completion = self._turn(self._main_calls, messages)
            self._main_calls += 1
        model = request.get("model")
        return completion_to_exchange(completion, stream=self.stream, response_id=response_id,
                                      model=model if isinstance(model, str) and model else "scripted")

    def _turn(self, n: int, messages: list[Any]) -> Completion:
        if n >= len(self._turns):
            return Completion(content=GIVE_UP, finish_reason="stop", usage=_usage(messages, GIVE_UP))
        turn = self._turns[n]
        hashes = reported_hashes(messages)
        calls = tuple(
            ToolCall(id=f"call_{n}_{j}", name=call["name"],
                     arguments=_encode_arguments(call["arguments"], hashes))
            for j, call in enumerate(turn.get("toolCalls", [])))
        content: str | None = turn.get("content")
        output = (content or "") + "".join(c.name + c.arguments for c in calls)
        return Completion(content=content, tool_calls=calls,
                          finish_reason=turn.get("finishReason", "tool_calls" if calls else "stop"),
                          usage=_usage(messages, output) if turn.get("reportUsage", True) else None)


def reported_hashes(messages: list[Any]) -> dict[str, str]:
    """Latest sha256 per normalised path from ``role: "tool"`` messages, in order."""
    hashes: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "tool":
            continue
        content = message.get("content")
        match = _REPORTED_SHA.match(content) if isinstance(content, str) else None
        if match:
            hashes[_normal_path(match["path"])] = match["hex"]
    return hashes


def _encode_arguments(arguments: dict[str, Any] | str, hashes: dict[str, str]) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(_resolve(arguments, hashes), ensure_ascii=False)


def _resolve(value: Any, hashes: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith(SHA256_PLACEHOLDER):
        return hashes.get(_normal_path(value[len(SHA256_PLACEHOLDER):]), value)
    if isinstance(value, dict):
        return {k: _resolve(v, hashes) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, hashes) for v in value]
    return value


def _normal_path(path: str) -> str:
    return posixpath.normpath(path.strip()) if path.strip() else ""


def _usage(messages: list[Any], output: str) -> Usage:
    prompt_tokens = 0
    for message in messages:
        prompt_tokens += 4
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("content"), str):
            prompt_tokens += len(message["content"].split())
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                prompt_tokens += len(function["arguments"].split())
    return Usage(input_tokens=prompt_tokens, output_tokens=len(output) // 4)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else type(value).__name__


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr) if value is not None else "nothing"
    return text if len(text) <= 80 else text[:80] + "…"
