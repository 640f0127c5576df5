"""`lab variants json=true`: the flag's values (the JSON lines of a real command: tests/e2e/test_variant_run_ids.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.build.variants import json_requested
from lab.errors import ConfigError
from tests.helpers.lab_process import run_cmd


@pytest.mark.parametrize(("overrides", "wanted"), [([], False), (["json=true"], True), (["json=no"], False),
                                                   (["json=1", "json=false"], False)])
def test_json_flag_values(overrides: list[str], wanted: bool) -> None:
    assert json_requested(overrides) is wanted


def test_a_bad_json_value_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="json must be true or false, got 'maybe'"):
        json_requested(["json=maybe"])
    result = run_cmd(["lab", "variants", "suite=core", "provider=scripted", "variant=baseline,no-compaction",
                      "json=maybe"], tmp_path)
    assert result.returncode == 1 and "json must be true or false" in result.stderr
