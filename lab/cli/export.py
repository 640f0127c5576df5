"""`lab export REPORT out=FILE [force=true] [redact=true]`: one shareable JSON bundle of a run (SPEC E1–E3).

REPORT is what `lab compare` takes: a ``report.json``, the directory holding
one (a variants command's ``<command>/<variant>/`` too), or a run id
(``<suite>.v<version>.<cfg12>.<endpoint>.k<k>.s<seed>``) found in the run store;
when a run id names several reports, give the path of the one you mean.
Paths become placeholders, and the bundle is refused (nothing written)
when the secret scanner finds a likely secret; the message names the field.
With ``redact=true`` each secret is replaced by a marker naming its kind
(``<secret:github-token>``) and the bundle is written.

Exit codes: 0 written; 1 refused (a secret, an existing file without
``force=true``, a missing, ambiguous or invalid report) or a usage error.
"""

from __future__ import annotations

import os
from pathlib import Path

USAGE = "usage: lab export REPORT out=FILE [force=true] [redact=true]"
OPTIONS = ("out", "force", "redact")


def export(args: list[str]) -> int:
    """Run ``lab export``; returns the exit code (module docstring)."""
    from lab.cli.options import guarded

    return guarded("export", lambda: _export(args))


def _export(args: list[str]) -> int:
    from lab import paths
    from lab.config.options import flag, split_args
    from lab.errors import ConfigError
    from lab.export.bundle import export_run

    refs, options = split_args(args, OPTIONS)
    if len(refs) != 1:
        raise ConfigError(f"expected one REPORT (a report.json, its directory or a run id), got {len(refs)}; "
                          f"{USAGE}")
    if not options.get("out"):
        raise ConfigError(f"out=FILE is required; {USAGE}")
    result = export_run(refs[0], Path(options["out"]).absolute(), data=paths.data_dir(), env=os.environ,
                        force=flag(options, "force"), redact=flag(options, "redact"))
    print(f"exported {result.run_id} ({result.report_dir}) to {result.out} "
          f"({result.runs} runs, {result.size_bytes} bytes)")
    return 0
