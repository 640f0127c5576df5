"""Token usage as providers report it: where the figures are, and how chunks merge.

A wire ``usage`` object is first flattened into *fields* (one figure per
known place, :func:`usage_fields`); fields from several chunks of a stream
merge field by field (:func:`merge_fields`: a chunk that lacks a field, or
sends it as ``null``, never erases a figure an earlier chunk reported; a
later figure replaces an earlier one, since servers repeat cumulative usage);
the merged fields are read once into a ``Usage`` (:func:`usage_from_fields`).

Where the figures are read from:

=====================  ==================================================================
input tokens           ``prompt_tokens`` (or ``input_tokens``); with Anthropic semantics
                       (``cache_read_input_tokens`` / ``cache_creation_input_tokens``
                       present) ``prompt_tokens`` excludes the cache, so input is the sum
output tokens          ``completion_tokens`` (or ``output_tokens``)
cached input tokens    ``cache_read_input_tokens`` (Anthropic), else
                       ``prompt_tokens_details.cached_tokens`` (OpenAI), else top-level
                       ``cached_tokens`` (Moonshot/Kimi), else ``prompt_cache_hit_tokens``
                       (DeepSeek)
cache write tokens     ``cache_creation_input_tokens`` (Anthropic), else
                       ``prompt_tokens_details.cache_write_tokens`` (OpenRouter)
provider cost (USD)    top-level ``cost`` (OpenRouter, LiteLLM)
=====================  ==================================================================

A count that is not a non-negative integer (``null``, ``true``, ``-1``,
``"5"``) is not a figure. Cached input can never exceed input: a report
where it would (figures that do not fit together) keeps cached input as not
reported rather than show a share above 100 %.

Sources: https://platform.openai.com/docs/api-reference/chat/object (usage),
https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching,
https://api-docs.deepseek.com/guides/kv_cache, https://openrouter.ai/docs/use-cases/usage-accounting.
"""

from __future__ import annotations

import math
from typing import Any

from lab.providers.base import Usage

# flattened field name -> (path in the wire usage object)
_PLACES: dict[str, tuple[str, ...]] = {
    "prompt": ("prompt_tokens",), "input": ("input_tokens",),
    "completion": ("completion_tokens",), "output": ("output_tokens",),
    "cachedDetails": ("prompt_tokens_details", "cached_tokens"),
    "cachedInputDetails": ("input_tokens_details", "cached_tokens"),
    "cachedTop": ("cached_tokens",), "cacheHit": ("prompt_cache_hit_tokens",),
    "cacheRead": ("cache_read_input_tokens",), "cacheCreation": ("cache_creation_input_tokens",),
    "cacheWriteDetails": ("prompt_tokens_details", "cache_write_tokens"),
}


def usage_fields(raw: Any) -> dict[str, int | float]:
    """The figures of one wire ``usage`` object, by flattened field name (absent: not a figure)."""
    if not isinstance(raw, dict):
        return {}
    fields: dict[str, int | float] = {}
    for name, path in _PLACES.items():
        value: Any = raw
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        count = _count(value)
        if count is not None:
            fields[name] = count
    cost = raw.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
        fields["cost"] = float(cost)
    return fields


def merge_fields(earlier: dict[str, int | float], later: dict[str, int | float]) -> dict[str, int | float]:
    """Field-by-field merge: later figures win, missing ones never erase earlier figures."""
    return {**earlier, **later}


def usage_from_fields(fields: dict[str, int | float]) -> Usage | None:
    """Read merged fields into a ``Usage``; None when no figure at all was reported."""
    if not fields:
        return None

    def pick(*names: str) -> int | None:
        return next((int(fields[n]) for n in names if n in fields), None)

    prompt = pick("prompt", "input")
    output = pick("completion", "output")
    read, creation = pick("cacheRead"), pick("cacheCreation")
    if read is not None or creation is not None:  # Anthropic: prompt_tokens excludes the cache
        input_tokens = None if prompt is None else prompt + (read or 0) + (creation or 0)
        cached, cache_write = read, creation
    else:
        input_tokens = prompt
        cached = pick("cachedDetails", "cachedInputDetails", "cachedTop", "cacheHit")
        cache_write = pick("cacheWriteDetails")
    if cached is not None and input_tokens is not None and cached > input_tokens:
        cached = None  # figures that do not fit together: no share above 100 %
    cost = fields.get("cost")
    usage = Usage(input_tokens=input_tokens, output_tokens=output, cached_input_tokens=cached,
                  cache_write_tokens=cache_write,
                  provider_cost_usd=None if cost is None else float(cost))
    return None if usage == Usage() else usage


def parse_usage(raw: Any) -> Usage | None:
    """Read one wire ``usage`` object (module docstring); None when it reports nothing."""
    return usage_from_fields(usage_fields(raw))


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def implausible_zero(usage: Usage | None, produced_output: bool) -> bool:
    """Whether ``usage`` reports 0 input tokens, or 0 output tokens for an answer that has output.

    Every model call carries a prompt, so 0 input tokens is never a measurement;
    neither is 0 output tokens beside text or a tool call. Some proxies send
    such zeros in place of figures they do not have: they are read as *not
    reported* (SPEC M4), never as a cost of $0.
    """
    if usage is None:
        return False
    return usage.input_tokens == 0 or (usage.output_tokens == 0 and produced_output)
