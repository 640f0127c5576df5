"""The lab's modules never run from bytecode older than their source (PEP 552 checked-hash ``.pyc``).

Python's default ``.pyc`` is valid while the source's mtime (in whole
seconds) and size are the ones it was compiled from: a same-size edit with
its mtime put back (``touch -d``, a checkout, a 1-second file system) runs the
old code while the harness digest (:mod:`lab.execute.harness`) names the new
source. :func:`install` puts a finder first on ``sys.meta_path`` that loads
every ``lab.*`` module with :class:`CheckedLoader`: a ``.pyc`` is used only
when it is hash-based and carries the siphash of the source as it is now
(PEP 552), and bytecode the lab writes is checked-hash. ``lab/__init__.py``
installs it, so it covers every module of the package but that one, which
``make`` compiles as checked-hash (:func:`main`).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import marshal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

FLAGS = 0b11
"""PEP 552 flags of a checked hash-based ``.pyc``: hash-based, check the source."""


def current_pyc(data: bytes, source_hash: bytes) -> bool:
    """Whether ``data`` (a ``.pyc``) is hash-based, of this interpreter, for a source of ``source_hash``."""
    return (len(data) > 16 and data[:4] == importlib.util.MAGIC_NUMBER
            and int.from_bytes(data[4:8], "little") & 0b1 == 1 and data[8:16] == source_hash)


class CheckedLoader(importlib.machinery.SourceFileLoader):
    """A source loader that trusts a ``.pyc`` only by the hash of the source it was compiled from."""

    def get_code(self, fullname: str) -> CodeType:
        source_path = self.get_filename(fullname)
        source = self.get_data(source_path)
        source_hash = importlib.util.source_hash(source)
        try:
            cached: str | None = importlib.util.cache_from_source(source_path)
        except NotImplementedError:  # sys.implementation.cache_tag is None
            cached = None
        if cached is not None:
            try:
                data = self.get_data(cached)
            except OSError:
                data = b""
            if current_pyc(data, source_hash):
                try:
                    code = marshal.loads(memoryview(data)[16:])
                except (EOFError, ValueError, TypeError):
                    code = None
                if isinstance(code, CodeType):
                    return code
        code = self.source_to_code(source, source_path)
        if cached is not None and not sys.dont_write_bytecode:
            pyc = importlib.util.MAGIC_NUMBER + FLAGS.to_bytes(4, "little") + source_hash + marshal.dumps(code)
            try:
                self._cache_bytecode(source_path, cached, pyc)  # type: ignore[attr-defined]
            except (OSError, AttributeError):
                pass  # a read-only checkout: compiled again next time
        return code


class CheckedFinder:
    """A ``sys.meta_path`` finder giving ``lab.*`` source modules a :class:`CheckedLoader`."""

    @classmethod
    def find_spec(cls, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> Any:
        if not fullname.startswith("lab."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader and spec.origin:
            spec.loader = CheckedLoader(fullname, spec.origin)
        return spec


def install() -> None:
    """Put :class:`CheckedFinder` first on ``sys.meta_path`` (once)."""
    if CheckedFinder not in sys.meta_path:
        sys.meta_path.insert(0, CheckedFinder)


def compile_package(root: Path) -> int:
    """Write a checked-hash ``.pyc`` for every source under ``root`` whose ``.pyc`` is not current;
    returns how many were written (a source that does not compile is left for its import to name)."""
    import py_compile

    written = 0
    for source in sorted(root.rglob("*.py")):
        data = source.read_bytes()
        cached = Path(importlib.util.cache_from_source(str(source)))
        try:
            if current_pyc(cached.read_bytes(), importlib.util.source_hash(data)):
                continue
        except OSError:
            pass
        try:
            py_compile.compile(str(source), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
            written += 1
        except py_compile.PyCompileError:
            pass
    return written


def main() -> None:
    """What ``make`` runs: :func:`compile_package` over the lab package."""
    compile_package(Path(__file__).resolve().parent)
