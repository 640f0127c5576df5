"""The harness's tools (SPEC H2): what the model may do in its workspace.

Each tool has a name, a description, a JSON-schema for its arguments (a
chat-completions ``tools`` entry) and an *effect* (``read``, ``write``,
``process``, ``external``, ``analysis``) the policy grants or refuses. Every path goes through
``lab.sandbox.workspace.resolve_inside``; every misuse becomes an observation
``error: <message>`` for the model, never an exception out of ``run_tool``.

Result texts the model sees (the scripted provider reads the sha256 lines)::

    read_file              path: <p>\\nsha256: <hex>\\nlines: <n>\\n\\n<content>
    write_file, edit_file  path: <p>\\nsha256: <hex of new content>\\nbytes: <n>
    run_command            exit: <n>\\nstdout:\\n<text>\\nstderr:\\n<text>
                           (timeout: error: timed out after <ms> ms\\nstdout: …)
    a refused call         error: <message>

Long results are cut to ``limits.tool_output_chars`` with a ``[truncated: …]``
marker saying what was left out; a command's output keeps its head and tail.
A non-zero exit is a result (outcome ok); a timeout or cancel is an error.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from lab import patterns
from lab.agents.builtin.tool import (
    Tool,
    ToolContext,
    ToolResult,
    bound_text,
    display_path,
    os_tool_error,
    sha256_hex,
)
from lab.errors import ConfigError, ProcessStartError, ToolError
from lab.sandbox.base import command_limits, start_failure
from lab.sandbox.confined import write_confined
from lab.sandbox.process import run_launch
from lab.sandbox.walk import FILE, MAX_FILE_BYTES, TreeBoundError, walk
from lab.sandbox.workspace import IGNORED_NAMES, resolve_inside

SEARCH_MAX_MATCHES = 200
SEARCH_TIMEOUT_S = 2.0
"""Seconds one ``search`` may spend matching its pattern over all lines (a backtracking pattern stops there)."""
"""Matching lines ``search`` reports before it stops (and says so)."""
SEARCH_MAX_FILE_BYTES = 1_000_000
"""Files larger than this are skipped by ``search``."""
SEARCH_LINE_CHARS = 300
"""A matching line is cut to this many characters."""
SEARCH_SKIP = IGNORED_NAMES | {".venv", ".mypy_cache", ".tox", ".hg", ".svn"}


def _bound_stream(name: str, text: str, limit: int, total_bytes: int, cut: bool) -> str:
    """Keep the head and the tail of a command's stream (errors tend to be at the end).

    ``cut`` says the capture already dropped the middle (``run_process`` keeps
    the head and tail bytes); either way one marker states the true size.
    """
    if len(text) <= limit and not cut:
        return text
    if len(text) <= limit:
        return f"{text}\n[truncated: {name} was {total_bytes} bytes; only part is shown]"
    head, tail = text[:limit - limit // 2], text[len(text) - limit // 2:] if limit // 2 else ""
    return (f"{head}\n[truncated: {name} was {total_bytes} bytes; showing its first "
            f"{len(head)} and last {len(tail)} chars]\n{tail}")


def _list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    rel = args.get("path", ".")
    target = resolve_inside(ctx.workspace, rel)
    if not target.is_dir():
        raise ToolError(f"{rel!r} is not a directory")
    try:
        entries = sorted(os.scandir(target), key=lambda e: e.name)
    except OSError as exc:
        raise os_tool_error("list", rel, exc) from exc
    lines = [e.name + ("@" if e.is_symlink() else "/" if e.is_dir() else "") for e in entries]
    body = "\n".join(lines) if lines else "(empty directory)"
    text = f"path: {display_path(ctx, target)}\n\n{body}"
    return ToolResult(bound_text(text, ctx.output_chars, "list a subdirectory"))


def _require_regular(target: Path, rel: str) -> None:
    """Refuse FIFOs, sockets and devices: opening one can block past every budget."""
    if target.exists() and not target.is_dir() and not target.is_file():
        raise ToolError(f"{rel!r} is not a regular file (a FIFO, socket or device); refusing to open it")


def _read_bounded(target: Path, rel: str) -> bytes:
    """The bytes of ``target``, refused past ``MAX_FILE_BYTES`` (never read whole into memory)."""
    try:
        with target.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_FILE_BYTES + 1) if size <= MAX_FILE_BYTES else b""
    except OSError as exc:
        raise os_tool_error("read", rel, exc) from exc
    if size > MAX_FILE_BYTES or len(data) > MAX_FILE_BYTES:
        raise ToolError(f"{rel!r} is {max(size, len(data))} bytes, more than the {MAX_FILE_BYTES >> 20} MiB "
                        "the lab reads of one file; use run_command (head, grep) to look at it")
    return data


def _read_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    rel = args["path"]
    target = resolve_inside(ctx.workspace, rel)
    if target.is_dir():
        raise ToolError(f"{rel!r} is a directory; use list_dir")
    _require_regular(target, rel)
    data = _read_bounded(target, rel)
    lines = _lines(data.decode("utf-8", errors="replace"))
    head = f"path: {display_path(ctx, target)}\nsha256: {sha256_hex(data)}\nlines: {len(lines)}\n\n"
    if b"\x00" in data[:8192]:
        return ToolResult(f"{head}[binary file: {len(data)} bytes, content not shown]")
    start = args.get("offset", 1) - 1
    if start > 0 and start >= len(lines):
        raise ToolError(f"offset {start + 1} is past the end of {rel!r} ({len(lines)} lines)")
    chosen = lines[start:start + args["limit"]] if "limit" in args else lines[start:]
    return ToolResult(head + _page(chosen, start, len(lines), ctx.output_chars))


def _lines(text: str) -> list[str]:
    """Lines ending at ``\\n`` only (ends kept), numbered as ``grep -n`` and ``wc -l`` count them."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _page(chosen: list[str], start: int, total: int, limit: int) -> str:
    """Whole lines up to ``limit`` chars, then a marker when lines are left."""
    out: list[str] = []
    used = 0
    cut = False
    for line in chosen:
        if used + len(line) > limit:
            cut = True
            if not out:  # one huge line: show its start rather than nothing
                out.append(line[:limit])
            break
        out.append(line)
        used += len(line)
    text = "".join(out)
    shown_to = start + len(out)
    if not cut and start == 0 and shown_to == total:
        return text
    note = f"truncated at {limit} chars: " if cut else ""
    more = f"; continue with offset={shown_to + 1}" if shown_to < total else ""
    sep = "\n" if text and not text.endswith("\n") else ""
    return f"{text}{sep}[{note}lines {start + 1}-{shown_to} of {total} shown{more}]"


