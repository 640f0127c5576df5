"""docs/suite-format.md matches the code: its example loads, and it names every schema field."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from lab.paths import ROOT
from lab.schemas import load_schema
from lab.suites.load import load_suite

DOC = ROOT / "docs" / "suite-format.md"
MARKER = "<!-- example-suite:"


def example_suite() -> dict[str, Any]:
    text = DOC.read_text(encoding="utf-8")
    after = text[text.index(MARKER):]
    block = re.search(r"```json\n(.*?)\n```", after, re.S)
    assert block, "no ```json block after the example-suite marker"
    doc: dict[str, Any] = json.loads(block.group(1))
    return doc


def test_the_documented_example_loads_with_real_fixture_dirs(tmp_path: Path) -> None:
    doc = example_suite()
    for task in doc["tasks"]:
        (tmp_path / task["fixture"]).mkdir(parents=True)
    (tmp_path / "suite.json").write_text(json.dumps(doc))
    suite = load_suite(tmp_path)
    assert suite.id == doc["suiteId"] and len(suite.tasks) == len(doc["tasks"]) == 2
    assert suite.tasks[0].fixture_git and suite.tasks[0].agent == "builtin"


def test_the_example_uses_every_field_and_every_verifier_kind() -> None:
    doc = example_suite()
    schema = load_schema("suite")
    task_fields = set(schema["$defs"]["task"]["properties"])
    used = set().union(*(t.keys() for t in doc["tasks"]))
    assert task_fields <= used
    budget_fields = set(schema["$defs"]["task"]["properties"]["budget"]["properties"])
    assert budget_fields <= set().union(*(t["budget"].keys() for t in doc["tasks"]))
    verifiers = [v for t in doc["tasks"] for v in t["verifiers"]]
    kinds = set(schema["$defs"]["verifierBase"]["properties"]["kind"]["enum"])
    assert kinds <= {v["kind"] for v in verifiers}
    rules = {v["rule"] for v in verifiers if v["kind"] == "tool-sequence"}
    assert rules == {"before", "never", "max-calls", "no-repeat-failure"}


def _all_property_names(node: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                names |= set(value)
            names |= _all_property_names(value)
    elif isinstance(node, list):
        for item in node:
            names |= _all_property_names(item)
    return names


@pytest.mark.parametrize("field", sorted(_all_property_names(load_schema("suite"))))
def test_every_schema_field_is_documented(field: str) -> None:
    assert f"`{field}`" in DOC.read_text(encoding="utf-8"), f"docs/suite-format.md does not mention `{field}`"
