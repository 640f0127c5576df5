"""junit.xml: one testcase per task, for CI dashboards (SPEC M8).

- ``<testsuites>`` holds one ``<testsuite name="<suiteId>">`` with the
  conditions as properties.
- One ``<testcase classname="<suiteId>" name="<taskId>">`` per task; ``time``
  is the sum of its runs' wall times in seconds.
- ``<failure>`` when some judged run of the task did not pass; its message
  says ``flaky`` when others passed. ``<error>`` when some run errored.
- Per-testcase properties: judged, passes, errors, successRate, flaky, lowPower.

Built with ``xml.etree.ElementTree`` (escaping is its job); characters XML 1.0
cannot carry (control characters from a stderr tail) are replaced by U+FFFD.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from lab.report.build import sort_records
from lab.report.markdown import endpoint_text
from lab.report.metrics import claimed_success

CONDITIONS = ("runId", "suiteVersion", "suiteDigest", "harnessVersion", "harnessDigest", "configHash",
              "variant", "provider", "model", "mode", "k", "seed", "note")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: Any) -> str:
    """``text`` as a string XML 1.0 can hold (invalid characters → U+FFFD)."""
    return _NOT_XML.sub("\ufffd", str(text))


def _properties(parent: ET.Element, pairs: list[tuple[str, Any]]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in pairs:
        if isinstance(value, bool):
            value = "true" if value else "false"
        ET.SubElement(props, "property", name=name, value=xml_text("" if value is None else value))


def _run_failure_line(run: dict[str, Any]) -> str:
    line = f"r{run['repetition']} (seed {run['seed']}): {run['status']}"
    if run.get("budgetExceeded"):
        line += f" ({run['budgetExceeded']})"
    failed = [v for v in run.get("verifiers", []) if v["status"] != "pass"]
    line += "".join(f"\n  verifier {v['id']} ({v['kind']}): {v['status']}: {v['detail']}" for v in failed)
    if claimed_success(run) and run["status"] != "pass":
        line += "\n  false positive: the agent claimed success"
    return line


def _testcase(suite: ET.Element, suite_id: str, task: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    wall_s = sum(int(r.get("wallMs") or 0) for r in runs) / 1000
    case = ET.SubElement(suite, "testcase", classname=xml_text(suite_id), name=xml_text(task["taskId"]),
                         time=f"{wall_s:.3f}")
    _properties(case, [("judged", task["judged"]), ("passes", task["passes"]), ("errors", task["errors"]),
                       ("successRate", task["successRate"]), ("flaky", task["flaky"]),
                       ("lowPower", task["lowPower"])])
    judged = [r for r in runs if r["status"] != "error"]
    not_passed = [r for r in judged if r["status"] != "pass"]
    if not_passed:
        kind = "flaky" if task["flaky"] else "failed"
        message = f"{kind}: {task['passes']}/{task['judged']} judged runs passed"
        failure = ET.SubElement(case, "failure", message=message, type=kind)
        failure.text = xml_text("\n".join(_run_failure_line(r) for r in not_passed))
    errored = [r for r in runs if r["status"] == "error"]
    if errored:
        first = errored[0].get("error") or {}
        message = f"{len(errored)} run(s) errored (not judged): {first.get('kind')}: {first.get('message')}"
        error = ET.SubElement(case, "error", message=xml_text(message), type=xml_text(first.get("kind")))
        error.text = xml_text("\n".join(
            f"r{r['repetition']}: {(r.get('error') or {}).get('kind')}: {(r.get('error') or {}).get('message')}"
            for r in errored))


def render_junit(doc: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The junit.xml text (UTF-8 declaration, indented) for a report and its run records."""
    h = doc["header"]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for record in sort_records(records):
        by_task.setdefault(record["taskId"], []).append(record)
    failures = sum(1 for t in doc["tasks"] if t["judged"] > t["passes"])
    errors = sum(1 for t in doc["tasks"] if t["errors"])
    wall_s = sum(int(r.get("wallMs") or 0) for r in records) / 1000
    counts = {"tests": str(len(doc["tasks"])), "failures": str(failures), "errors": str(errors),
              "time": f"{wall_s:.3f}"}
    root = ET.Element("testsuites", {"name": "reliability-lab", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": xml_text(h["suiteId"]), **counts, "skipped": "0"})
    pairs = [(key, h[key]) for key in CONDITIONS if key in h]
    if isinstance(h.get("endpoint"), dict):
        pairs.append(("endpoint", endpoint_text(h)))
    _properties(suite, pairs)
    for task in doc["tasks"]:
        _testcase(suite, h["suiteId"], task, by_task.get(task["taskId"], []))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