def _write_bytes(ctx: ToolContext, target: Path, data: bytes) -> None:
    """Write through no symbolic link and no extra hard link (see lab.sandbox.confined)."""
    root = Path(ctx.workspace).resolve()
    rel = target.relative_to(root)
    new = next((root.joinpath(*rel.parts[:i]) for i in range(1, len(rel.parts) + 1)
                if not os.path.lexists(root.joinpath(*rel.parts[:i]))), None)
    write_confined(root, rel.as_posix(), data)
    if new is not None:
        ctx.sandbox.prepare(new)  # what the lab created must be the sandbox user's too


def _written(ctx: ToolContext, target: Path, data: bytes) -> ToolResult:
    return ToolResult(f"path: {display_path(ctx, target)}\nsha256: {sha256_hex(data)}\nbytes: {len(data)}")


def _write_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    target = resolve_inside(ctx.workspace, args["path"])
    data = args["content"].encode("utf-8")
    _write_bytes(ctx, target, data)
    return _written(ctx, target, data)


def _edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    rel, old = args["path"], args["old"]
    target = resolve_inside(ctx.workspace, rel)
    if not target.is_file():
        raise ToolError(f"no such file {rel!r}; use write_file to create a file")
    data = _read_bounded(target, rel)
    if args["sha256"].strip().lower() != sha256_hex(data):
        raise ToolError("stale sha256: file changed since you read it; read it again")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{rel!r} is not UTF-8 text; use write_file") from exc
    if not old:
        raise ToolError("old must not be empty")
    count = text.count(old)
    if count != 1:
        raise ToolError(f"old text occurs {count} times in {rel!r}; it must occur exactly "
                        "once (copy it exactly, with enough context to be unique)")
    new_data = text.replace(old, args["new"], 1).encode("utf-8")
    _write_bytes(ctx, target, new_data)
    return _written(ctx, target, new_data)


