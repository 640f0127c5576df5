"""Errors of the small commands (compare, admit, export, gate, gen-stress).

Their ``key=value`` options are parsed by :mod:`lab.config.options`;
:func:`guarded` turns the lab's errors into one line on stderr and the SPEC
exit code, so no command prints a traceback for a user mistake.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def guarded(command: str, body: Callable[[], int]) -> int:
    """Run ``body`` and return its exit code; a user error becomes one line on stderr.

    Exit codes: IncompatibleReports → 3; any other LabError, or an OSError
    (a path that cannot be read or written) → 1.
    """
    from lab.compare.verdicts import IncompatibleReports
    from lab.errors import LabError

    try:
        return body()
    except IncompatibleReports as exc:
        print(f"lab {command}: {exc}", file=sys.stderr)
        return 3
    except LabError as exc:
        print(f"lab {command}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"lab {command}: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
