"""The admission rule for a behaviour change (SPEC K4).

A change may become a default only when all four clauses pass:

1. ``improved`` — the paired run's aggregate verdict is *improved*: the
   stratified test rejects at α = 0.05, the rise clears the tolerance and no
   task lost reliability (not mixed, not unchanged, not inconclusive; see
   :mod:`lab.compare.decide`);
2. ``no-lost-reliability`` — a safety gate, deliberately stricter than the
   *mixed* verdict: it fails when **any** paired task's own Fisher exact test,
   *unadjusted* for the number of tasks, shows a fall at α = 0.05. Holm's
   correction protects claims; a gate that fails closed must instead catch a
   truly broken task, which after Holm it cannot at k = 5 with 7 tasks or
   more (the smallest Fisher p of 5/5 against 0/5 is 0.0079). Measured by
   ``benchmarks/compare_error_rates.py`` (docs/compare.md): false alarms
   under A/A 1.7–19.3 % (more tasks and runs, more alarms), one broken task
   caught in ≥ 97 % of pairs at k = 5 and in every pair from k = 10;
3. ``tokens`` — the whole spend per success rose by at most
   ``max_token_increase`` (default 0.2 = 20 %), judged on the estimate; its
   95 % interval is printed beside it. The figure is total tokens per
   success (main loop plus compaction calls; the compaction tokens per
   success shown separately), which is
   comparable across compaction settings, so a compaction A/B can be
   admitted. When a report lacks it (an older report) the clause judges
   main-loop tokens per success, not comparable across compaction settings.
   Unmeasured or not comparable: the clause fails;
4. ``repeated`` — a repeated pair (fresh samples: the same two
   configurations at other seeds) clears the same three clauses. Without a
   repeated pair this clause is *not checked*, and the verdict cannot be
   *admit*.

The lab only prints this verdict; it never promotes anything itself.
``lab admit`` exits 0 when the verdict is *admit*, 1 otherwise (also for a
usage error), 3 when a pair is incompatible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from lab.compare.verdicts import ALPHA, DEFAULT_TOLERANCE, compare_reports

ADMISSION_SCHEMA_VERSION = 1
DEFAULT_MAX_TOKEN_INCREASE = 0.2
ClauseStatus = Literal["pass", "fail", "not checked"]
Verdict = Literal["admit", "do not admit"]


@dataclass(frozen=True)
class Clause:
    """One clause of the admission rule: its id, its wording, pass/fail/not checked and why."""

    id: str
    text: str
    status: ClauseStatus
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "text": self.text, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class Admission:
    """The admission verdict and its clauses (``verdict`` is *admit* only when every clause passes)."""

    verdict: Verdict
    clauses: tuple[Clause, ...]
    tolerance: float
    max_token_increase: float

    def to_json(self) -> dict[str, Any]:
        return {"schemaVersion": ADMISSION_SCHEMA_VERSION, "verdict": self.verdict,
                "clauses": [c.to_json() for c in self.clauses], "tolerance": self.tolerance,
                "maxTokenIncrease": self.max_token_increase}


def admit(base: dict[str, Any], cand: dict[str, Any], repeat: tuple[dict[str, Any], dict[str, Any]] | None = None,
          *, tolerance: float = DEFAULT_TOLERANCE,
          max_token_increase: float = DEFAULT_MAX_TOKEN_INCREASE) -> Admission:
    """Apply the admission rule to a paired run and, optionally, its repetition.

    Args:
        base, cand: report documents of the paired run.
        repeat: (base, cand) reports of the repeated pair, or None.
        tolerance: the aggregate tolerance band (see ``compare_reports``).
        max_token_increase: the largest allowed relative rise of tokens per
            success (0.2 = 20 %), >= 0.

    Returns:
        The :class:`Admission`; changes nothing on disk.

    Raises:
        IncompatibleReports: a pair measures different suites or versions.
        ValueError: tolerance or max_token_increase out of range.
    """
    if max_token_increase < 0:
        raise ValueError(f"max_token_increase must be >= 0, got {max_token_increase!r}")
    first = _three_clauses(compare_reports(base, cand, tolerance=tolerance), max_token_increase)
    clauses = [*first, _repeated_clause(base, cand, repeat, tolerance, max_token_increase)]
    verdict: Verdict = "admit" if all(c.status == "pass" for c in clauses) else "do not admit"
    return Admission(verdict, tuple(clauses), tolerance, max_token_increase)


def _three_clauses(comparison: dict[str, Any], max_token_increase: float) -> list[Clause]:
    aggregate = comparison["aggregate"]
    improved = Clause("improved", "the paired run is improved (not mixed, not unchanged, not inconclusive)",
                      "pass" if aggregate["verdict"] == "improved" else "fail",
                      f"aggregate verdict {aggregate['verdict']}: {aggregate['reason']}")
    return [improved, _reliability_clause(comparison), _token_clause(comparison, max_token_increase)]


def _reliability_clause(comparison: dict[str, Any]) -> Clause:
    """The gate: no paired task's unadjusted Fisher test shows a fall at α (module docstring)."""
    from lab.compare.inference import fisher_p

    text = f"no task lost reliability (no task's own exact test shows a fall at α={ALPHA:g}, uncorrected)"
    fell = []
    for t in comparison["tasks"]:
        if not t["paired"] or t["successRateDelta"] >= 0:
            continue
        b, c = t["base"], t["cand"]
        p = fisher_p(b["passes"], b["judged"], c["passes"], c["judged"])
        if p <= ALPHA:
            fell.append(f"{t['taskId']} ({b['passes']}/{b['judged']} -> {c['passes']}/{c['judged']}, p={p:.3g})")
    if fell:
        return Clause("no-lost-reliability", text, "fail", f"fell: {'; '.join(fell)}")
    return Clause("no-lost-reliability", text, "pass", "no task's rate fell significantly")


