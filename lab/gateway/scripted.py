"""A scripted upstream: the scripted provider behind the gateway (for CI, no network).

Call ``n`` of a run answers turn ``n`` of the task's script (see
:mod:`lab.providers.scripted`), as chat completions (a JSON body or SSE
chunks, as the request asked) or translated to the Responses API: output
items ``message`` (``output_text``) and ``function_call``; streamed as named
events ``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.function_call_arguments.delta``,
``response.output_item.done``, ``response.completed``. Every id and the
usage are deterministic, so a re-recorded cassette is byte-identical.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lab.gateway.exchange import UpstreamReply, reply_from_exchange
from lab.gateway.upstream import UpstreamRequest
from lab.providers.base import Completion, Exchange
from lab.providers.encode import completion_to_exchange
from lab.providers.scripted import ScriptedProvider


@dataclass
class ScriptedUpstream:
    """Answers each call from a script, in call order.

    Args:
        script: the validated script object (``load_script``).
        source: names the script in errors.
    """

    script: dict[str, Any]
    source: str = "<script>"
    _provider: ScriptedProvider = field(init=False, repr=False)
    _calls: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._provider = ScriptedProvider(self.script, source=self.source)

    async def send(self, request: UpstreamRequest) -> UpstreamReply:
        """The next turn as the wire shape ``request`` asked for."""
        n = self._calls
        self._calls += 1
        messages = request.body.get("messages") if request.api == "chat" else request.body.get("input")
        completion = self._provider._turn(n, messages if isinstance(messages, list) else [])
        model = request.body.get("model")
        model = model if isinstance(model, str) and model else "scripted"
        if request.api == "chat":
            exchange = completion_to_exchange(completion, stream=request.stream,
                                              response_id=f"chatcmpl-scripted{n}", model=model)
        else:
            exchange = responses_exchange(completion, n, model, stream=request.stream)
        return reply_from_exchange(exchange)

    async def aclose(self) -> None:
        """Nothing to release."""


def responses_exchange(completion: Completion, n: int, model: str, *, stream: bool) -> Exchange:
    """The Responses-API exchange for ``completion`` as call ``n`` (named SSE events when streamed)."""
    items: list[dict[str, Any]] = []
    if completion.content is not None:
        items.append({"type": "message", "id": f"msg_scripted{n}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": completion.content, "annotations": []}]})
    for j, call in enumerate(completion.tool_calls):
        items.append({"type": "function_call", "id": f"fc_scripted{n}x{j}", "call_id": call.id,
                      "name": call.name, "arguments": call.arguments, "status": "completed"})
    response: dict[str, Any] = {"id": f"resp_scripted{n}", "object": "response", "created_at": 0,
                                "model": model, "status": "completed", "output": items}
    if completion.usage is not None:
        i, o = completion.usage.input_tokens or 0, completion.usage.output_tokens or 0
        response["usage"] = {"input_tokens": i, "output_tokens": o, "total_tokens": i + o,
                             "input_tokens_details": {"cached_tokens": 0},
                             "output_tokens_details": {"reasoning_tokens": 0}}
    if not stream:
        return {"type": "json", "status": 200, "body": response}
    names: list[str] = []
    events: list[dict[str, Any]] = []

    def emit(name: str, **payload: Any) -> None:
        names.append(name)
        events.append({"type": name, "sequence_number": len(events), **payload})

    emit("response.created", response={**response, "status": "in_progress", "output": [], "usage": None})
    for index, item in enumerate(items):
        emit("response.output_item.added", output_index=index, item={**item, "status": "in_progress"})
        if item["type"] == "message":
            emit("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                 delta=completion.content)
        else:
            emit("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                 delta=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response)
    return {"type": "sse", "status": 200, "events": [json.dumps(e, sort_keys=True) for e in events],
            "eventNames": names}