def _search(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        regex = patterns.compile_pattern(args["pattern"])
    except ValueError as exc:
        raise ToolError(f"invalid regex {args['pattern']!r}: {exc}") from exc
    deadline = time.monotonic() + SEARCH_TIMEOUT_S
    base = resolve_inside(ctx.workspace, args.get("path", "."))
    hits: list[str] = []
    files, stopped = _text_files(base)
    for path in files:
        try:
            with path.open("rb") as handle:  # it may have grown since the listing: read no more than the cap
                data = handle.read(SEARCH_MAX_FILE_BYTES + 1)
        except OSError:
            continue  # unreadable files are skipped like binary ones
        if len(data) > SEARCH_MAX_FILE_BYTES:
            continue
        if b"\x00" in data[:8192]:
            continue
        shown = display_path(ctx, path)
        for number, line in enumerate(_lines(data.decode("utf-8", errors="replace")), 1):
            line = line.removesuffix("\n")
            try:
                found = patterns.search(regex, line, timeout_s=max(0.001, deadline - time.monotonic()))
            except patterns.PatternTimeout:
                raise ToolError(f"search stopped: the pattern {args['pattern']!r} did not finish within "
                                f"{SEARCH_TIMEOUT_S:g} s (nested quantifiers backtrack; simplify it)") from None
            if found:
                hits.append(f"{shown}:{number}: {line[:SEARCH_LINE_CHARS]}")
                if len(hits) > SEARCH_MAX_MATCHES:
                    break
        if len(hits) > SEARCH_MAX_MATCHES:
            break
    note = f"\n[search stopped early: {stopped}; narrow the path]" if stopped else ""
    if not hits:
        return ToolResult(f"no matches for {args['pattern']!r} in {display_path(ctx, base)}{note}")
    text = "\n".join(hits[:SEARCH_MAX_MATCHES]) + note
    if len(hits) > SEARCH_MAX_MATCHES:
        text += (f"\n[truncated: stopped after {SEARCH_MAX_MATCHES} matches; "
                 "narrow the pattern or the path]")
    return ToolResult(bound_text(text, ctx.output_chars, "narrow the pattern or the path"))


def _text_files(base: Path) -> tuple[list[Path], str]:
    """Regular files under ``base`` in sorted order (links and SEARCH_SKIP dirs skipped), and why
    the listing stopped early ("" when it did not).

    The walk is :func:`lab.sandbox.walk.walk`: iterative, never through a link,
    within its bounds (a tree past them is searched as far as the bound).
    """
    if base.is_file():
        return [base], ""
    found: list[Path] = []
    try:
        for entry in walk(base, skip=SEARCH_SKIP.__contains__):
            if entry.kind == FILE and entry.size <= SEARCH_MAX_FILE_BYTES:
                found.append(Path(entry.path))
    except TreeBoundError as exc:
        return found, str(exc)
    except OSError as exc:  # a directory vanished or cannot be listed
        return found, f"cannot list {exc.filename}: {exc.strerror or exc}"
    return found, ""


def _run_command(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    timeout_ms = min(args.get("timeoutMs", ctx.command_timeout_ms), ctx.command_timeout_ms)
    remaining_s = ctx.remaining_s()
    if remaining_s is not None:
        timeout_ms = min(timeout_ms, max(1, math.ceil(remaining_s * 1000)))
    launch = ctx.sandbox.wrap(list(args["argv"]), workspace=ctx.workspace, env=ctx.env,
                              network=ctx.network, limits=command_limits(timeout_ms))
    result = run_launch(launch, timeout_ms=timeout_ms, max_output_bytes=4 * ctx.output_chars,
                        cancel=ctx.cancel)
    not_started = start_failure(result.exit_code, result.stderr)
    if not_started:
        raise ProcessStartError(not_started)
    out = result.stdout.decode("utf-8", errors="replace")
    err = result.stderr.decode("utf-8", errors="replace")
    half = ctx.output_chars // 2
    out_chars = min(len(out), max(ctx.output_chars - min(len(err), half), half))
    shown_out = _bound_stream("stdout", out, out_chars, result.stdout_bytes,
                              result.stdout_bytes > len(result.stdout))
    shown_err = _bound_stream("stderr", err, ctx.output_chars - out_chars, result.stderr_bytes,
                              result.stderr_bytes > len(result.stderr))
    body = f"stdout:\n{shown_out}\nstderr:\n{shown_err}"
    if result.timed_out:
        status = f"timed out after {timeout_ms} ms"
    elif result.cancelled:
        status = "cancelled"
    else:
        return ToolResult(f"exit: {result.exit_code}\n{body}")
    return ToolResult(f"error: {status}\n{body}", status)


_PATH = {"type": "string", "description": "Path relative to the workspace root."}


def _params(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


TOOLS: dict[str, Tool] = {tool.name: tool for tool in (
    Tool("list_dir", "List the entries of a directory in the workspace (directories end "
         "with '/', symbolic links with '@').",
         _params([], path={**_PATH, "default": "."}), "read", _list_dir),
    Tool("read_file", "Read a text file. The result starts with its path, its sha256 (needed "
         "by edit_file) and its line count. Use offset (1-based line) and limit (lines) to "
         "page through long files.",
         _params(["path"], path=_PATH, offset={"type": "integer", "minimum": 1},
                 limit={"type": "integer", "minimum": 1}), "read", _read_file),
    Tool("write_file", "Create or overwrite a file with the given content (parent "
         "directories are created). Returns the new sha256.",
         _params(["path", "content"], path=_PATH, content={"type": "string"}),
         "write", _write_file),
    Tool("edit_file", "Replace one exact occurrence of `old` with `new` in a file. `sha256` "
         "must be the file's current sha256 from read_file (or the last edit); `old` must "
         "occur exactly once. Returns the new sha256.",
         _params(["path", "sha256", "old", "new"], path=_PATH, sha256={"type": "string"},
                 old={"type": "string"}, new={"type": "string"}), "write", _edit_file),
    Tool("search", "Search text files for a Python regular expression; prints matching "
         "lines as path:line: text.",
         _params(["pattern"], pattern={"type": "string"},
                 path={**_PATH, "description": "File or directory to search (default: all)."}),
         "read", _search),
    Tool("run_command", "Run a program in the workspace without a shell (argv list, e.g. "
         "[\"python3\", \"-m\", \"pytest\", \"-q\"]). Returns the exit code, stdout and stderr.",
         _params(["argv"], argv={"type": "array", "items": {"type": "string"}, "minItems": 1},
                 timeoutMs={"type": "integer", "minimum": 1}), "process", _run_command),
)}


def tool_schemas(names: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    """The chat-completions ``tools`` list for ``names``, in the order given.

    Raises:
        ConfigError: a name is not a known tool (lists the known ones).
    """
    unknown = [name for name in names if name not in TOOLS]
    if unknown:
        raise ConfigError(f"agent.tools: unknown tool(s) {unknown}; known: {sorted(TOOLS)}")
    return [TOOLS[name].schema() for name in names]
