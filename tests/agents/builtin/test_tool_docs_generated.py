"""docs/tools.md is generated from the tool schemas the model sees (`lab tools`) and kept current."""

from __future__ import annotations

from pathlib import Path

from lab.agents.builtin.tool_docs import tools_markdown
from lab.agents.builtin.tools import TOOLS

ROOT = Path(__file__).resolve().parents[3]


def test_docs_tools_md_is_current() -> None:
    assert (ROOT / "docs" / "tools.md").read_text(encoding="utf-8") == tools_markdown(), \
        "docs/tools.md is stale: regenerate it with `lab tools > docs/tools.md`"


def test_every_tool_and_argument_is_documented() -> None:
    text = tools_markdown()
    for tool in TOOLS.values():
        assert f"## `{tool.name}`" in text and f"Effect: `{tool.effect}`" in text
        for argument in tool.parameters["properties"]:
            assert f"| `{argument}` |" in text
    assert "sha256: <hex>" in text  # the result formats come along
