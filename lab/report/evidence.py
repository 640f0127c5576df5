"""Run evidence for index.html: one section per run, collapsed per task, on the page itself or on pages of 1000 runs.

Each run has an anchor (:func:`run_anchor`) holding its facts, final message,
error and traceback, replay divergence, verifiers (diagnostics and stderr /
stdout tails) and event log (``templates/_run.html.j2``). A task's runs are
one ``<details>`` element (:func:`task_runs_anchor`, ``templates/_task_runs.html.j2``),
closed, whose summary line counts them by status: a page of 35 runs is a
list of tasks, and a link to a run opens its task's group. Up to
``RUNS_PER_PAGE`` runs the sections are part of index.html; a larger report
puts them on ``pages/runs-0001.html``, ``pages/runs-0002.html`` … in report
order (``templates/runs_page.html.j2``), so index.html stays a summary page
that opens as fast at 100k runs as at 10. Written into a report directory,
each run also gets its attempt page and record (``lab.report.attempts``),
which its section links to.

:class:`HtmlRuns` is fed the records in report order, renders each section
as it comes (writing the run pages as it goes) and keeps what the index
needs: the sections of a small report, each task's run links and the link
of each errored run, in lists that may be spools.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import IO, Any

import jinja2
from markupsafe import Markup

from lab.files import dumps_line, encodable
from lab.report.attempts import PAGE, RECORD, AttemptPages, attempt_dir
from lab.report.markdown import DASH, num
from lab.report.metrics import NewList

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
RUNS_PER_PAGE = 1000
PAGES_DIR = "pages"
EVENTS_SHOWN = 500  # per run; the full log is always in runs.jsonl
ARGUMENTS_CHARS = 240
TAILS = ("stderrTail", "stdoutTail")
STATUS_WORDS = {"pass": ("pass", "passed"), "fail": ("fail", "failed"),
                "budget_exceeded": ("budget-exceeded", "over budget"), "error": ("error", "errored")}
"""Run status → (its ``data-`` attribute on a task's group, its word in the group's summary line)."""
GROUP_END = "</details>\n"
_MARK = "\x00evidence\x00"
_INDEX = "\x00index\x00"  # index.html's path from the page showing a run's section
_ROOT = "\x00root\x00"  # the report directory's path from that page, "" or ending in "/"


def _relative(section: str, root: str) -> str:
    """A section rendered with ``run_view(record, _INDEX, _ROOT)`` as shown on a page ``root`` below the report.

    On index.html itself (``root`` "") a link to the task's row is a bare ``#task-…``."""
    return section.replace(_INDEX, f"{root}index.html" if root else "").replace(_ROOT, root)


def run_anchor(task_id: str, repetition: int) -> str:
    """The HTML id of a run's evidence section: ``run-<taskId>-r<repetition>``."""
    return f"run-{task_id}-r{repetition}"


def task_anchor(task_id: str) -> str:
    """The HTML id of a task's row: ``task-<taskId>``."""
    return f"task-{task_id}"


def task_runs_anchor(task_id: str) -> str:
    """The HTML id of a task's collapsed run evidence (a ``<details>``): ``runs-<taskId>``."""
    return f"runs-{task_id}"


def paged(runs: int) -> bool:
    """Whether a report of ``runs`` runs puts the run evidence on separate pages."""
    return runs > RUNS_PER_PAGE


def page_name(position: int) -> str:
    """The page (relative to the report directory) holding the run at ``position`` (0-based, report order)."""
    return f"{PAGES_DIR}/runs-{position // RUNS_PER_PAGE + 1:04d}.html"


def page_links(runs: int) -> list[tuple[str, str]]:
    """(page, "runs a–b") of every run page of a report of ``runs`` runs (none when not :func:`paged`)."""
    if not paged(runs):
        return []
    return [(page_name(first), f"runs {first + 1}–{min(first + RUNS_PER_PAGE, runs)}")
            for first in range(0, runs, RUNS_PER_PAGE)]


