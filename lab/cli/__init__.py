"""The ``lab`` command: a thin front over the doit graph and the library.

    lab list                          bundled suites, versions, digests, cassettes
    lab run [OVERRIDES…]              same as `doit eval OVERRIDES…`
    lab record [OVERRIDES…]           same as `doit record OVERRIDES…`

Overrides use Hydra syntax (``suite=core k=5 mode=replay provider.model=x``).
Exit codes: 0 completed (whichever tasks passed), 1 usage or infrastructure
error, 2 replay divergence, 130 cancelled.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# command -> "module:function"; each function takes the remaining argv and returns an exit code.
COMMANDS = {
    "run": "lab.cli.run:run",
    "record": "lab.cli.run:record",
    "list": "lab.cli.listing:list_suites",
}

USAGE = __doc__ or ""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lab`` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(USAGE.strip())
        return 0 if args else 1
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"lab: unknown command {command!r}; try `lab --help`", file=sys.stderr)
        return 1
    module_name, function_name = COMMANDS[command].split(":")
    handler = getattr(importlib.import_module(module_name), function_name)
    try:
        return int(handler(rest))
    except KeyboardInterrupt:
        print("lab: cancelled", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