def _token_clause(comparison: dict[str, Any], max_token_increase: float) -> Clause:
    text = f"tokens per success (main loop + compaction) rose by at most {100 * max_token_increase:g}%"
    deltas = comparison["deltas"]
    total = deltas.get("totalTokensPerSuccess") or {}
    name = "totalTokensPerSuccess" if "base" in total and "cand" in total else "tokensPerSuccess"
    figure = deltas.get(name)
    label = "total tokens per success" if name == "totalTokensPerSuccess" else "tokens per success (main loop only)"
    if figure is None:
        return Clause("tokens", text, "fail", "tokens per success not measured in either report")
    if not figure["comparable"]:
        return Clause("tokens", text, "fail", f"{label} not comparable: {figure['reason']}")
    extra = _compaction_detail(deltas) if name == "totalTokensPerSuccess" else ""
    relative = figure.get("relative")
    if relative is None:  # base spent 0 tokens per success: any rise is unbounded
        ok = figure["cand"] <= 0
        return Clause("tokens", text, "pass" if ok else "fail",
                      f"{label} {figure['base']:g} -> {figure['cand']:g}{extra}")
    ok = relative <= max_token_increase + 1e-12
    bounds = figure.get("relative95")
    shown = "" if bounds is None else f", 95% CI [{100 * bounds[0]:+.1f}%, {100 * bounds[1]:+.1f}%]"
    return Clause("tokens", text, "pass" if ok else "fail",
                  f"{label} {figure['base']:.1f} -> {figure['cand']:.1f} ({100 * relative:+.1f}%{shown}; "
                  f"judged on the estimate){extra}")


def _compaction_detail(deltas: dict[str, Any]) -> str:
    """The compaction calls' tokens per success, shown apart: total minus main-loop tokens per success, per side."""
    total, main = deltas.get("totalTokensPerSuccess") or {}, deltas.get("tokensPerSuccess") or {}
    sides = []
    for side in ("base", "cand"):
        if side in total and side in main:
            sides.append(f"{side} {total[side] - main[side]:.1f}")
    return f"; compaction tokens per success: {', '.join(sides)}" if sides else ""


def _repeated_clause(base: dict[str, Any], cand: dict[str, Any],
                     repeat: tuple[dict[str, Any], dict[str, Any]] | None,
                     tolerance: float, max_token_increase: float) -> Clause:
    text = "a repeated pair clears the same three clauses"
    if repeat is None:
        return Clause("repeated", text, "not checked", "no repeated pair given (REPEAT_BASE REPEAT_CAND)")
    problem = _repeat_problem(base, cand, repeat)
    if problem:
        return Clause("repeated", text, "fail", problem)
    again = _three_clauses(compare_reports(repeat[0], repeat[1], tolerance=tolerance), max_token_increase)
    failed = [c for c in again if c.status != "pass"]
    if failed:
        return Clause("repeated", text, "fail",
                      "; ".join(f"{c.id}: {c.detail}" for c in failed))
    return Clause("repeated", text, "pass", "the repeated pair is improved, lost no reliability, "
                  "and kept tokens per success within the limit")


def _repeat_problem(base: dict[str, Any], cand: dict[str, Any],
                    repeat: tuple[dict[str, Any], dict[str, Any]]) -> str | None:
    """Why the repeated pair is not a repetition of (base, cand), or None.

    A repetition compares the same two configurations (config hashes) on the
    same suite version, with fresh samples: each side at a seed other than the
    first pair's (runs with the same inputs are shared, never re-drawn).
    """
    for name, first, again in (("base", base, repeat[0]), ("cand", cand, repeat[1])):
        h1, h2 = first["header"], again["header"]
        if (h1.get("suiteId"), h1.get("suiteVersion")) != (h2.get("suiteId"), h2.get("suiteVersion")):
            return f"the repeated {name} measures another suite or suite version"
        if h1.get("configHash") != h2.get("configHash"):
            return f"the repeated {name} has another configuration (config hash differs)"
        if h1.get("seed") == h2.get("seed"):
            return (f"the repeated {name} uses the same seed {h1.get('seed')}: its runs are the same samples; "
                    "repeat with another seed")
    return None
