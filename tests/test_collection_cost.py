"""Collecting the tests stays cheap: every test worker imports every test module before it runs one test."""

from __future__ import annotations

import ast
from pathlib import Path

HEAVY = ("openai", "scipy", "statsmodels", "pandas", "ray")
"""Packages that take about a second to import (or start threads): imported inside the tests that use them."""
TESTS = Path(__file__).resolve().parent


def module_level_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level package) of each import statement that runs when the module is imported:
    outside any function or class body, including those in a top-level ``if``, ``try`` or ``with``
    (but not in ``if TYPE_CHECKING:``, which never runs)."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module.split(".")[0]))
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found += [i for n in node.orelse for i in module_level_imports(ast.Module([n], []))]
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            found += module_level_imports(node)
    return sorted(found)


def test_no_test_module_imports_a_heavy_package_at_collection() -> None:
    offending = [f"{path.relative_to(TESTS.parent)}:{line}: {package}"
                 for path in sorted(TESTS.rglob("*.py"))
                 for line, package in module_level_imports(ast.parse(path.read_bytes(), str(path)))
                 if package in HEAVY]
    assert offending == [], "import these inside the tests that use them:\n" + "\n".join(offending)


def test_the_check_sees_imports_that_run_at_import_and_not_local_ones() -> None:
    tree = ast.parse("import scipy.stats\nfrom openai import OpenAI\nimport json\n"
                     "def f():\n    import pandas\nif True:\n    import ray\n"
                     "try:\n    import statsmodels\nexcept ImportError:\n    pass\n"
                     "class C:\n    import pandas\n"
                     "if TYPE_CHECKING:\n    import openai\nelse:\n    import scipy\n")
    assert module_level_imports(tree) == [(1, "scipy"), (2, "openai"), (3, "json"), (7, "ray"), (9, "statsmodels"),
                                          (17, "scipy")]
