"""Provider protocol and the parsed shape of one chat-completions answer.

An *exchange* is the provider's answer as it came off the wire, kept verbatim
so a cassette can replay it through the same parser::

    {"type": "json", "status": 200, "body": {...}}          # non-streaming
    {"type": "sse",  "status": 200, "events": ["{...}", "[DONE]"]}  # SSE data fields, in order

Source of the wire format: OpenAI chat completions API reference
(https://platform.openai.com/docs/api-reference/chat).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Purpose = Literal["main", "compaction"]
Exchange = dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """Provider-reported usage of one call (or a sum); None means not reported (never 0).

    Attributes:
        input_tokens: all input tokens, cached ones included.
        output_tokens: output tokens (reasoning included).
        cached_input_tokens: input tokens read from the provider's prompt cache
            (never more than ``input_tokens``).
        cache_write_tokens: input tokens written to the prompt cache.
        provider_cost_usd: the cost the provider itself reported, in USD.

    Raises:
        ValueError: cached input above input (a share above 100 % is impossible).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    provider_cost_usd: float | None = None

    def __post_init__(self) -> None:
        cached, total = self.cached_input_tokens, self.input_tokens
        if cached is not None and total is not None and cached > total:
            raise ValueError(f"usage: cached input {cached} exceeds input {total}")

    def to_json(self) -> dict[str, int | float | None]:
        """camelCase figures; ``cacheWriteTokens`` / ``providerCostUsd`` only when reported."""
        block: dict[str, int | float | None] = {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cachedInputTokens": self.cached_input_tokens,
        }
        if self.cache_write_tokens is not None:
            block["cacheWriteTokens"] = self.cache_write_tokens
        if self.provider_cost_usd is not None:
            block["providerCostUsd"] = self.provider_cost_usd
        return block


@dataclass(frozen=True)
class ToolCall:
    """One tool call requested by the model; ``arguments`` is the raw JSON text.

    ``extra`` holds the fields of the wire tool call the lab does not
    interpret (``extra`` of the call object, and ``function_extra`` of its
    ``function`` object), sent back verbatim on the next turn (continuation
    data such as reasoning signatures).
    """

    id: str
    name: str
    arguments: str
    extra: dict[str, Any] = field(default_factory=dict)
    function_extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Completion:
    """One assistant turn assembled from an exchange.

    Attributes:
        content: assistant text, or None when the model sent none.
        tool_calls: requested tool calls in index order.
        finish_reason: as the provider sent it (``stop``, ``tool_calls``,
            ``length``, ``""`` or None).
        complete: False when a stream ended without a finish reason and
            without ``[DONE]`` (cut off): an incomplete answer, never success.
        usage: reported usage, or None when the provider reported none.
        reasoning_content: concatenated ``reasoning_content`` deltas, if any.
        extra: fields of the assistant message the lab does not interpret
            (continuation data), sent back verbatim by ``assistant_message``.
        skipped_frames: SSE data payloads that carried nothing (keep-alives
            such as ``: keepalive`` or ``ping``), skipped.
        stream_error: the message of an ``error:`` line or in-band error
            object the server sent in the stream, if any.
        zero_usage: the server sent usage figures that cannot be measurements
            (0 input tokens, or 0 output tokens beside output;
            ``lab.providers.usage.implausible_zero``); ``usage`` is then None.
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = "stop"
    complete: bool = True
    usage: Usage | None = None
    reasoning_content: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    skipped_frames: int = 0
    stream_error: str | None = None
    zero_usage: bool = False

    def assistant_message(self, *, include_reasoning: bool = False) -> dict[str, Any]:
        """The message to append to the conversation (chat-completions shape).

        Fields the provider attached and the lab does not interpret (``extra``,
        per tool call ``extra`` / ``function_extra``) go back verbatim.
        ``reasoning_content`` goes back only with ``include_reasoning`` (the
        provider requires it: Moonshot Kimi thinking models on tool-call
        turns; DeepSeek's reasoner refuses it).
        """
        message: dict[str, Any] = {**self.extra, "role": "assistant", "content": self.content}
        if include_reasoning and self.reasoning_content is not None:
            message["reasoning_content"] = self.reasoning_content
        if self.tool_calls:
            message["tool_calls"] = [
                {**c.extra, "id": c.id, "type": "function",
                 "function": {**c.function_extra, "name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message

    def partial_json(self) -> dict[str, Any]:
        """What an unfinished answer carried: ``{"content", "toolCalls": [{id, name, arguments}]}``."""
        return {"content": self.content,
                "toolCalls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls]}


class Provider(Protocol):
    """Sends one chat-completions request and returns the raw exchange.

    Implementations raise ``lab.errors.ProviderError`` (or a subclass) for
    infrastructure failures: connection refused/reset, timeouts, 401/403,
    429 and 5xx after bounded retries, unparseable responses.
    """

    name: str

    def send(self, request: dict[str, Any], *, purpose: Purpose = "main",
             timeout_s: float | None = None) -> Exchange:
        """Send ``request`` (a chat-completions body without ``stream``).

        Args:
            request: the body the harness builds (model, messages, tools …).
            purpose: ``main`` for a loop turn, ``compaction`` for a summary call.
            timeout_s: seconds left in the run's wall budget, if any.
        """
        ...
