"""`lab ci [KEY=VALUE …]`: the CI replay gate, the same as `doit ci` and `make ci` (SPEC R7).

Replays every bundled suite that has cassettes (or every suite under
``suite_dir``), every task, each suite with the provider and model its
cassettes name, and judges the lot; a suite without cassettes is listed as
skipped. It takes only these keys; a configuration key such as ``k=`` or
``provider=`` is refused (a replay uses what its cassettes were recorded with):

  suite=ID          replay only this suite (of the bundled ones, or of suite_dir)
  suite_dir=DIR     replay the suites under DIR (DIR/<suite id>/suite.json) instead of the bundled ones
  cassette_dir=DIR  read the recordings from DIR/<suite id>/; only when one suite is replayed
  out=DIR           also write DIR/<suite id>/report.json and report.md
  jobs=N            runs replayed at once (default 1)
  json=true         print one JSON line per run and each suite's report last (default false)
  progress=true     stream JSONL lifecycle events to stderr (default false)
  yes=true          run the code of suite_dir's third-party suites without asking (needed without a terminal)

Exit codes: 0 every replay is clean and passes; 1 a replayed task failed or
errored, nothing was replayed, or a usage or infrastructure error; 2 a run
diverged from its cassette (replay divergence); 130 cancelled.
"""

from __future__ import annotations


def ci(overrides: list[str]) -> int:
    """``lab ci KEY=VALUE…`` = ``doit ci KEY=VALUE…`` (lab.build.ci); returns the exit code (module docstring)."""
    from lab.cli.run import run_doit

    return run_doit("ci", overrides)
