"""`lab gate REPORT [min_pass_rate=…] [allow_flaky=false]`: the CI verdict on a report."""

from __future__ import annotations

import sys
from pathlib import Path

OPTIONS = ("min_pass_rate", "allow_flaky")
BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def gate(args: list[str]) -> int:
    """Run the gate (``lab.gate``); exit 0 pass, 1 failed or usage error, 2 replay divergence."""
    from lab.errors import LabError
    from lab.gate import evaluate, load_report

    try:
        report, min_pass_rate, allow_flaky = _parse(args)
        doc = load_report(report)
    except (LabError, ValueError) as exc:
        print(f"lab gate: {exc}", file=sys.stderr)
        return 1
    result = evaluate(doc, min_pass_rate=min_pass_rate, allow_flaky=allow_flaky)
    print(result.text())
    return result.code


def _parse(args: list[str]) -> tuple[Path, float, bool]:
    """(report path, min_pass_rate, allow_flaky) from ``REPORT key=value…``.

    Raises:
        ValueError: no report, two reports, an unknown option or a bad value (one line).
    """
    options: dict[str, str] = {}
    paths: list[str] = []
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and key in OPTIONS:
            options[key] = value
        elif sep and key.isidentifier():
            raise ValueError(f"unknown option {key!r}; expected {' or '.join(f'{o}=…' for o in OPTIONS)}")
        else:
            paths.append(arg)
    if len(paths) != 1:
        raise ValueError(f"expected one REPORT (a report.json or its directory), got {len(paths)}: "
                         "usage: lab gate REPORT [min_pass_rate=1.0] [allow_flaky=false]")
    try:
        min_pass_rate = float(options.get("min_pass_rate", "1.0"))
    except ValueError:
        raise ValueError(f"min_pass_rate: expected a number in [0, 1], got {options['min_pass_rate']!r}") from None
    if not 0.0 <= min_pass_rate <= 1.0:
        raise ValueError(f"min_pass_rate: expected a number in [0, 1], got {options['min_pass_rate']!r}")
    flag = options.get("allow_flaky", "false").lower()
    if flag not in BOOLEANS:
        raise ValueError(f"allow_flaky: expected true or false, got {options['allow_flaky']!r}")
    return Path(paths[0]), min_pass_rate, BOOLEANS[flag]
