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
Written in chunks: :class:`JunitRuns` keeps, per run in report order, only the
line a failing or errored run adds to its task's ``<failure>`` / ``<error>``
text (in lists that may be spools); :func:`iter_junit` then writes one
testcase at a time, each element laid out by ElementTree and the long texts
streamed into it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from typing import Any
from xml.sax.saxutils import escape

from lab.report.build import sort_records
from lab.report.markdown import endpoint_text
from lab.report.metrics import NewList, claimed_success

CONDITIONS = ("runId", "suiteVersion", "suiteDigest", "harnessVersion", "harnessDigest", "configHash",
              "variant", "provider", "model", "mode", "k", "seed", "note")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_TEXT = "\x00text\x00"  # where a streamed text goes in an element laid out by ElementTree (never in xml_text output)
_CASES = "cases-go-here"


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


class JunitRuns:
    """What junit.xml needs of each run, fed the records in report order (then :meth:`close`).

    ``parts`` has one item per task with records: taskId, wallMs (sum),
    failures and errors (how many lines it added to ``failure_lines`` /
    ``error_lines``) and its first errored run's error kind and message.
    """

    def __init__(self, new_list: NewList = list) -> None:
        self.parts, self.failure_lines, self.error_lines = new_list(), new_list(), new_list()
        self.wall_ms = 0
        self._part: dict[str, Any] | None = None

    def add(self, run: dict[str, Any]) -> None:
        """One run, in report order."""
        if self._part is None or self._part["taskId"] != run["taskId"]:
            self.close()
            self._part = {"taskId": run["taskId"], "wallMs": 0, "failures": 0, "errors": 0,
                          "firstError": None}
        part = self._part
        wall = int(run.get("wallMs") or 0)
        part["wallMs"] += wall
        self.wall_ms += wall
        if run["status"] == "error":
            error = run.get("error") or {}
            if part["firstError"] is None:
                part["firstError"] = [error.get("kind"), error.get("message")]
            part["errors"] += 1
            self.error_lines.append(xml_text(f"r{run['repetition']}: {error.get('kind')}: {error.get('message')}"))
        elif run["status"] != "pass":
            part["failures"] += 1
            self.failure_lines.append(xml_text(_run_failure_line(run)))

    def close(self) -> None:
        """Close the current task (call once after the last run)."""
        if self._part is not None:
            self.parts.append(self._part)
            self._part = None


def render_junit(doc: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The junit.xml text (UTF-8 declaration, indented) for a report and its run records."""
    runs = JunitRuns()
    for record in sort_records(records):
        runs.add(record)
    runs.close()
    return "".join(iter_junit(doc, runs))


def iter_junit(doc: dict[str, Any], runs: JunitRuns) -> Iterator[str]:
    """junit.xml in chunks, for the report ``doc`` and what :class:`JunitRuns` kept of its runs."""
    h = doc["header"]
    failures = errors = tests = 0
    for task in doc["tasks"]:
        tests += 1
        failures += task["judged"] > task["passes"]
        errors += bool(task["errors"])
    counts = {"tests": str(tests), "failures": str(failures), "errors": str(errors),
              "time": f"{runs.wall_ms / 1000:.3f}"}
    root = ET.Element("testsuites", {"name": "reliability-lab", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": xml_text(h["suiteId"]), **counts, "skipped": "0"})
    pairs = [(key, h[key]) for key in CONDITIONS if key in h]
    if isinstance(h.get("endpoint"), dict):
        pairs.append(("endpoint", endpoint_text(h)))
    _properties(suite, pairs)
    if tests:
        ET.SubElement(suite, _CASES)
    ET.indent(root)
    head, _, tail = ET.tostring(root, encoding="unicode").partition(f"<{_CASES} />")
    yield '<?xml version="1.0" encoding="UTF-8"?>\n' + head
    parts = _Parts(runs)
    for n, task in enumerate(doc["tasks"]):
        yield from _testcase(h["suiteId"], task, parts.of(task["taskId"]), parts, first=n == 0)
    yield tail + "\n"


class _Parts:
    """The parts of :class:`JunitRuns` looked up in task order; lines of skipped parts are passed over."""

    def __init__(self, runs: JunitRuns) -> None:
        self._parts = iter(runs.parts)
        self.failure_lines, self.error_lines = iter(runs.failure_lines), iter(runs.error_lines)
        self._next: dict[str, Any] | None = next(self._parts, None)

    def of(self, task_id: str) -> dict[str, Any] | None:
        while self._next is not None and self._next["taskId"] < task_id:  # runs of a task the document lacks
            for _ in range(self._next["failures"]):
                next(self.failure_lines)
            for _ in range(self._next["errors"]):
                next(self.error_lines)
            self._next = next(self._parts, None)
        if self._next is None or self._next["taskId"] != task_id:
            return None
        part, self._next = self._next, next(self._parts, None)
        return part

    @staticmethod
    def take(lines: Iterator[str], count: int) -> Iterator[str]:
        """The next ``count`` lines, read as the result is (read it whole before the next take)."""
        for _ in range(count):
            yield next(lines)


def _testcase(suite_id: str, task: dict[str, Any], part: dict[str, Any] | None, parts: _Parts, *,
              first: bool) -> Iterator[str]:
    part = part or {"wallMs": 0, "failures": 0, "errors": 0, "firstError": None}
    case = ET.Element("testcase", classname=xml_text(suite_id), name=xml_text(task["taskId"]),
                      time=f"{part['wallMs'] / 1000:.3f}")
    _properties(case, [("judged", task["judged"]), ("passes", task["passes"]), ("errors", task["errors"]),
                       ("successRate", task["successRate"]), ("flaky", task["flaky"]),
                       ("lowPower", task["lowPower"])])
    texts: list[Iterable[str]] = []
    if part["failures"]:
        kind = "flaky" if task["flaky"] else "failed"
        message = f"{kind}: {task['passes']}/{task['judged']} judged runs passed"
        ET.SubElement(case, "failure", message=message, type=kind).text = _TEXT
        texts.append(parts.take(parts.failure_lines, part["failures"]))
    if part["errors"]:
        kind, text = part["firstError"]
        message = f"{part['errors']} run(s) errored (not judged): {kind}: {text}"
        ET.SubElement(case, "error", message=xml_text(message), type=xml_text(kind)).text = _TEXT
        texts.append(parts.take(parts.error_lines, part["errors"]))
    ET.indent(case, level=2)
    pieces = ET.tostring(case, encoding="unicode").split(_TEXT)
    yield ("" if first else "\n    ") + pieces[0]
    for lines, after in zip(texts, pieces[1:], strict=True):
        for n, line in enumerate(lines):
            yield ("" if n == 0 else "\n") + escape(line)
        yield after
