"""The export schema's workspace rule: null (no workspace kept) or a relative path, never an absolute one."""

from __future__ import annotations

import jsonschema
import pytest

from lab.schemas import load_schema


def _bundle(workspace: object) -> dict[str, object]:
    run = {"schemaVersion": 1, "taskId": "t", "repetition": 0, "status": "pass", "workspace": workspace}
    return {"schemaVersion": 1, "report": {}, "runs": [run], "markdown": ""}


@pytest.mark.parametrize(("workspace", "valid"), [(None, True), ("<data>/work/t", True), ("/home/u/work/t", False)])
def test_workspace_null_or_relative(workspace: object, valid: bool) -> None:
    validator = jsonschema.Draft202012Validator(load_schema("export"))
    errors = [e for e in validator.iter_errors(_bundle(workspace)) if list(e.absolute_path)[:1] == ["runs"]]
    assert (not errors) is valid, [e.message for e in errors]
