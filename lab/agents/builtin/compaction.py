"""Context compaction (SPEC H5): summarise older turns into a checkpoint.

When the conversation passes ``threshold × max_context_chars`` characters, a
separate model call (``purpose="compaction"``) summarises the older part. The
new conversation is::

    [system prompt, task statement (verbatim),
     user "Checkpoint (summary of earlier work): <summary>",
     <the most recent turns>]

Turns are cut only at group boundaries (an assistant message together with
the tool results answering its calls), so every tool result still follows
the call it answers and the conversation stays valid for the API. An earlier
checkpoint is part of the older messages and is summarised again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.providers.base import Completion, Provider
from lab.providers.wire import parse_exchange

CHECKPOINT_PREFIX = "Checkpoint (summary of earlier work): "
KEEP_FRACTION = 0.5
"""The kept recent turns use at most this fraction of the threshold (at least one group)."""
EXCERPT_CHARS = 4000
"""Each older message enters the summary request cut to this many characters."""

COMPACTION_SYSTEM_PROMPT = (
    "You write checkpoints for a coding agent whose conversation grew too long. "
    "Summarise the transcript you are given: what was done, which files were read or "
    "changed (with their latest sha256 if shown), what commands showed, what is left "
    "to do. Be concise and factual; do not invent anything.")

Message = dict[str, Any]


@dataclass(frozen=True)
class Compaction:
    """The outcome of one compaction call.

    Attributes:
        messages: the new conversation.
        completion: the summary call's parsed answer (usage, finish reason).
        summarised: how many older messages the checkpoint replaced.
        chars_before: context size before, in characters.
        chars_after: context size after, in characters.
    """

    messages: list[Message]
    completion: Completion
    summarised: int
    chars_before: int
    chars_after: int


def context_chars(messages: list[Message]) -> int:
    """Size of a conversation: content characters plus tool-call names and arguments."""
    total = 0
    for message in messages:
        total += len(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            total += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return total


def needs_compaction(messages: list[Message], threshold: float, max_context_chars: int) -> bool:
    """True when the conversation is past ``threshold × max_context_chars``."""
    return context_chars(messages) > threshold * max_context_chars


def _groups(messages: list[Message]) -> list[list[Message]]:
    """Split messages into units never to be cut: assistant + its tool results."""
    groups: list[list[Message]] = []
    for message in messages:
        if message["role"] == "tool" and groups:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


def split_for_compaction(messages: list[Message], keep_chars: float
                         ) -> tuple[list[Message], list[Message]] | None:
    """Split the messages after system + task into (older, recent).

    ``recent`` holds the newest groups that fit in ``keep_chars`` (always at
    least the last group). Returns None when nothing older is left to summarise.
    """
    groups = _groups(messages[2:])
    kept = 1
    while kept < len(groups) and context_chars(
            [m for g in groups[-(kept + 1):] for m in g]) <= keep_chars:
        kept += 1
    older = [m for g in groups[:-kept] for m in g]
    if not older:
        return None
    return older, [m for g in groups[-kept:] for m in g]


def _render(message: Message) -> str:
    text = message.get("content") or ""
    if len(text) > EXCERPT_CHARS:
        text = text[:EXCERPT_CHARS] + f" [... {len(text) - EXCERPT_CHARS} chars cut]"
    lines = [f"[{message['role']}] {text}".rstrip()]
    for call in message.get("tool_calls") or ():
        args = call["function"]["arguments"]
        if len(args) > EXCERPT_CHARS:
            args = args[:EXCERPT_CHARS] + f" [... {len(args) - EXCERPT_CHARS} chars cut]"
        lines.append(f"[tool call {call['id']}] {call['function']['name']} {args}")
    return "\n".join(lines)


def summary_request(model: str, task_prompt: str, older: list[Message],
                    max_output_tokens: int) -> dict[str, Any]:
    """The request body of a compaction call (no tools)."""
    transcript = "\n\n".join(_render(m) for m in older)
    prompt = (f"The task statement (kept verbatim, do not repeat it):\n{task_prompt}\n\n"
              f"Transcript of the earlier work ({len(older)} messages):\n{transcript}\n\n"
              "Write the checkpoint.")
    return {"model": model,
            "messages": [{"role": "system", "content": COMPACTION_SYSTEM_PROMPT},
                         {"role": "user", "content": prompt}],
            "max_tokens": max_output_tokens}


def compact(messages: list[Message], *, provider: Provider, model: str, threshold: float,
            max_context_chars: int, max_output_tokens: int,
            timeout_s: float | None) -> Compaction | None:
    """Replace older turns with a model-written checkpoint.

    Args:
        messages: the conversation; ``messages[0]`` is the system prompt and
            ``messages[1]`` the task statement, both kept verbatim.
        provider: called once with ``purpose="compaction"``.
        model, max_output_tokens: for the summary request.
        threshold, max_context_chars: the kept recent turns use at most
            ``KEEP_FRACTION × threshold × max_context_chars`` characters.
        timeout_s: seconds left in the wall budget.

    Returns:
        The new conversation and the call's answer, or None when there is
        nothing older than the most recent turn to summarise (no call made).

    Raises:
        ProviderError, CassetteMiss: from the provider, unchanged.
    """
    split = split_for_compaction(messages, KEEP_FRACTION * threshold * max_context_chars)
    if split is None:
        return None
    older, recent = split
    task = messages[1]["content"]
    request = summary_request(model, task, older, max_output_tokens)
    completion = parse_exchange(provider.send(request, purpose="compaction",
                                              timeout_s=timeout_s))
    summary = (completion.content or "").strip() or "(the summary call returned no text)"
    new = [messages[0], messages[1], {"role": "user", "content": CHECKPOINT_PREFIX + summary},
           *recent]
    return Compaction(new, completion, len(older), context_chars(messages), context_chars(new))

