"""comparison.md: a comparison document as Markdown, ending with its limits (SPEC K5)."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

# Row order of the conditions table and the deltas table (JSON objects come back key-sorted).
CONDITION_KEYS = ("runId", "suiteId", "suiteVersion", "suiteDigest", "harnessVersion", "harnessDigest",
                  "configHash", "variant", "provider", "model", "mode", "k", "seed", "compaction", "rates")
DELTA_ORDER = ("tokensPerSuccess", "wallMsPerSuccess", "cachedInputRatio", "costUsdPerSuccess")
VERDICT_WORDS = {"improved": "improved", "regressed": "regressed", "mixed": "mixed",
                 "unchanged": "unchanged", "inconclusive": "inconclusive", "low_power": "low power",
                 "not_comparable": "not comparable", "changed": "changed"}


def render_comparison_markdown(doc: dict[str, Any]) -> str:
    """The Markdown of a comparison document from ``compare_reports``.

    Sections: verdict line, conditions (base and cand side by side, changed
    rows marked), warnings, per-task table, deltas, and the limits last.
    """
    b, a = doc["base"], doc["aggregate"]
    lines = [f"# Comparison — {b.get('suiteId')} {b.get('suiteVersion')}", "",
             f"**Verdict: {VERDICT_WORDS[a['verdict']]}** — {a['reason']}.", ""]
    if "delta" in a:
        lines += [f"Aggregate success rate (mean over {a['pairedTasks']} paired task(s)): "
                  f"{_pct(a['base'])} → {_pct(a['cand'])}.", ""]
    lines += ["## Conditions", "", _conditions_table(doc), ""]
    if doc["warnings"]:
        lines += ["## Warnings", ""] + [f"- {w}" for w in doc["warnings"]] + [""]
    lines += ["## Tasks", "", _replay_table(doc["tasks"]) if doc["replay"] else _tasks_table(doc["tasks"]), ""]
    lost = [t for t in doc["tasks"] if t["lostReliability"]]
    if lost:
        lines += ["Lost reliability:", ""]
        lines += [f"- {t['taskId']}: {'; '.join(t['lostReliabilityReasons'])}" for t in lost] + [""]
    if doc["deltas"]:
        lines += ["## Deltas", "", "Measured figures (tokens, time, cached input) and the estimated cost, "
                  "each per success; a figure a report lacks is absent.", "", _deltas_table(doc["deltas"]), ""]
    lines += ["## Limits", ""] + [f"- {limit}" for limit in doc["limits"]]
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _interval(interval: list[float] | None) -> str:
    return "—" if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]"


def _short(value: Any) -> str:
    if isinstance(value, str) and len(value) == 64 and all(ch in "0123456789abcdef" for ch in value):
        return value[:12]
    if isinstance(value, dict):
        return ", ".join(f"{k}={_short(v)}" for k, v in sorted(value.items()))
    return "—" if value is None else str(value)


def _conditions_table(doc: dict[str, Any]) -> str:
    b, c = doc["base"], doc["cand"]
    keys = [k for k in CONDITION_KEYS if k in b or k in c]
    rows = [(key, _short(b.get(key)) if key in b else "absent", _short(c.get(key)) if key in c else "absent",
             "differs" if b.get(key) != c.get(key) else "") for key in keys]
    return str(tabulate(rows, headers=["", "base", "cand", ""], tablefmt="github", disable_numparse=True))


def _side_cell(side: dict[str, Any] | None) -> str:
    if side is None:
        return "absent"
    cell = f"{side['passes']}/{side['judged']}"
    return cell + (f" (+{side['errors']} err)" if side["errors"] else "")


def _tasks_table(tasks: list[dict[str, Any]]) -> str:
    rows = []
    for t in tasks:
        b, c = t.get("base"), t.get("cand")
        delta = t.get("successRateDelta")
        rows.append((t["taskId"], VERDICT_WORDS[t["verdict"]], _side_cell(b), _side_cell(c),
                     _interval(b and b["wilson95"]), _interval(c and c["wilson95"]),
                     "—" if delta is None else f"{100 * delta:+.1f}",
                     "yes" if t["lostReliability"] else "", t["reason"]))
    headers = ["task", "verdict", "base", "cand", "base 95% Wilson", "cand 95% Wilson", "Δ points",
               "lost reliability", "why"]
    return str(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))


def _replay_table(tasks: list[dict[str, Any]]) -> str:
    """Replay: each task is changed or unchanged; no intervals, no direction."""
    rows = [(t["taskId"], VERDICT_WORDS[t["verdict"]], _side_cell(t.get("base")), _side_cell(t.get("cand")),
             t["reason"]) for t in tasks]
    return str(tabulate(rows, headers=["task", "verdict", "base", "cand", "why"], tablefmt="github",
                        disable_numparse=True))


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "absent"
    if unit == "ratio":
        return f"{value:.3f}"
    if unit == "USD":
        return f"{value:.4f}"
    return f"{value:.1f}"


def _deltas_table(deltas: dict[str, Any]) -> str:
    rows = []
    for name in sorted(deltas, key=lambda n: DELTA_ORDER.index(n) if n in DELTA_ORDER else len(DELTA_ORDER)):
        d = deltas[name]
        relative = d.get("relative")
        rows.append((f"{name} ({d['unit']})", _num(d.get("base"), d["unit"]), _num(d.get("cand"), d["unit"]),
                     _num(d["delta"], d["unit"]) if "delta" in d else "—",
                     "—" if relative is None else f"{100 * relative:+.1f}%",
                     "" if d["comparable"] else f"not comparable: {d['reason']}"))
    headers = ["figure", "base", "cand", "Δ", "relative", ""]
    return str(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))
