"""Sequential variants: the rounds of ``lab variants … sequential=true [round=5]`` (SPEC K9).

k is then the most repetitions per task. The command runs the interleaved
variants in rounds: round r builds the ordinary variants graph with
``k = min(r · round, k)`` — the runs of earlier rounds are up to date, so
each round executes only its new repetitions, as ordinary run records — and
after each round looks at the two variants' reports with the group-sequential
test of :mod:`lab.compare.sequential`. It stops as soon as that test decides
(*improved*, *regressed*, or *unchanged* within the tolerance); otherwise it
runs to k and says *inconclusive*. Runs of later rounds are never built.

The records of a sequential command live under a directory keyed by its
overrides without ``k``, ``round`` and ``tolerance``
(``<a>_vs_<b>.seq.s<seed>.<key>``), so the same command with a larger k
continues from them.

:func:`lab.cli.run.variants` drives the rounds (one build per round);
:data:`ACTIVE` tells the variants graph (:mod:`lab.build.variants`) that it
builds one round, and :func:`round_action` is what its comparison task does then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.errors import ConfigError
from lab.files import loads_json, read_text

OPTIONS = ("sequential", "round", "tolerance")
"""The sequential command's own words; they are not Hydra overrides."""
DEFAULT_ROUND = 5
ALPHA = 0.05


@dataclass
class SequentialRun:
    """One sequential variants command: its design and the looks made so far."""

    k: int
    round_size: int
    tolerance: float
    overrides: list[str]
    """The command's overrides without ``k``, ``sequential``, ``round`` and ``tolerance``."""
    looks: list[dict[str, Any]] = field(default_factory=list)
    """Every look made so far (lab.compare.sequential_doc.look), one per finished round."""
    executed: int = 0
    """Runs executed by the finished rounds of this command (not those up to date)."""
    decided: bool = False
    """Whether the comparison was written: the test decided, or k was reached."""

    @property
    def fractions(self) -> tuple[float, ...]:
        from lab.compare.sequential import information_fractions

        return information_fractions(self.k, self.round_size)

    @property
    def schedule(self) -> list[int]:
        """Repetitions per task after each round."""
        return [round(t * self.k) for t in self.fractions]

    def round_overrides(self, index: int) -> list[str]:
        """The variants overrides of round ``index`` (0-based): k of that round; preflight once."""
        words = [o for o in self.overrides if not (index and o.startswith("preflight="))]
        return [*words, f"k={self.schedule[index]}", *(["preflight=false"] if index else [])]


ACTIVE: list[SequentialRun] = []
"""The sequential command being driven, if any (at most one)."""


def sequential_requested(overrides: list[str]) -> bool:
    """Whether ``sequential=true`` is among ``overrides`` (the last one wins).

    Raises:
        ConfigError: a value other than true/false.
    """
    from lab.config.options import BOOLEANS

    wanted = False
    for value in (o.split("=", 1)[1] for o in overrides if o.startswith("sequential=")):
        if value.lower() not in BOOLEANS:
            raise ConfigError(f"variants: sequential must be true or false, got {value!r}")
        wanted = BOOLEANS[value.lower()]
    return wanted


def parse_sequential(overrides: list[str]) -> SequentialRun:
    """The design of ``lab variants … sequential=true k=K [round=R] [tolerance=T]``.

    Raises:
        ConfigError: k missing or not a positive integer, round not a positive
            integer, tolerance outside [0, 1), or round/tolerance without sequential=true.
    """
    given = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in overrides if "=" in o}
    if "k" not in given:
        raise ConfigError("sequential=true needs k=K, the most repetitions per task")
    k = _positive(given["k"], "k")
    round_size = _positive(given.get("round", str(DEFAULT_ROUND)), "round")
    from lab.compare.verdicts import DEFAULT_TOLERANCE

    try:
        tolerance = float(given.get("tolerance", DEFAULT_TOLERANCE))
    except ValueError:
        tolerance = -1.0
    if not 0 <= tolerance < 1:
        raise ConfigError(f"tolerance must be a fraction in [0, 1), got {given.get('tolerance')!r}")
    rest = [o for o in overrides if o.split("=", 1)[0] not in (*OPTIONS, "k")]
    return SequentialRun(k=k, round_size=min(round_size, k), tolerance=tolerance, overrides=rest)


def _positive(text: str, key: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"{key} must be a positive integer with sequential=true, got {text!r}")
    return int(text)


def check_options(overrides: list[str]) -> list[str]:
    """``overrides`` without the sequential words, when no sequential command is being driven.

    Raises:
        ConfigError: sequential=true under ``doit variants`` (the rounds need
            ``lab variants``), or round/tolerance without sequential=true.
    """
    if ACTIVE:
        return overrides
    words = {o.split("=", 1)[0] for o in overrides}
    if sequential_requested(overrides):
        raise ConfigError("variants: sequential=true runs its rounds under `lab variants` (one build per "
                          "round); use `lab variants … sequential=true`")
    if words & {"round", "tolerance"}:
        raise ConfigError("variants: round= and tolerance= apply to sequential=true only")
    return [o for o in overrides if not o.startswith("sequential=")]


def round_action(prepared: list[tuple[str, Any]], root: Path, as_json: bool) -> bool:
    """Look at this round's reports; when decided (or at k) write the comparison and print it.

    Returns:
        Whether the command stops after this round.
    """

    from lab.compare.sequential_doc import apply_sequential, look, sequential_block, sequential_markdown
    from lab.compare.verdicts import compare_reports, render_comparison_markdown, write_comparison
    from lab.files import write_atomic

    run = ACTIVE[0]
    base = loads_json(read_text(root / prepared[0][0] / "report.json"))
    cand = loads_json(read_text(root / prepared[1][0] / "report.json"))
    index = len(run.looks)
    try:
        made = look(base, cand, fractions=run.fractions, index=index, alpha=ALPHA, tolerance=run.tolerance)
    except ValueError as exc:  # no task judged on both sides: nothing to test
        made = {"round": index + 1, "runsPerTask": int(base["header"]["k"]),
                "informationFraction": run.fractions[index], "boundary": 0.0, "delta": 0.0, "z": 0.0,
                "repeatedInterval": [-1.0, 1.0], "alphaSpent": 0.0,
                "decision": "inconclusive" if index == len(run.fractions) - 1 else "continue",
                "reason": f"no test: {exc}"}
    run.looks.append(made)
    if made["decision"] == "continue":
        if not as_json:
            print(f"round {made['round']} of {len(run.fractions)}: {made['runsPerTask']} runs per task and "
                  f"variant: {made['reason']}; next round", flush=True)
        return False
    block = sequential_block(run.looks, base, cand, k=run.k, round_size=run.round_size,
                             rounds=len(run.fractions), alpha=ALPHA, tolerance=run.tolerance)
    doc = apply_sequential(compare_reports(base, cand, tolerance=run.tolerance), block)
    _, md_path = write_comparison(root, doc, reports=(root / prepared[0][0], root / prepared[1][0]))
    text = render_comparison_markdown(doc).rstrip("\n") + "\n\n" + sequential_markdown(doc["sequential"])
    write_atomic(md_path, text.encode("utf-8"))
    run.decided = True
    if not as_json:
        print(text, flush=True)
    return True
