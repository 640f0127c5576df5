"""The admission rule for a behaviour change (SPEC K4).

A change may become a default only when all four clauses pass:

1. ``improved`` — the paired run's aggregate verdict is *improved* (not
   mixed, not unchanged, not inconclusive: with fewer than 5 judged runs of
   a task on a side the compare claims no direction; see
   :mod:`lab.compare.verdicts`);
2. ``no-lost-reliability`` — no task lost reliability in the paired run;
3. ``tokens`` — tokens per success rose by at most ``max_token_increase``
   (default 0.2 = 20 %) relative to the base; the figure must be measured
   and comparable on both sides, otherwise the clause fails;
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

from lab.compare.verdicts import DEFAULT_TOLERANCE, compare_reports

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
    lost = aggregate["lostReliability"]
    reliability = Clause("no-lost-reliability", "no task lost reliability", "fail" if lost else "pass",
                         f"lost reliability: {', '.join(lost)}" if lost else "no task lost reliability")
    return [improved, reliability, _token_clause(comparison, max_token_increase)]


def _token_clause(comparison: dict[str, Any], max_token_increase: float) -> Clause:
    text = f"tokens per success rose by at most {100 * max_token_increase:g}%"
    figure = comparison["deltas"].get("tokensPerSuccess")
    if figure is None:
        return Clause("tokens", text, "fail", "tokens per success not measured in either report")
    if not figure["comparable"]:
        return Clause("tokens", text, "fail", f"tokens per success not comparable: {figure['reason']}")
    relative = figure.get("relative")
    if relative is None:  # base spent 0 tokens per success: any rise is unbounded
        ok = figure["cand"] <= 0
        return Clause("tokens", text, "pass" if ok else "fail",
                      f"tokens per success {figure['base']:g} -> {figure['cand']:g}")
    ok = relative <= max_token_increase + 1e-12
    return Clause("tokens", text, "pass" if ok else "fail",
                  f"tokens per success {figure['base']:.1f} -> {figure['cand']:.1f} ({100 * relative:+.1f}%)")


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
