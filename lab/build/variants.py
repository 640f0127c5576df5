"""Run variants side by side and compare them (SPEC VA1–VA2).

``lab variants suite=core variant=a,b [k=5]`` (or ``doit variants …``) plans
every variant over the same tasks, repetitions and seeds and runs them
interleaved — A B for the first planned run, B A for the next, and so on — so
drift in the provider or the machine falls on both sides alike. Each variant
gets its own report directory; ``comparison.json`` and ``comparison.md``
(first variant = base, second = candidate) sit at the root.

The variants are the values of exactly one sweep override: ``variant=a,b``
(option files in ``conf/variant/``) or any measured key, e.g.
``provider.model=m1,m2``. The shortcut ``compare_key=KEY compare_value=VALUE``
compares the configuration as composed ("unset") with ``KEY=VALUE`` ("set").
Replay mode is refused: a replay measures the harness, not a variant.

With ``sequential=true`` (``lab variants`` only) the same graph is built once
per round of repetitions until a group-sequential test decides; see
:mod:`lab.build.sequential`.

With ``json=true`` stdout holds JSON lines only, each with a ``type``: one
``variant_report`` line per variant (``variant``, ``reportDir``, ``report``:
the report document) and one ``comparison`` line (``path`` of
comparison.json, ``comparison``: the comparison document), in that order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lab import paths
from lab.errors import ConfigError
from lab.files import loads_json, read_text

PLAIN = re.compile(r"[^A-Za-z0-9._-]+")


def split_variants(overrides: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(common overrides, [(label, overrides of that variant)]).

    Raises:
        ConfigError: no sweep, more than one sweep, fewer than two values,
            or compare_key without compare_value.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = dict(o.split("=", 1) for o in overrides)
    if "compare_key" in given or "compare_value" in given:
        if not given.get("compare_key") or "compare_value" not in given:
            raise ConfigError("variants: give both compare_key=KEY and compare_value=VALUE")
        key, value = given.pop("compare_key"), given.pop("compare_value")
        common = [f"{k}={v}" for k, v in given.items()]
        return common, [("unset", []), (_label(f"{key}={value}"), [f"{key}={value}"])]
    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides(list(overrides))
    except Exception as exc:  # Hydra's parser error type; the message names the override
        raise ConfigError(f"variants: cannot parse overrides: {str(exc).splitlines()[0]}") from None
    sweeps = [o for o in parsed if o.is_sweep_override()]
    if len(sweeps) != 1:
        raise ConfigError("variants: give exactly one sweep, e.g. variant=a,b or provider.model=m1,m2 "
                          f"(found {len(sweeps)})")
    sweep = sweeps[0]
    key = sweep.get_key_element()
    from lab.config.schema import is_measured_key

    if key != "variant" and not is_measured_key(key):
        raise ConfigError(f"variants: {key} is not part of the measured configuration, so its values "
                          "cannot differ in what is measured; sweep variant=…, agent.*, provider.model "
                          "or provider.reasoning_effort (or use lab run -m)")
    values = [str(v) for v in sweep.sweep_string_iterator()]
    if len(values) < 2:
        raise ConfigError(f"variants: {key} needs at least two values")
    common = [str(o.input_line) for o in parsed if not o.is_sweep_override()]
    return common, [(_label(v), [f"{key}={v}"]) for v in values]


def _label(text: str) -> str:
    return PLAIN.sub("_", text).strip("_") or "variant"


def prepare_variants(overrides: list[str]) -> tuple[list[tuple[str, Any]], Path]:
    """Prepared evals per variant (same tasks, k and seed) and the root directory.

    Raises:
        ConfigError: replay mode, different suites, or two variants with
            the same measured configuration (nothing would differ).
    """
    from lab.build.graph import prepare, provider_preflight
    from lab.build.sequential import ACTIVE, check_options

    overrides = check_options(overrides)
    common, variants = split_variants(overrides)
    if ACTIVE and len(variants) != 2:
        raise ConfigError(f"variants: sequential=true compares exactly two variants, got {len(variants)}")
    out = next((o.split("=", 1)[1] for o in common if o.startswith("out=")), None)
    # out= is the root here, not each report; json= is the variants' own output (variant_json_lines)
    common = [o for o in common if not o.startswith(("out=", "json="))]
    prepared = [(label, prepare([*common, *extra], basename="variants", check_provider=False))
                for label, extra in variants]
    first = prepared[0][1]
    if first.ctx.config.mode == "replay":
        raise ConfigError("variants: replay mode is refused: a replay measures the harness alone, "
                          "not a variant (use mode=live or mode=record)")
    hashes: dict[str, str] = {}
    for label, prep in prepared:
        if prep.ctx.config_hash in hashes:
            raise ConfigError(f"variants: {label} and {hashes[prep.ctx.config_hash]} have the same measured "
                              f"configuration (config {prep.ctx.config_hash[:12]}); nothing would differ")
        hashes[prep.ctx.config_hash] = label
    for _, prep in prepared:
        provider_preflight(prep.ctx.config)
    if ACTIVE:  # a round of a sequential command: its records are kept whatever k (lab.build.sequential)
        name = "_vs_".join(label for label, _ in prepared) + f".seq.s{first.ctx.config.seed}"
        key = command_key(ACTIVE[0].overrides)
    else:
        name = "_vs_".join(label for label, _ in prepared) + f".k{first.k}.s{first.ctx.config.seed}"
        key = command_key(overrides)
    home = paths.data_dir() / first.ctx.suite.id / "variants" / f"{name}.{key}"
    root = Path(out).absolute() if out not in (None, "", "null") else home
    from lab.files import unwritable_dir_reason

    reason = unwritable_dir_reason(root)
    if reason:  # before any run, not after the last one
        raise ConfigError(f"variants: out: cannot write the comparison to {root}: {reason}")
    for label, prep in prepared:
        # Runs of a variants command are its own: an eval with other jobs, or another variants
        # command, never lends its records (VA2: both sides executed here, interleaved).
        prep.store = home / "store" / label
        prep.ctx.work_dir = prep.store / "work"
        prep.ctx.events = prep.ctx.events.child({"variant": label}, path=root / "events.jsonl")
        prep.ctx.label = label
    from lab.build.cmdline import building

    if building():  # before any run, on the stores the runs land in
        from lab.build.baseline import check_baseline

        for _, prep in prepared:
            check_baseline(prep)
    return prepared, root


OUTPUT_KEYS = ("out", "progress", "json", "force", "overwrite", "yes", "preflight")
"""Overrides that change where or how results are shown, not which runs are made."""


def command_key(overrides: list[str]) -> str:
    """12 hex digits naming a variants command by its overrides (output-only keys left out, order ignored)."""
    from lab.canonical import canonical_hash

    kept = sorted(o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in OUTPUT_KEYS)
    return canonical_hash(kept)[:12]


def interleaved(prepared: list[tuple[str, Any]]) -> Iterator[tuple[str, Any, Any]]:
    """(label, prepared eval, run spec) in the order A B, B A, A B … (VA2)."""
    specs = prepared[0][1].specs
    for j, spec in enumerate(specs):
        order = prepared if j % 2 == 0 else list(reversed(prepared))
        for label, prep in order:
            yield label, prep, spec


def task_variants() -> Iterator[dict[str, Any]]:
    """Run variants interleaved over the same runs and compare them (doit variants suite=… variant=a,b)."""
    from lab.build.cmdline import cmdline_overrides
    from lab.build.creators import creator

    yield from creator("variants", lambda: (*prepare_variants(cmdline_overrides()),
                                            json_requested(cmdline_overrides())),
                       lambda planned: variant_tasks(*planned))


def json_requested(overrides: list[str]) -> bool:
    """Whether ``json=true`` was given (true/1/yes, false/0/no; the last one wins).

    Raises:
        ConfigError: any other value, naming it.
    """
    from lab.config.options import BOOLEANS

    wanted = False
    for value in (o.split("=", 1)[1] for o in overrides if o.startswith("json=")):
        if value.lower() not in BOOLEANS:
            raise ConfigError(f"variants: json must be true or false, got {value!r}")
        wanted = BOOLEANS[value.lower()]
    return wanted


def variant_json_lines(prepared_dirs: list[tuple[str, Path]], root: Path) -> Iterator[str]:
    """The ``json=true`` output: one ``variant_report`` line per variant, then one ``comparison`` line.

    Args:
        prepared_dirs: (variant label, its report directory under ``root``), base first.
        root: the directory holding ``comparison.json``.

    Yields:
        Compact JSON lines (no newline), ``schemaVersion`` first, each with ``type``.
    """
    import json

    for label, report_dir in prepared_dirs:
        doc = loads_json(read_text(report_dir / "report.json"))
        yield json.dumps({"schemaVersion": 1, "type": "variant_report", "variant": label,
                          "reportDir": str(report_dir), "report": doc}, ensure_ascii=False, separators=(",", ":"))
    comparison = loads_json(read_text(root / "comparison.json"))
    yield json.dumps({"schemaVersion": 1, "type": "comparison", "path": str(root / "comparison.json"),
                      "comparison": comparison}, ensure_ascii=False, separators=(",", ":"))


def variant_tasks(prepared: list[tuple[str, Any]], root: Path, as_json: bool = False) -> Iterator[dict[str, Any]]:
    from lab.build.graph import report_task, run_task, start_eval

    for index, (_, prep) in enumerate(prepared):
        start_eval(prep, notes=index == len(prepared) - 1)
    for _, prep, spec in interleaved(prepared):
        yield run_task(prep, spec)
    for _, prep in prepared:
        yield report_task(prep)
    yield {"name": "comparison", "actions": [(_compare_action, [prepared, root, as_json])],
           "task_dep": [f"variants:{prep.run_id}.report" for _, prep in prepared],
           "uptodate": [False], "verbosity": 2}


def _compare_action(prepared: list[tuple[str, Any]], root: Path, as_json: bool = False) -> Any:
    from lab.build.actions import disk_faults

    return disk_faults(_compare)(prepared, root, as_json)  # a full or read-only data dir: one line, exit 1


def _compare(prepared: list[tuple[str, Any]], root: Path, as_json: bool) -> Any:

    from lab.build.actions import OUTCOME
    from lab.compare.markdown import render_comparison_markdown
    from lab.compare.verdicts import compare_reports, write_comparison
    from lab.files import copy_files

    root.mkdir(parents=True, exist_ok=True)
    for label, prep in prepared:
        copy_files(prep.report_dir, root / label)
    base = loads_json(read_text(root / prepared[0][0] / "report.json"))
    cand = loads_json(read_text(root / prepared[1][0] / "report.json"))
    from lab.build.sequential import ACTIVE, round_action

    if ACTIVE:  # a round of a sequential command: look, and compare only once decided or at k
        OUTCOME.update(code=0, report_dir=str(root))
        if not round_action(prepared, root, as_json):
            return None
    else:
        doc = compare_reports(base, cand)
        write_comparison(root, doc, reports=(root / prepared[0][0], root / prepared[1][0]))
    OUTCOME.update(code=0, report_dir=str(root))
    if as_json:
        for line in variant_json_lines([(label, root / label) for label, _ in prepared], root):
            print(line, flush=True)
        return None
    from lab.execute.progress import display

    if ACTIVE:
        run = ACTIVE[0]
        made = run.looks[-1]["runsPerTask"]
        executed = run.executed + display().done
        # the last round's graph holds every run of the command; those no round executed were reused
        # (a run that errored in a round is executed again by the next: never fewer than none reused)
        reused = max(0, display().done + display().skipped - executed)
        reused_text = f"; {reused} up to date from an identical earlier sequential variants command" if reused else ""
        print(f"runs: {executed} executed now over {len(run.looks)} round(s), up to {made} per task and variant"
              f"{reused_text}")
    else:
        print(render_comparison_markdown(doc), flush=True)
        print(f"runs: {display().done} executed now, {display().skipped} up to date from an identical earlier "
              f"variants command (the only runs a variants command reuses)")
    print(f"variants: {', '.join(f'{label} → {root / label}' for label, _ in prepared)}")
    print(f"comparison: {root / 'comparison.md'}; picture: {root / 'comparison.html'}")
    OUTCOME.update(code=0, report_dir=str(root))
    return None
