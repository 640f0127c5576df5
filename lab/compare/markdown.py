"""comparison.md: a comparison document as Markdown, ending with its limits (SPEC K5–K8)."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

# Row order of the conditions table and the deltas table (JSON objects come back key-sorted).
CONDITION_KEYS = ("runId", "suiteId", "suiteVersion", "suiteDigest", "harnessVersion", "harnessDigest",
                  "configHash", "variant", "provider", "model", "mode", "k", "seed", "compaction", "rates")
DELTA_ORDER = ("tokensPerSuccess", "totalTokensPerSuccess", "wallMsPerSuccess", "cachedInputRatio",
               "costUsdPerSuccess")
VERDICT_WORDS = {"improved": "improved", "regressed": "regressed", "mixed": "mixed",
                 "unchanged": "unchanged", "inconclusive": "inconclusive", "low_power": "low power",
                 "not_comparable": "not comparable", "changed": "changed"}


def render_comparison_markdown(doc: dict[str, Any]) -> str:
    """The Markdown of a comparison document from ``compare_reports``.

    Sections: verdict line, the aggregate difference with its interval and
    p-value, the power line (K8), conditions (base and cand side by side,
    changed rows marked), warnings, per-task table (difference, Newcombe
    interval, raw and Holm-adjusted p, the Wilson screen, pass^k), deltas,
    and the limits last.
    """
    b, a = doc["base"], doc["aggregate"]
    lines = [f"# Comparison — {b.get('suiteId')} {b.get('suiteVersion')}", "",
             f"**Verdict: {VERDICT_WORDS[a['verdict']]}** — {a['reason']}.", ""]
    lines += [line for text in aggregate_lines(a) for line in (text, "")]
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


def aggregate_lines(a: dict[str, Any]) -> list[str]:
    """The aggregate figures in sentences: rates, difference with interval and p, power, task-sample view."""
    lines = []
    if "delta" in a:
        lines.append(f"Aggregate success rate (mean over {a['pairedTasks']} paired task(s)): "
                     f"{_pct(a['base'])} → {_pct(a['cand'])}.")
    if "pValue" in a:
        low, high = a["interval95"]
        lines.append(f"Difference cand − base: {_points(a['delta'])} points, 95% CI [{_points(low)}, {_points(high)}], "
                     f"p = {a['pValue']:.3g} ({a['test']}; α = {a['alpha']:g}).")
    if "power" in a:
        lines.append(power_line(a["power"]))
    sample = a.get("taskSample")
    if sample and sample["standardError"] is not None:
        lines.append(f"Tasks taken as a sample (not used by the verdict): mean difference "
                     f"{_points(sample['meanDifference'])} points, standard error "
                     f"{100 * sample['standardError']:.1f} points (Miller 2024).")
    return lines


def power_line(p: dict[str, Any]) -> str:
    """SPEC K8: what this comparison could detect with 80 % power."""
    at = f"{100 * p['power']:.0f}% power at α = {p['alpha']:g}"
    if p["aggregate"] is None:
        suite = f"Power: with these runs, no change of the suite mean up to 100 points would be detected with {at}"
    else:
        suite = (f"Power: with these runs, a change of the suite mean of ±{100 * p['aggregate']:.1f} points would be "
                 f"detected with {at}")
    per_task = ""
    if p.get("perTaskAlpha") is not None:
        alone = ("no change up to 100 points" if p["perTaskMedian"] is None
                 else f"±{100 * p['perTaskMedian']:.1f} points")
        per_task = f"; one task alone: {alone} (median over tasks, at Holm's α/T = {p['perTaskAlpha']:.3g})"
    return suite + per_task + "."


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


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
        delta, diff = t.get("successRateDelta"), t.get("difference")
        ci = "—" if diff is None else f"[{_points(diff['newcombe95'][0])}, {_points(diff['newcombe95'][1])}]"
        rows.append((t["taskId"], VERDICT_WORDS[t["verdict"]], _side_cell(b), _side_cell(c),
                     "—" if delta is None else _points(delta), ci,
                     "—" if diff is None else f"{diff['pValue']:.3g}",
                     "—" if diff is None else f"{diff['pAdjusted']:.3g}",
                     t.get("screen", "—"), _pass_hat_k(t),
                     "yes" if t["lostReliability"] else "", t["reason"]))
    headers = ["task", "verdict", "base", "cand", "Δ points", "95% CI (Newcombe)", "p (Fisher)", "p (Holm)",
               "Wilson screen", "pass^k base → cand", "lost reliability", "why"]
    return str(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))


def _pass_hat_k(t: dict[str, Any]) -> str:
    """pass^k at the common k on both sides; a dip is marked, never a verdict."""
    b, c = t.get("base") or {}, t.get("cand") or {}
    if "passHatK" not in b or "passHatK" not in c:
        return "—"
    return (f"{_pct(b['passHatK'])} → {_pct(c['passHatK'])} (k={t['commonK']})"
            + (" dip" if t.get("passHatKDip") else ""))


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
        relative, bounds = d.get("relative"), d.get("relative95")
        rows.append((f"{name} ({d['unit']})", _num(d.get("base"), d["unit"]), _num(d.get("cand"), d["unit"]),
                     _num(d["delta"], d["unit"]) if "delta" in d else "—",
                     "—" if relative is None else f"{100 * relative:+.1f}%",
                     "—" if bounds is None else f"[{100 * bounds[0]:+.1f}%, {100 * bounds[1]:+.1f}%]",
                     d.get("includes", "") if d["comparable"] else f"not comparable: {d['reason']}"))
    headers = ["figure", "base", "cand", "Δ", "relative", "relative 95% CI", ""]
    return str(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))
