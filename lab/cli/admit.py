"""`lab admit BASE CAND [REPEAT_BASE REPEAT_CAND] [tolerance=0.05] [max_token_increase=0.2] [json=true]`.

Prints every clause of the admission rule (SPEC K4, :mod:`lab.compare.admit`) with
pass / fail / not checked, then the verdict. Changes nothing.

Exit codes: 0 the verdict is *admit*; 1 it is *do not admit*, or a usage
error or a missing or invalid report; 3 a pair is incompatible (different
suite id or version).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.compare.admit import Admission

USAGE = ("usage: lab admit BASE CAND [REPEAT_BASE REPEAT_CAND] [tolerance=0.05] "
         "[max_token_increase=0.2] [json=true]")
OPTIONS = ("json", "tolerance", "max_token_increase")


def admit(args: list[str]) -> int:
    """Run ``lab admit``; returns the exit code (module docstring)."""
    from lab.cli.options import guarded

    return guarded("admit", lambda: _admit(args))


def _admit(args: list[str]) -> int:
    from lab import paths
    from lab.compare.admit import DEFAULT_MAX_TOKEN_INCREASE
    from lab.compare.admit import admit as apply_rule
    from lab.compare.verdicts import DEFAULT_TOLERANCE
    from lab.config.options import flag, fraction, split_args
    from lab.errors import ConfigError
    from lab.files import dumps_json
    from lab.store import load_report

    refs, options = split_args(args, OPTIONS)
    if len(refs) not in (2, 4):
        raise ConfigError(f"expected two or four reports, got {len(refs)}; {USAGE}")
    as_json = flag(options, "json")
    tolerance = fraction(options, "tolerance", DEFAULT_TOLERANCE)
    max_rise = fraction(options, "max_token_increase", DEFAULT_MAX_TOKEN_INCREASE, below_one=False)
    docs = [load_report(ref, paths.data_dir()).doc for ref in refs]
    repeat = (docs[2], docs[3]) if len(docs) == 4 else None
    result = apply_rule(docs[0], docs[1], repeat, tolerance=tolerance, max_token_increase=max_rise)
    if as_json:
        print(dumps_json(result.to_json()), end="")
    else:
        print(_text(result, docs[0]["header"], docs[1]["header"]))
    return 0 if result.verdict == "admit" else 1


def _text(result: Admission, base: dict[str, Any], cand: dict[str, Any]) -> str:
    from tabulate import tabulate

    rows = [(n, c.text, c.status, c.detail) for n, c in enumerate(result.clauses, 1)]
    lines = [f"admission rule: {base.get('suiteId')} {base.get('suiteVersion')}, "
             f"base {base.get('runId')} vs cand {cand.get('runId')}",
             tabulate(rows, headers=["", "clause", "status", "detail"], tablefmt="simple", disable_numparse=True),
             f"verdict: {result.verdict}"]
    if result.verdict != "admit":
        blocking = [c.id for c in result.clauses if c.status != "pass"]
        lines[-1] += f" (not passed: {', '.join(blocking)})"
    lines.append("The lab only prints this verdict; it never promotes a change itself.")
    return "\n".join(lines)
