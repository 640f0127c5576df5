"""Collecting the tests stays cheap: every test worker imports every test module before it runs one test."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

HEAVY = ("openai", "scipy", "statsmodels", "pandas", "ray")
"""Packages that take about a second to import (or start threads): imported inside the tests that use them."""
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
OURS = ("lab", "tests")
"""Packages of this checkout: an import of one of their modules runs that module's imports too."""


def module_level_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level package) of each import statement that runs when the module is imported:
    outside any function or class body, including those in a top-level ``if``, ``try`` or ``with``
    (but not in ``if TYPE_CHECKING:``, which never runs)."""
    return sorted({(line, name.split(".")[0]) for line, name in module_level_names(tree, "")})


def module_level_names(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of each module an import statement that runs at import may load: the module
    itself and, for ``from M import a``, ``M.a`` as well (it may be a submodule). ``package``: the
    package relative imports start from."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*parts, *([node.module] if node.module else [])])
            found += [(node.lineno, module), *((node.lineno, f"{module}.{a.name}") for a in node.names)]
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found += [i for n in node.orelse for i in module_level_names(ast.Module([n], []), package)]
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            found += module_level_names(node, package)
    return found


def _source(module: str) -> Path | None:
    path = ROOT.joinpath(*module.split("."))
    return next((p for p in (path / "__init__.py", path.with_suffix(".py")) if p.is_file()), None)


@cache
def _imported_at_import(module: str) -> tuple[str, ...]:
    """What importing ``module`` of this checkout imports at once: its parent packages and the modules
    its import statements that run at import name (nothing for a module of another package)."""
    source = _source(module) if module.split(".")[0] in OURS else None
    if source is None:
        return ()
    parts = module.split(".")
    package = module if source.name == "__init__.py" else ".".join(parts[:-1])
    names = [name for _, name in module_level_names(ast.parse(source.read_bytes(), str(source)), package)]
    return tuple(dict.fromkeys([".".join(parts[:i]) for i in range(1, len(parts))] + names))


def heavy_imports(module: str) -> list[str]:
    """One chain (``a -> b -> openai``) for each way importing ``module`` reaches a :data:`HEAVY` package
    first, following the imports of this checkout's own modules (and their parent packages) that run at
    import time, each module once."""
    chains: list[str] = []
    seen = {module}
    todo = [(module, module)]
    while todo:
        name, chain = todo.pop(0)
        if name.split(".")[0] in HEAVY:
            chains.append(chain)
            continue
        for imported in _imported_at_import(name):
            if imported not in seen:
                seen.add(imported)
                todo.append((imported, f"{chain} -> {imported}"))
    return chains


def test_no_test_module_imports_a_heavy_package_at_collection() -> None:
    offending = [chain for path in sorted(TESTS.rglob("*.py"))
                 for chain in heavy_imports(".".join(path.relative_to(ROOT).with_suffix("").parts))]
    assert offending == [], "import these inside the tests that use them:\n" + "\n".join(offending)


def test_the_check_follows_the_imports_of_the_checkouts_own_modules() -> None:
    # lab.agents.reference.agent imports the openai SDK at its top: a test module importing it pays for it.
    assert heavy_imports("lab.agents.reference.agent") == ["lab.agents.reference.agent -> openai"]
    tree = ast.parse("from lab.agents.reference import agent\nfrom . import sibling\n")
    assert module_level_names(tree, "tests.gateway") == [
        (1, "lab.agents.reference"), (1, "lab.agents.reference.agent"), (2, "tests.gateway"),
        (2, "tests.gateway.sibling")]
    assert heavy_imports("lab.gateway") == []  # the gateway's own modules import no SDK


def test_the_check_sees_imports_that_run_at_import_and_not_local_ones() -> None:
    tree = ast.parse("import scipy.stats\nfrom openai import OpenAI\nimport json\n"
                     "def f():\n    import pandas\nif True:\n    import ray\n"
                     "try:\n    import statsmodels\nexcept ImportError:\n    pass\n"
                     "class C:\n    import pandas\n"
                     "if TYPE_CHECKING:\n    import openai\nelse:\n    import scipy\n")
    assert module_level_imports(tree) == [(1, "scipy"), (2, "openai"), (3, "json"), (7, "ray"), (9, "statsmodels"),
                                          (17, "scipy")]
