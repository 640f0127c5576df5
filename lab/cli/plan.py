"""`lab plan BASELINE delta=0.10 [power=0.8] [alpha=0.05] [variants=2] [jobs=1] [json=true]`: plan a comparison (SPEC K8).

BASELINE is a ``report.json``, the directory holding one, or a run id (as
for ``lab compare``) of a live run: its per-task success rates, tokens, cost
and wall time per run are what the plan is computed from. Prints k per task
and for the suite (the task-weighted mean success rate) to detect a change of
``delta`` with ``power`` at two-sided ``alpha``, the total runs (k × tasks ×
variants), the expected cost (from the baseline's estimated cost per run;
tokens only when it was not priced) and wall time (each task's median time
per run, over ``jobs`` runs at once). ``json=true`` prints the plan document
(``lab/schemas/plan.schema.json``).

Exit codes: 0 planned, 1 usage error, a missing or invalid report, or a
replay baseline (no run-to-run variance to plan from).
"""

from __future__ import annotations

USAGE = "usage: lab plan BASELINE delta=0.10 [power=0.8] [alpha=0.05] [variants=2] [jobs=1] [json=true]"
OPTIONS = ("delta", "power", "alpha", "variants", "jobs", "json")


def plan(args: list[str]) -> int:
    """Run ``lab plan``; returns the exit code (module docstring)."""
    from lab.cli.options import guarded

    return guarded("plan", lambda: _plan(args))


def _plan(args: list[str]) -> int:
    from lab import paths
    from lab.compare.plan import plan_comparison, render_plan
    from lab.config.options import flag, split_args
    from lab.errors import ConfigError
    from lab.files import dumps_json
    from lab.store import load_report

    refs, options = split_args(args, OPTIONS)
    if len(refs) != 1:
        raise ConfigError(f"expected one baseline report, got {len(refs)}; {USAGE}")
    if "delta" not in options:
        raise ConfigError(f"delta= is required (the change to detect, e.g. delta=0.10); {USAGE}")
    as_json = flag(options, "json")
    delta = _number(options, "delta")
    power = _number(options, "power") if "power" in options else 0.8
    alpha = _number(options, "alpha") if "alpha" in options else 0.05
    variants = _count(options, "variants") if "variants" in options else 2
    jobs = _count(options, "jobs") if "jobs" in options else 1
    report = load_report(refs[0], paths.data_dir())
    doc = plan_comparison(report.doc, delta, power=power, alpha=alpha, variants=variants, jobs=jobs)
    print(dumps_json(doc) if as_json else render_plan(doc), end="")
    return 0


def _number(options: dict[str, str], key: str) -> float:
    from lab.errors import ConfigError

    try:
        value = float(options[key])
    except ValueError:
        raise ConfigError(f"{key}: expected a number in (0, 1), got {options[key]!r}") from None
    if not 0 < value < 1:
        raise ConfigError(f"{key}: expected a number in (0, 1), got {options[key]!r}")
    return value


def _count(options: dict[str, str], key: str) -> int:
    from lab.errors import ConfigError

    text = options[key].strip()
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"{key}: expected a positive integer, got {options[key]!r}")
    return int(text)
