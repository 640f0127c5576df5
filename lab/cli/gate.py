"""`lab gate REPORT [min_pass_rate=…] [allow_flaky=false]`: the CI verdict on a report.

REPORT is a ``report.json``, the directory holding one, or a run id. An eval
exits 0 whichever tasks passed (a failing task is data); the gate decides,
stating every reason on a line of its own:

- exit 2: a run diverged from its cassette (replay divergence);
- exit 1: a run errored, a planned run has no record, nothing was judged,
  the success rate is below ``min_pass_rate`` (default 1.0), or a task
  failed (a judged run of it did not pass; with ``allow_flaky=true`` a task
  that passed at least once is not failed, though the rate still counts
  its failures); also a usage error or a missing or invalid report;
- exit 0 otherwise.
"""

from __future__ import annotations

OPTIONS = ("min_pass_rate", "allow_flaky")
USAGE = "usage: lab gate REPORT [min_pass_rate=1.0] [allow_flaky=false]"


def gate(args: list[str]) -> int:
    """Run the gate (``lab.compare.gate``); exit 0 pass, 1 failed or usage error, 2 replay divergence."""
    from lab.cli.options import guarded

    return guarded("gate", lambda: _gate(args))


def _gate(args: list[str]) -> int:
    from lab.compare.gate import evaluate, load_report
    from lab.config.options import flag, split_args
    from lab.errors import ConfigError

    reports, options = split_args(args, OPTIONS)
    if len(reports) != 1:
        raise ConfigError(f"expected one REPORT (a report.json, its directory or a run id), "
                          f"got {len(reports)}: {USAGE}")
    result = evaluate(load_report(reports[0]), min_pass_rate=_rate(options.get("min_pass_rate", "1.0")),
                      allow_flaky=flag(options, "allow_flaky"))
    print(result.text())
    return result.code


def _rate(text: str) -> float:
    from lab.errors import ConfigError

    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"min_pass_rate: expected a number in [0, 1], got {text!r}")
    return value
