"""Collecting the tests stays cheap: every test worker imports every test module before it runs one test."""

from __future__ import annotations

import ast
from pathlib import Path

HEAVY = ("openai", "scipy", "statsmodels", "pandas", "ray")
"""Packages that take about a second to import (or start threads): imported inside the tests that use them."""
TESTS = Path(__file__).resolve().parent


def module_level_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, top-level package) of each import statement outside any function or class body."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def test_no_test_module_imports_a_heavy_package_at_collection() -> None:
    offending = [f"{path.relative_to(TESTS.parent)}:{line}: {package}"
                 for path in sorted(TESTS.rglob("*.py"))
                 for line, package in module_level_imports(ast.parse(path.read_bytes(), str(path)))
                 if package in HEAVY]
    assert offending == [], "import these inside the tests that use them:\n" + "\n".join(offending)


def test_the_check_sees_module_level_imports_and_not_local_ones() -> None:
    tree = ast.parse("import scipy.stats\nfrom openai import OpenAI\nimport json\n"
                     "def f():\n    import pandas\nif True:\n    import ray\n")
    assert module_level_imports(tree) == [(1, "scipy"), (2, "openai"), (3, "json")]
