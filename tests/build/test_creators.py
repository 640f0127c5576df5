"""The shape every doit task creator of the lab shares (lab.build.creators)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lab.build import creators
from lab.errors import LabError


def _build(n: int) -> Iterator[dict[str, Any]]:
    yield {"name": "run", "actions": [(print, [n])], "verbosity": 2}
    yield {"name": "group", "actions": None, "task_dep": ["x:run"]}


def _tasks(plan: Any) -> list[dict[str, Any]]:
    return list(creators.creator("x", plan, _build))


def _failing_plan() -> int:
    raise LabError("no such suite")


@pytest.mark.parametrize("plan", [lambda: 1, _failing_plan], ids=["planned", "usage-error"])
def test_no_task_has_doit_capture_its_output(plan: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # doit's capture swaps sys.stdout process-wide for each running action: with jobs=N that crashes.
    monkeypatch.setattr(creators, "requested", lambda basename: basename == "x")
    tasks = _tasks(plan)
    assert len(tasks) == 2 and all(task["io"] == {"capture": False} for task in tasks), tasks


def test_a_creator_not_asked_for_yields_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(creators, "requested", lambda basename: False)
    assert _tasks(lambda: 1) == []
