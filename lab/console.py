"""Console streams whose reader may go away: ``lab run … | head -1``, ``2>&1 | head``, ``>&-``.

When the reading end of a pipe closes, the next write raises
``BrokenPipeError`` (Python ignores SIGPIPE). Left alone, that error would
stop whichever action was printing, be taken for a fault of the data dir,
and be printed again at exit. :func:`tolerate_closed_console` wraps
``sys.stdout`` and ``sys.stderr`` so that once a stream cannot be written
(its reader has gone, it was closed before the command started, or the
device refuses the bytes, as ``/dev/full`` does), what follows on it is
discarded: the eval goes on to write its records and report, which are what
it exists for, and the command exits with the eval's own code.

Nothing else handles a closed pipe this way: restoring SIGPIPE's default
action would also kill the process on a write to a socket whose peer has
gone (the gateway, the provider clients).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, TextIO

_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\u202e``).

    For text the lab did not choose (file names an agent made, server and
    verifier messages) on its way to a terminal, report.md or a summary:
    C0 and C1 controls (ESC starts terminal sequences that retitle windows,
    clear screens or rewrite earlier lines), DEL, and the bidirectional
    marks and overrides that reorder what a reader sees. Everything else,
    non-ASCII letters included, is kept.
    """
    return _UNSHOWABLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def print_line(text: str, stream: TextIO | None = None) -> None:
    """Write ``text`` and a newline to ``stream`` (default: ``sys.stdout`` at the call) in one
    ``write``, then flush.

    What runs print while other runs finish in other threads (``jobs=N``) goes through here:
    ``print`` writes the text and the newline in two calls, so a line of one thread could end in
    the middle of another's (two JSON lines of ``json=true`` on one line, a progress event inside
    a warning). One call per line keeps every line whole.
    """
    target = sys.stdout if stream is None else stream
    target.write(text + "\n")
    target.flush()


class ClosedPipeTolerant:
    """A text stream that writes to ``stream`` until a write fails, then to /dev/null.

    Every other attribute (``isatty``, ``fileno``, ``encoding``, …) is the
    wrapped stream's.

    Attributes:
        reader_gone: True once a write or flush failed (``OSError``: a closed
            pipe, a full device).
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError:
            self._discard_from_now_on()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            self._discard_from_now_on()

    def _discard_from_now_on(self) -> None:
        """Point the stream's file descriptor at /dev/null; its pending text goes there too."""
        self.reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)
        try:
            self._stream.flush()
        except OSError:
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def tolerate_closed_console() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` in :class:`ClosedPipeTolerant` (once each).

    A stream closed before the command started (``>&-``: Python sets it to
    None) becomes /dev/null. A stdout whose encoding is not a Unicode one
    (``PYTHONIOENCODING=ascii``) writes ``?`` for a character it cannot encode
    (the ``·`` of the banner) instead of failing the command; stderr already
    escapes them (Python's ``backslashreplace``).
    """
    import codecs

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the process's own stream)
        if name == "stdout" and not isinstance(stream, ClosedPipeTolerant) and hasattr(stream, "reconfigure"):
            try:
                unicode = codecs.lookup(stream.encoding or "utf-8").name.startswith("utf")
            except LookupError:
                unicode = False
            if not unicode and stream.errors == "strict":
                stream.reconfigure(errors="replace")
        if not isinstance(stream, ClosedPipeTolerant):
            setattr(sys, name, ClosedPipeTolerant(stream))
