"""The `lab` command: a thin front over the doit graph and the library.

    lab list [suite_dir=DIR] [cassette_dir=DIR]   bundled (or suite_dir) suites, versions, digests, cassettes
    lab run [OVERRIDES…]              same as `doit eval OVERRIDES…`
    lab record [OVERRIDES…]           same as `doit record OVERRIDES…`
    lab gate REPORT [min_pass_rate=1.0] [allow_flaky=false]   CI verdict on a report (exit 0/1/2)
    lab variants suite=… variant=a,b  run variants interleaved over the same runs, then compare them
    lab variants suite=… variant=a,b k=K sequential=true [round=5] [tolerance=0.05]   in rounds of
                                      repetitions; stop when a sequential test decides (k = the most)
    lab ci [suite=ID] [suite_dir=DIR] [cassette_dir=DIR] [out=DIR] [jobs=N] [json=true] [progress=true] [yes=true]
                                      replay every bundled (or suite_dir) cassette; exit 2 on divergence, 1 on failure
    lab gen-stress instances=N [out=DIR] [force=true]   write N seeded chain-walk-rules instances
    lab compare BASE CAND [json=true] [out=DIR] [tolerance=0.05]   compare two reports; exit 3 if incompatible
    lab admit BASE CAND [REPEAT_BASE REPEAT_CAND] [tolerance=0.05] [max_token_increase=0.2] [json=true]
                                      the admission rule, clause by clause; exit 0 = admit
    lab plan BASELINE delta=0.10 [power=0.8] [alpha=0.05] [variants=2] [jobs=1] [json=true]
                                      k per task and for the suite, runs, cost and time to detect delta
    lab export REPORT out=FILE [force=true] [redact=true]   one scrubbed, secret-checked JSON bundle of a run
    lab tools                         the built-in tools: names, arguments, result formats (= docs/tools.md)
    lab --version                     the lab's version; `python -m lab …` is the same as `lab …`
    lab agents install NAME           install a command agent's pinned version under the data dir
    lab agents list                   command-agent presets: pinned and installed versions, sizes

`lab COMMAND --help` describes one command; `lab run --help` lists the config
groups and keys, `lab run --cfg job …` prints the composed configuration and
its hash without running anything (also --info, --shell-completion).

Overrides use Hydra syntax (`suite=core k=5 mode=replay provider.model=x`).
Exit codes: 0 completed (whichever tasks passed), 1 usage or infrastructure
error, 2 replay divergence, 3 incompatible compare, 130 cancelled.

(For developers: each subcommand is a module of this package; it may import
anything below it (lab.build, lab.execute, …), nothing imports it.)
"""

from __future__ import annotations

import atexit
import gc
import importlib
import sys
from collections.abc import Sequence

# command -> "module:function"; each function takes the remaining argv and returns an exit code.
COMMANDS = {
    "run": "lab.cli.run:run",
    "record": "lab.cli.run:record",
    "ci": "lab.cli.ci:ci",
    "variants": "lab.cli.run:variants",
    "list": "lab.cli.listing:list_suites",
    "gate": "lab.cli.gate:gate",
    "gen-stress": "lab.cli.gen_stress:gen_stress",
    "compare": "lab.cli.compare:compare",
    "admit": "lab.cli.admit:admit",
    "plan": "lab.cli.plan:plan",
    "export": "lab.cli.export:export",
    "tools": "lab.cli.listing:list_tools",
    "agents": "lab.cli.agents:agents",
}

USAGE = (__doc__ or "").split("\n(For developers:")[0]
HYDRA_COMMANDS = ("run", "record", "ci", "variants")
"""Commands that drive the doit graph (they share --cfg, --info and --shell-completion)."""
CONFIG_HELP = ("run", "record", "variants")
"""Commands whose ``key=value`` words are Hydra overrides: their --help lists the config groups and
keys. ``lab ci`` takes keys of its own; its --help is its module's, as for the small commands."""


def command_help(command: str, handler: object) -> str:
    """``lab COMMAND --help``: its usage line from the overview, then the command's description.

    The description is the handler module's docstring when that module is about
    this command (its first line starts with ```lab COMMAND``), else the
    handler's own; either way without its usage line, without the citations of
    the specification (``(SPEC K4)``), and with reST markup made plain.
    """
    import inspect
    import re

    usage = [line.strip() for line in USAGE.splitlines() if line.strip().startswith(f"lab {command} ")]
    module_doc = inspect.getdoc(inspect.getmodule(handler)) or ""
    doc = module_doc.partition("\n")[2] if module_doc.startswith(f"`lab {command}") else ""
    doc = doc.strip() or inspect.getdoc(handler) or ""
    doc = re.sub(r" ?\(SPEC [^()]*\)", "", doc)  # the specification is not shipped with the lab
    doc = re.sub(r"SPEC [A-Z]+\d+[–-]?[A-Z]*\d*, ", "", doc)
    doc = re.sub(r":\w+:`([^`]+)`", r"\1", doc).replace("``", "`")
    lines = [f"usage: {line}" if i == 0 else f"       {line}" for i, line in enumerate(usage or [f"lab {command}"])]
    return "\n".join([*lines, "", doc.strip()]).rstrip()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lab`` console script; returns the exit code."""
    from lab.console import tolerate_closed_console

    tolerate_closed_console()  # `lab run … | head -1`: the eval goes on when the reader goes away
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(USAGE.strip())
        return 0 if args else 1
    if args[0] in {"--version", "-V"}:
        from importlib.metadata import version

        print(f"lab (reliability-lab) {version('reliability-lab')}")
        return 0
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"lab: unknown command {command!r}; try `lab --help`", file=sys.stderr)
        return 1
    module_name, function_name = COMMANDS[command].split(":")
    wants_help = "-h" in rest or "--help" in rest
    if command in HYDRA_COMMANDS:
        from lab.cli import config_flags

        if wants_help and command in CONFIG_HELP:
            print(config_flags.help_text(command))
            return 0
        if not wants_help and config_flags.handles(rest):
            return config_flags.config_flags(command, rest)
    # As dodo.py does for `doit`: the objects left at exit are not walked by a last collection.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    handler = getattr(importlib.import_module(module_name), function_name)
    if wants_help:
        print(command_help(command, handler))
        return 0
    from lab.execute import interrupt

    try:
        with interrupt.for_command():  # after a cancel, Ctrl-C again does not cut the exit cleanup short
            return int(handler(rest))
    except KeyboardInterrupt:
        from lab.cleanup import shield_until_exit

        shield_until_exit()  # also when the Ctrl-C came before an eval installed the lab's handlers
        interrupt.announce_cancelled()
        print("lab: cancelled: finished runs are kept; run the same command again to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