@cache
def environment() -> jinja2.Environment:
    """The report templates (autoescaped; values arrive formatted)."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


class HtmlRuns:
    """Run sections and links for index.html, fed the records in report order (then :meth:`close`).

    Args:
        runs: how many records will be fed (decides :func:`paged`).
        title: the report's title prefix (``<suite> <version>``) for the run pages.
        new_list: makes the lists kept for the index (``list`` or a spool factory).
        report_dir: where the run pages go (``pages/``); None writes none.

    After :meth:`close`: ``sections`` (a small report's evidence: one
    collapsed group per task, :func:`task_runs_anchor`), ``tasks`` ({taskId,
    runs: [{href, label, status}]} per task with records: one link per run,
    or one per run page holding some of the task's runs) and ``errors``
    ([taskId, repetition, href] of each errored run).

    A group's summary line (its runs counted by status) comes before its
    sections, so a group's sections wait until its last run: in memory on
    index.html (at most ``RUNS_PER_PAGE`` of them, as the page itself), in
    an anonymous temporary file in ``report_dir`` on a run page.
    """

    def __init__(self, runs: int, title: str, new_list: NewList = list, report_dir: Path | None = None) -> None:
        self.runs, self.title, self.paged = runs, title, paged(runs)
        self.sections, self.tasks, self.errors = new_list(), new_list(), new_list()
        self._report_dir = report_dir
        self._attempts = None if report_dir is None else AttemptPages(report_dir, title, environment())
        self._position = 0
        self._task: dict[str, Any] | None = None
        self._page: IO[str] | None = None
        self._page_tail = ""
        self._group: dict[str, Any] | None = None  # the task whose sections are held, on the current page
        self._held: list[str] = []  # its sections on index.html
        self._spill: IO[str] | None = None  # its sections on a run page

    def add(self, record: dict[str, Any], record_text: str | None = None) -> None:
        """One run, in report order (``record_text``: its ``runs.jsonl`` line, for its ``evaluation.json``)."""
        position, self._position = self._position, self._position + 1
        task_id, repetition, status = record["taskId"], record["repetition"], record["status"]
        anchor = run_anchor(task_id, repetition)
        href = f"{page_name(position)}#{anchor}" if self.paged else f"#{anchor}"
        if self._attempts is not None:  # one rendering, its links made relative to each page that shows it
            section = environment().get_template("_run.html.j2").render(r=run_view(record, _INDEX, _ROOT))
            self._attempts.write(record, record_text or dumps_line(record), _relative(section, "../../../"))
            self._hold(position, task_id, repetition, status, _relative(section, "../" if self.paged else ""))
        elif not self.paged:
            section = environment().get_template("_run.html.j2").render(r=run_view(record))
            self._hold(position, task_id, repetition, status, section)
        if self._task is None or self._task["taskId"] != task_id:
            self._close_task()
            self._task = {"taskId": task_id, "runs": []}
        links = self._task["runs"]
        if not self.paged:
            links.append({"href": href, "label": f"r{repetition}", "status": status})
        elif links and links[-1]["page"] == page_name(position):  # one link per page: r<first>–r<last>
            links[-1]["label"] = links[-1]["label"].split("–")[0] + f"–r{repetition}"
            links[-1]["status"] = "pass" if links[-1]["status"] == "pass" and status == "pass" else "fail"
        else:
            links.append({"href": href, "label": f"r{repetition}–r{repetition}",
                          "status": "pass" if status == "pass" else "fail", "page": page_name(position)})
        if status == "error":
            self.errors.append([task_id, repetition, href])

    def _hold(self, position: int, task_id: str, repetition: int, status: str, section: str) -> None:
        """Keep ``section`` in its task's group, closing the previous group (and run page) first."""
        new_page = self.paged and position % RUNS_PER_PAGE == 0
        if self._group is None or self._group["taskId"] != task_id or new_page:
            self._close_group()
            if new_page:
                self._page_open(position)
            self._group = {"taskId": task_id, "first": repetition, "counts": dict.fromkeys(STATUS_WORDS, 0)}
        self._group["last"] = repetition
        self._group["counts"][status] = self._group["counts"].get(status, 0) + 1
        if not self.paged:
            self._held.append(section)
            return
        if self._spill is None:
            assert self._report_dir is not None
            self._spill = tempfile.TemporaryFile("w+", encoding="utf-8", dir=self._report_dir)
        self._spill.write(encodable(section))

    def _close_group(self) -> None:
        """Write the held group: its summary line, its sections, the end of its ``<details>``."""
        group, self._group = self._group, None
        if group is None:
            return
        head = environment().get_template("_task_runs.html.j2").render(g=group_view(group, self.paged))
        if not self.paged:
            self.sections.append(head + "".join(self._held) + GROUP_END)
            self._held = []
            return
        assert self._page is not None and self._spill is not None
        self._page.write(encodable(head))
        self._spill.seek(0)
        shutil.copyfileobj(self._spill, self._page)
        self._spill.seek(0)
        self._spill.truncate()
        self._page.write(GROUP_END)

    def _close_task(self) -> None:
        if self._task is not None:
            for link in self._task["runs"]:
                link.pop("page", None)
            self.tasks.append(self._task)
            self._task = None

    def _page_open(self, position: int) -> None:
        self._page_close()
        assert self._report_dir is not None
        path = self._report_dir / page_name(position)
        path.parent.mkdir(mode=0o755, exist_ok=True)
        self._page = open(path, "w", encoding="utf-8")
        head, self._page_tail = self._page_frame(position)
        self._page.write(encodable(head))

    def _page_frame(self, first: int) -> tuple[str, str]:
        """The text of the run page starting at ``first`` before and after its sections."""
        count = (self.runs + RUNS_PER_PAGE - 1) // RUNS_PER_PAGE
        number = first // RUNS_PER_PAGE
        page = {"title": f"{self.title} — runs {first + 1}–{min(first + RUNS_PER_PAGE, self.runs)} of {self.runs}",
                "previous": Path(page_name(first - RUNS_PER_PAGE)).name if number else None,
                "next": Path(page_name(first + RUNS_PER_PAGE)).name if number + 1 < count else None,
                "evidence": [Markup(_MARK)]}
        head, _, tail = environment().get_template("runs_page.html.j2").render(page=page).partition(_MARK)
        return head, tail

    def _page_close(self) -> None:
        if self._page is not None:
            try:
                self._page.write(encodable(self._page_tail))
            finally:
                self._page.close()
                self._page = None

    def close(self) -> None:
        """Write the last group, close the last task and the last run page (call once after the last run)."""
        try:
            self._close_group()
            self._close_task()
        finally:
            self._page_close()
            if self._spill is not None:
                self._spill.close()
                self._spill = None


def group_view(group: dict[str, Any], on_run_page: bool) -> dict[str, Any]:
    """The summary line of a task's group of runs: its anchor, the repetitions (on a run page), counts by status."""
    counts = group["counts"]
    return {"taskId": group["taskId"], "anchor": task_runs_anchor(group["taskId"]), "runs": sum(counts.values()),
            "span": f"r{group['first']}–r{group['last']} on this page" if on_run_page else "",
            "counts": [(status, attr, counts[status], word) for status, (attr, word) in STATUS_WORDS.items()]}


def _short(value: Any, limit: int = ARGUMENTS_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def _known(block: dict[str, Any], key: str) -> str:
    value = block.get(key)
    return "not reported" if value is None else str(value)


def _verifier_view(v: dict[str, Any]) -> tuple[Any, ...]:
    """(id, kind, weight, status, detail, diagnostics as ``k=v; …``, [(tail name, text)])."""
    diagnostics = v.get("diagnostics") or {}
    facts = "; ".join(f"{k}={_short(diagnostics[k])}" for k in sorted(diagnostics) if k not in TAILS)
    tails = [(k, str(diagnostics[k])) for k in TAILS if diagnostics.get(k)]
    return (v["id"], v["kind"], num(v.get("weight"), 2), v["status"], v["detail"], facts, tails)


def _event_view(e: dict[str, Any]) -> tuple[str, ...]:
    """(seq, type, turn, name, outcome, detail) of one H6 event."""
    kind = e.get("type", "")
    if kind == "model_call":
        name, outcome = str(e.get("purpose")), str(e.get("finishReason"))
        usage = e.get("usage")
        detail = (f"{e.get('latencyMs')} ms; " + ("usage not reported" if usage is None else
                  f"in {_known(usage, 'inputTokens')}, out {_known(usage, 'outputTokens')}, "
                  f"cached {_known(usage, 'cachedInputTokens')}"))
    elif kind == "tool_call":
        name, outcome = str(e.get("tool")), str(e.get("outcome"))
        detail = _short(e.get("arguments")) + (f" — error: {e['error']}" if e.get("error") else "")
    elif kind == "approval":
        name, outcome, detail = str(e.get("tool")), str(e.get("decision")), f"effect {e.get('effect')}"
    else:
        name, outcome, detail = str(e.get("kind", "")), "", str(e.get("detail", ""))
    turn = e.get("turn")
    return (str(e.get("seq", "")), kind, "" if turn is None else str(turn), name, outcome, detail)


def _usage_text(usage: dict[str, Any] | None) -> str:
    if usage is None or usage.get("inputTokens") is None or usage.get("outputTokens") is None:
        return "not reported"
    cached = ("partial (only some turns reported it)" if usage.get("cachedPartial")
              else _known(usage, "cachedInputTokens"))
    return f"input {usage['inputTokens']}, output {usage['outputTokens']}, cached input {cached}"


def run_view(r: dict[str, Any], index: str = "", root: str | None = None) -> dict[str, Any]:
    """Everything the run's evidence section shows, formatted.

    Args:
        r: the run record.
        index: index.html's path from the section's page ("" on index.html itself).
        root: the report directory's path from that page ("" or ending in "/") when
            the run has an attempt page (``lab.report.attempts``) to link to; None: no link.
    """
    usage_text = _usage_text(r.get("usage"))
    error = r.get("error")
    events = r.get("events") or []
    facts = [("status", r["status"]), ("claim", r.get("claim")), ("stop reason", r.get("stopReason")),
             ("budget exceeded", r.get("budgetExceeded")), ("seed", r["seed"]), ("score", num(r.get("score"), 3)),
             ("wall ms", r.get("wallMs")), ("turns", r.get("turns")), ("tool calls", r.get("toolCalls")),
             ("compactions", r.get("compactions")), ("usage (main loop)", usage_text),
             ("started / finished", f"{r.get('startedAt')} / {r.get('finishedAt')}")]
    if r.get("compactionUsage"):
        facts.append(("usage (compaction calls, not in main loop)", _usage_text(r["compactionUsage"])))
    if r.get("workspace"):
        facts.append(("workspace kept at", r["workspace"]))
    return {"anchor": run_anchor(r["taskId"], r["repetition"]), "taskHref": f"{index}#{task_anchor(r['taskId'])}",
            "taskId": r["taskId"], "repetition": r["repetition"], "status": r["status"],
            "facts": [(label, DASH if value is None else str(value)) for label, value in facts],
            "finalMessage": r.get("finalMessage"),
            "verifiers": [_verifier_view(v) for v in r.get("verifiers", [])],
            "error": None if not error else {"kind": str(error.get("kind")), "message": str(error.get("message")),
                                             "traceback": error.get("traceback")},
            "divergence": [(k, _short(v)) for k, v in sorted((r.get("divergence") or {}).items())],
            "events": [_event_view(e) for e in events[:EVENTS_SHOWN]],
            "eventsHidden": max(len(events) - EVENTS_SHOWN, 0),
            "attempt": None if root is None else _attempt_view(r, root)}


def _attempt_view(r: dict[str, Any], root: str) -> dict[str, str]:
    """The links to a run's attempt page and record: {name, page, record}."""
    directory = attempt_dir(r["taskId"], r["repetition"])
    return {"name": f"{directory}/", "page": f"{root}{directory}/{PAGE}", "record": f"{root}{directory}/{RECORD}"}
