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
    """Provider-reported token usage of one call; None means not reported (never 0)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None

    def to_json(self) -> dict[str, int | None]:
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cachedInputTokens": self.cached_input_tokens,
        }


@dataclass(frozen=True)
class ToolCall:
    """One tool call requested by the model; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


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
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = "stop"
    complete: bool = True
    usage: Usage | None = None
    reasoning_content: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def assistant_message(self) -> dict[str, Any]:
        """The message to append to the conversation (chat-completions shape)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


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
