"""Standard output whose reader may go away: ``lab run … | head -1``.

When the reading end of a pipe closes, the next write raises
``BrokenPipeError`` (Python ignores SIGPIPE). Left alone, that error would
stop whichever action was printing, be taken for a fault of the data dir,
and be printed again at exit. :func:`tolerate_closed_stdout` wraps
``sys.stdout`` so that once its reader has gone, what follows is discarded:
the eval goes on to write its records and report, and the command exits with
the eval's own code. Nothing else writes to a closed pipe more gracefully:
restoring SIGPIPE's default action would also kill the process on a write
to a socket whose peer has gone (the gateway, the provider clients).
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO


class ClosedPipeTolerant:
    """A text stream that writes to ``stream`` until its reader goes away, then to /dev/null.

    Every other attribute (``isatty``, ``fileno``, ``encoding``, …) is the
    wrapped stream's.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._discard_from_now_on()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
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


def tolerate_closed_stdout() -> None:
    """Wrap ``sys.stdout`` in :class:`ClosedPipeTolerant` (once; a no-op when already wrapped)."""
    if not isinstance(sys.stdout, ClosedPipeTolerant) and sys.stdout is not None:
        sys.stdout = ClosedPipeTolerant(sys.stdout)
