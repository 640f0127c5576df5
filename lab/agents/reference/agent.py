"""The reference command agent: a small coding agent on the official ``openai`` SDK.

Standalone on purpose (no ``lab`` imports): the lab runs it inside a sandbox
with only an interpreter that has the ``openai`` package. Run it as
``python -m lab.agents.reference.agent`` or by path::

    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 OPENAI_API_KEY=<run token> \\
        python agent.py --model gpt-4o-mini --api responses --stream --prompt "Fix the bug"

Two tools: ``shell`` runs ``bash -c COMMAND`` in the working directory (its
own process group, killed at ``--tool-timeout``; stdin closed; output
truncated to ``--max-output`` characters) and ``write_file`` writes a file
below the working directory. It speaks chat completions (``--api chat``) or
the Responses API (``--api responses``, full history in every request, no
``previous_response_id``), streamed (``--stream``, the default) or not.

Exit status: 0 when the model answered without a tool call (the final
answer is printed on stdout: the agent claims success); 1 when the API
failed or answered something unusable (an empty final answer included: it is
never claimed as success). Over the Responses API the answer is assembled
from the streamed output items when ``response.completed`` carries an empty
``output``; 2 on a usage error; 3 when
``--max-turns`` model calls did not reach a final answer. A trace of tool
calls goes to stderr. Run as a program, it ends with ``os._exit`` once its
output is flushed and its client closed: the interpreter's own teardown
after ``import openai`` (collecting the SDK's objects) would cost another
~0.15 s of CPU and change nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import openai

SYSTEM_PROMPT = (
    "You are a careful coding agent working in the current directory. Use the tools to inspect "
    "and change files: `shell` runs a bash command, `write_file` writes a whole file. When the task "
    "is done, reply with a one-paragraph summary and no tool call."
)
SHELL_SCHEMA = {"type": "object", "properties": {"command": {"type": "string", "description": "bash command"}},
                "required": ["command"], "additionalProperties": False}
WRITE_SCHEMA = {"type": "object", "properties": {
    "path": {"type": "string", "description": "file path relative to the working directory"},
    "content": {"type": "string", "description": "the complete new content"}},
    "required": ["path", "content"], "additionalProperties": False}
TOOLS = (("shell", "Run a bash command in the working directory; returns exit code and output.", SHELL_SCHEMA),
         ("write_file", "Write a file (creating directories) below the working directory.", WRITE_SCHEMA))


class Tools:
    """The two tools, confined to ``root``."""

    def __init__(self, root: Path, timeout_s: float, max_output: int) -> None:
        self.root = root.resolve()
        self.timeout_s = timeout_s
        self.max_output = max_output

    def call(self, name: str, arguments: str) -> str:
        """Run one tool call; every failure becomes the text the model sees."""
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"error: arguments are not JSON: {exc}"
        if not isinstance(args, dict):
            return "error: arguments must be a JSON object"
        if name == "shell" and isinstance(args.get("command"), str):
            return self.shell(args["command"])
        if name == "write_file" and isinstance(args.get("path"), str) and isinstance(args.get("content"), str):
            return self.write_file(args["path"], args["content"])
        return f"error: unknown tool or bad arguments: {name} {arguments[:200]}"

    def shell(self, command: str) -> str:
        process = subprocess.Popen(["bash", "-c", command], cwd=self.root, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            output, _ = process.communicate(timeout=self.timeout_s)
            status = f"exit code: {process.returncode}"
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            status = f"timed out after {self.timeout_s:g} s (process group killed)"
        text = output.decode("utf-8", "replace")
        if len(text) > self.max_output:
            text = f"[… {len(text) - self.max_output} characters cut …]\n" + text[-self.max_output:]
        return f"{status}\n{text}"

    def write_file(self, path: str, content: str) -> str:
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root):
            return f"error: {path} is outside the working directory"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode('utf-8'))} bytes to {path}"


def chat_tools() -> list[Any]:
    return [{"type": "function", "function": {"name": n, "description": d, "parameters": p}} for n, d, p in TOOLS]


def responses_tools() -> list[Any]:
    return [{"type": "function", "name": n, "description": d, "parameters": p, "strict": False}
            for n, d, p in TOOLS]


def chat_turn(client: openai.OpenAI, args: argparse.Namespace,
              messages: list[Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """One chat-completions call; returns (content, tool calls as wire dicts)."""
    if not args.stream:
        reply = client.chat.completions.create(model=args.model, messages=messages, tools=chat_tools())
        message = reply.choices[0].message
        calls = [{"id": c.id, "type": "function",
                  "function": {"name": c.function.name, "arguments": c.function.arguments}}
                 for c in message.tool_calls or [] if c.type == "function"]
        return message.content, calls
    content: list[str] = []
    calls_by_index: dict[int, dict[str, Any]] = {}
    stream = client.chat.completions.create(model=args.model, messages=messages, tools=chat_tools(),
                                            stream=True, stream_options={"include_usage": True})
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                content.append(delta.content)
            for piece in delta.tool_calls or []:
                call = calls_by_index.setdefault(piece.index, {
                    "id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                call["id"] = piece.id or call["id"]
                if piece.function is not None:
                    call["function"]["name"] += piece.function.name or ""
                    call["function"]["arguments"] += piece.function.arguments or ""
    return ("".join(content) or None), [calls_by_index[i] for i in sorted(calls_by_index)]


def final_answer(text: str) -> int:
    """Print the final answer and claim success (0); an empty answer is no success (1)."""
    if not text.strip():
        print("reference agent: the model's final answer is empty (no text and no tool call)", file=sys.stderr)
        return 1
    print(text)
    return 0


def run_chat(client: openai.OpenAI, args: argparse.Namespace, prompt: str, tools: Tools) -> int:
    messages: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
    for turn in range(args.max_turns):
        content, calls = chat_turn(client, args, messages)
        if not calls:
            return final_answer(content or "")
        messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        for call in calls:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            print(f"turn {turn}: {name} {arguments[:200]}", file=sys.stderr)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": tools.call(name, arguments)})
    print(f"reference agent: no final answer within {args.max_turns} turns", file=sys.stderr)
    return 3


def responses_turn(client: openai.OpenAI, args: argparse.Namespace, items: list[Any]) -> list[dict[str, Any]]:
    """One Responses-API call; returns the output items as input-ready dicts."""
    if not args.stream:
        response = client.responses.create(model=args.model, instructions=SYSTEM_PROMPT, input=items,
                                           tools=responses_tools())
        return [item.model_dump(mode="json", exclude_none=True) for item in response.output]
    final = None
    streamed: dict[int, dict[str, Any]] = {}
    for event in client.responses.create(model=args.model, instructions=SYSTEM_PROMPT, input=items,
                                         tools=responses_tools(), stream=True):
        if event.type == "response.output_item.done":
            streamed[event.output_index] = event.item.model_dump(mode="json", exclude_none=True)
        elif event.type in ("response.completed", "response.incomplete"):
            final = event.response
        elif event.type == "response.failed":
            error = event.response.error
            raise RuntimeError(f"response.failed: {error.message if error else 'no error given'}")
    if final is None:
        raise RuntimeError("the stream ended without response.completed")
    output = [item.model_dump(mode="json", exclude_none=True) for item in final.output]
    # Some servers send response.completed with an empty output: the items streamed are the answer.
    return output or [streamed[i] for i in sorted(streamed)]


def run_responses(client: openai.OpenAI, args: argparse.Namespace, prompt: str, tools: Tools) -> int:
    items: list[Any] = [{"role": "user", "content": prompt}]
    for turn in range(args.max_turns):
        output = responses_turn(client, args, items)
        items += output
        calls = [item for item in output if item.get("type") == "function_call"]
        if not calls:
            return final_answer("".join(part.get("text", "") for item in output if item.get("type") == "message"
                                        for part in item.get("content", []) if part.get("type") == "output_text"))
        for call in calls:
            print(f"turn {turn}: {call['name']} {call['arguments'][:200]}", file=sys.stderr)
            items.append({"type": "function_call_output", "call_id": call["call_id"],
                          "output": tools.call(call["name"], call["arguments"])})
    print(f"reference agent: no final answer within {args.max_turns} turns", file=sys.stderr)
    return 3


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reference-agent", description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--api", choices=("chat", "responses"), default="chat")
    parser.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt")
    prompt.add_argument("--prompt-file", type=Path)
    parser.add_argument("--max-turns", type=int, default=20)
    parser.add_argument("--tool-timeout", type=float, default=60.0, help="seconds per shell command")
    parser.add_argument("--max-output", type=int, default=10000, help="characters of tool output kept")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per model call")
    parser.add_argument("--base-url", default=None, help="the API's base URL (default: $OPENAI_BASE_URL)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        print("reference agent: OPENAI_API_KEY is not set", file=sys.stderr)
        return 2
    try:
        prompt = args.prompt if args.prompt is not None else args.prompt_file.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"reference agent: cannot read the prompt file: {exc}", file=sys.stderr)
        return 2
    # One client for the whole run: every call reuses its keep-alive connection.
    client = openai.OpenAI(api_key=key, base_url=args.base_url or os.environ.get("OPENAI_BASE_URL") or None,
                           timeout=args.timeout)
    tools = Tools(Path.cwd(), args.tool_timeout, args.max_output)
    try:
        run = run_responses if args.api == "responses" else run_chat
        return run(client, args, prompt, tools)
    except (openai.OpenAIError, RuntimeError) as exc:
        print(f"reference agent: the model call failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()


def exit_now(code: int) -> NoReturn:
    """Flush stdout and stderr, then end the process at once with ``code`` (120 if stdout cannot be written)."""
    try:
        sys.stdout.flush()
    except OSError:
        code = code or 120  # what the interpreter itself would exit with
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
