"""Differential check of the lab's memos: a warm command against builds without any cache (SPEC X10).

A :class:`Lab` is a copy of the checkout (``lab/``, ``conf/``, ``dodo.py``,
``pyproject.toml``, the ``smoke-coding`` suite and its cassettes) in a
temporary directory, run as ``python -m doit eval …`` with the copy first on
``PYTHONPATH``, so its code, configuration, suite and cassettes can all be
edited. After every edit (:data:`EDITS`) :meth:`Lab.check` runs three
commands and compares them:

- *warm*: the command in the lab's data dir, with every memo (user cache dir
  and data-dir cache shared with earlier commands);
- *reference*: the same command with ``LAB_NO_CACHE=1`` in a copy of that
  data dir taken before the warm command: the runs it executes are the runs
  that are out of date by their inputs alone;
- *cold*: the command with ``LAB_NO_CACHE=1`` in a fresh data dir.

The reference and cold commands also compile every module from source
(``PYTHONPYCACHEPREFIX`` set to a new directory): bytecode is a cache too.

The warm command must execute the reference's runs, and its report must
equal the cold build's, volatile fields (times, durations, paths) left out.
Used by ``tests/build/test_cache_differential.py`` (bounded) and
``benchmarks/cache_differential.py`` (longer).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("LAB_DIFFERENTIAL_SOURCE") or Path(__file__).resolve().parents[2])
"""The checkout copied (``LAB_DIFFERENTIAL_SOURCE``: another one, e.g. an older lab to show what it missed)."""
SUITE = "smoke-coding"
TASKS = ("fix-default-argument", "rename-symbol")
VOLATILE = frozenset({"startedAt", "finishedAt", "ts", "workspace", "startupMs"})
PLUGIN = '''from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class LabDifferentialSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.prepend(provider="lab-differential", path="file://{extra}")
'''


def _volatile(key: str) -> bool:
    return key in VOLATILE or "wallMs" in key or key.endswith("Ms") and key != "maxWallMs"


def normalised(doc: Any) -> Any:
    """``doc`` without the fields that differ between two builds of the same runs (times, paths)."""
    if isinstance(doc, dict):
        return {k: normalised(v) for k, v in doc.items() if not _volatile(k)}
    if isinstance(doc, list):
        return [normalised(v) for v in doc]
    return doc


def same_size(path: Path, old: str, new: str, *, keep_mtime: bool = True) -> bool:
    """Replace ``old`` by ``new`` (same length) in ``path`` in place, its mtime put back; False when absent."""
    assert len(old.encode()) == len(new.encode())
    text = path.read_text(encoding="utf-8")
    if old not in text:
        return False
    times = path.stat()
    with path.open("r+", encoding="utf-8") as fh:  # in place: same inode
        fh.write(text.replace(old, new, 1))
    if keep_mtime:
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    return True


def toggle(path: Path, a: str, b: str) -> str:
    """Swap ``a`` for ``b`` or back (same size, mtime put back); what was done."""
    if same_size(path, a, b):
        return f"{path.name}: {a!r} -> {b!r}"
    same_size(path, b, a)
    return f"{path.name}: {b!r} -> {a!r}"


@dataclass
class Outcome:
    executed: list[tuple[str, int]]
    report: Any
    output: str


@dataclass
class Lab:
    """A copy of the checkout and the state of its environment (see the module docstring)."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)
    commands: int = 0

    @classmethod
    def make(cls, where: Path) -> Lab:
        root = where / "checkout"
        root.mkdir(parents=True)
        shutil.copytree(ROOT / "lab", root / "lab", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "conf", root / "conf")
        shutil.copytree(ROOT / "suites" / SUITE, root / "suites" / SUITE)
        shutil.copytree(ROOT / "cassettes" / SUITE, root / "cassettes" / SUITE)
        for name in ("dodo.py", "pyproject.toml"):
            shutil.copy2(ROOT / name, root / name)
        fixture = root / "suites" / SUITE / "fixtures" / TASKS[1]
        (fixture / "NOTES.txt").write_text("notes\n", encoding="utf-8")
        (fixture / "OTHER.txt").write_text("other\n", encoding="utf-8")
        (fixture / "LINK").symlink_to("NOTES.txt")
        for name in ("data", "cache"):
            (where / name).mkdir()
        return cls(root)

    @property
    def where(self) -> Path:
        return self.root.parent

    def run(self, data: Path, *, no_cache: bool) -> Outcome:
        """``doit eval`` of the two tasks in replay against ``data``; the runs it executed and its report."""
        before = self._started(data)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("LAB_", "PYTHON", "OPENAI_")) and k != "XDG_CACHE_HOME"}
        env.update(self.env, PYTHONPATH=str(self.root), LAB_DATA_DIR=str(data),
                   LAB_CACHE_DIR=str(self.where / "cache"))
        if no_cache:  # no memo of the lab's and no bytecode of Python's: everything from source
            env["LAB_NO_CACHE"] = "1"
            env["PYTHONPYCACHEPREFIX"] = str(self.where / f"pycache-{self.commands}")
        done = subprocess.run([sys.executable, "-m", "doit", "eval", f"suite={SUITE}", "mode=replay",
                               f"tasks=[{','.join(TASKS)}]", "sandbox=none",
                               "overwrite=true"],  # suite edits keep suiteVersion (lab.build.baseline)
                              cwd=self.root, env=env, capture_output=True, text=True, timeout=300, check=False)
        self.commands += 1
        output = done.stdout + done.stderr
        report_lines = [line for line in output.splitlines() if line.startswith("report: ")]
        if done.returncode not in (0, 1, 2) or not report_lines:
            raise AssertionError(f"eval exited {done.returncode}:\n{output}")
        report = json.loads((Path(report_lines[-1][8:]).parent / "report.json").read_text(encoding="utf-8"))
        return Outcome(sorted(self._started(data) - before), normalised(report), output)

    @staticmethod
    def _started(data: Path) -> set[tuple[str, int]]:
        """(history file, line number) of every ``run_started`` event in ``data``, as (task, line) pairs."""
        found = set()
        for history in data.rglob("history.jsonl"):
            for number, line in enumerate(history.read_text(encoding="utf-8").splitlines()):
                event = json.loads(line)
                if event.get("event") == "run_started":
                    found.add((f"{history.parent.name}/{event['taskId']}", number))
        return found

    def check(self) -> list[str]:
        """Run warm, reference and cold (module docstring); the mismatches found (empty: none)."""
        data = self.where / "data"
        reference_dir = self.where / f"reference-{self.commands}"
        shutil.copytree(data, reference_dir, symlinks=True)
        warm = self.run(data, no_cache=False)
        reference = self.run(reference_dir, no_cache=True)
        cold_dir = self.where / f"cold-{self.commands}"
        cold_dir.mkdir()
        cold = self.run(cold_dir, no_cache=True)
        for leftover in (reference_dir, cold_dir, *self.where.glob("pycache-*")):
            shutil.rmtree(leftover, ignore_errors=True)
        problems = []
        if [t for t, _ in warm.executed] != [t for t, _ in reference.executed]:
            problems.append(f"executed {warm.executed}, without caches {reference.executed}")
        if warm.report != cold.report:
            problems.append("report differs from a cold build:\n" + _diff(warm.report, cold.report))
        return problems


def _diff(a: Any, b: Any, where: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        return "".join(_diff(a.get(k), b.get(k), f"{where}.{k}") for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return "".join(_diff(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
    return f"  {where}: warm {json.dumps(a)[:200]} cold {json.dumps(b)[:200]}\n"


# Every edit: (lab, a random source) -> what it did.
def edit_fixture(lab: Lab, rnd: random.Random) -> str:
    check = lab.root / "suites" / SUITE / "fixtures" / TASKS[0] / "check.py"
    return toggle(check, "assert sizes == [10, 10, 3]", "assert sizes == [10, 10, 4]")


def edit_verifier(lab: Lab, rnd: random.Random) -> str:
    return toggle(lab.root / "suites" / SUITE / "suite.json", '"text": "page_size=10"', '"text": "page_size=11"')


def edit_suite_json(lab: Lab, rnd: random.Random) -> str:
    return toggle(lab.root / "suites" / SUITE / "suite.json", '"maxTurns": 12,', '"maxTurns":  2,')


def edit_conf(lab: Lab, rnd: random.Random) -> str:
    return toggle(lab.root / "conf" / "config.yaml", "\nseed: 0 ", "\nseed: 3 ")


def edit_env(lab: Lab, rnd: random.Random) -> str:
    if "OPENAI_BASE_URL" in lab.env:
        del lab.env["OPENAI_BASE_URL"]
        return "OPENAI_BASE_URL unset"
    lab.env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{rnd.randrange(1024, 65535)}/v1"
    return f"OPENAI_BASE_URL={lab.env['OPENAI_BASE_URL']}"


def edit_lab_module(lab: Lab, rnd: random.Random) -> str:
    choice = rnd.randrange(3)
    if choice == 0:  # every run exceeds its budget
        return toggle(lab.root / "lab" / "execute" / "run.py", 'max_turns=b["maxTurns"],', 'max_turns=1            ,')
    if choice == 1:  # a report figure (the Wilson interval's z)
        return toggle(lab.root / "lab" / "report" / "stats.py", "Z_95 = 1.959963984540054", "Z_95 = 1.644853626951472")
    return toggle(lab.root / "lab" / "providers" / "preflight.py", "# preflight comment A\n", "# preflight comment B\n") \
        if "# preflight comment" in (lab.root / "lab" / "providers" / "preflight.py").read_text(encoding="utf-8") \
        else _append(lab.root / "lab" / "providers" / "preflight.py", "# preflight comment A\n")


def _append(path: Path, text: str) -> str:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)
    return f"{path.name}: appended {text!r}"


def edit_cassette(lab: Lab, rnd: random.Random) -> str:
    cassette = lab.root / "cassettes" / SUITE / f"{TASKS[0]}.jsonl"
    text = cassette.read_text(encoding="utf-8")
    a, b = '"prompt_tokens":192', '"prompt_tokens":194'
    if a in text or b in text:  # the reported usage of the first call: 2 tokens more or fewer
        return toggle(cassette, a, b)
    return "cassette: nothing to change"


def edit_rename(lab: Lab, rnd: random.Random) -> str:
    fixture = lab.root / "suites" / SUITE / "fixtures" / TASKS[1]
    if (fixture / "NOTES.txt").exists():
        (fixture / "NOTES.txt").rename(fixture / "NOTES.md")
        return "NOTES.txt -> NOTES.md"
    (fixture / "NOTES.md").rename(fixture / "NOTES.txt")
    return "NOTES.md -> NOTES.txt"


def edit_symlink(lab: Lab, rnd: random.Random) -> str:
    link = lab.root / "suites" / SUITE / "fixtures" / TASKS[1] / "LINK"
    target = "OTHER.txt" if os.readlink(link) == "NOTES.txt" else "NOTES.txt"
    link.unlink()
    link.symlink_to(target)
    return f"LINK -> {target}"


def edit_junk(lab: Lab, rnd: random.Random) -> str:
    """Files a run's copy leaves out (bytecode, .DS_Store): nothing may change."""
    fixture = lab.root / "suites" / SUITE / "fixtures" / TASKS[0]
    name = rnd.choice(["stale.pyc", ".DS_Store", "__pycache__/check.cpython-311.pyc"])
    path = fixture / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(os.urandom(16))
    return f"junk {name}"


def edit_plugin(lab: Lab, rnd: random.Random) -> str:
    """A Hydra plugin in a ``hydra_plugins/`` on ``PYTHONPATH`` whose search path comes first and
    holds a ``config.yaml`` with another seed; or its removal."""
    plugins = lab.root / "hydra_plugins"
    if plugins.exists():
        shutil.rmtree(plugins)
        return "plugin removed"
    extra = lab.where / "extra-conf"
    extra.mkdir(exist_ok=True)
    config = (lab.root / "conf" / "config.yaml").read_text(encoding="utf-8")
    (extra / "config.yaml").write_text(config.replace("\nseed: 0 ", "\nseed: 5 ").replace("\nseed: 3 ", "\nseed: 5 "),
                                       encoding="utf-8")
    (plugins / "lab_differential").mkdir(parents=True)
    (plugins / "lab_differential" / "__init__.py").write_text(PLUGIN.format(extra=extra), encoding="utf-8")
    return "plugin added"


def edit_escaped_env(lab: Lab, rnd: random.Random) -> str:
    """A config value that reads the environment through an interpolation spelled with a YAML escape
    (``"\\x24{oc.env:…}"``: the raw text shows no ``${``), then the variable's value toggled."""
    agent = lab.root / "conf" / "agent" / "builtin.yaml"
    text = agent.read_text(encoding="utf-8")
    if "DIFF_TOKENS" not in text:
        agent.write_text(text.replace("\nmax_output_tokens: 4096", '\nmax_output_tokens: "\\x24{oc.env:DIFF_TOKENS,4096}"'),
                         encoding="utf-8")
    lab.env["DIFF_TOKENS"] = "4000" if lab.env.get("DIFF_TOKENS") == "4096" else "4096"
    return f"max_output_tokens reads DIFF_TOKENS={lab.env['DIFF_TOKENS']}"


def edit_outside_link(lab: Lab, rnd: random.Random) -> str:
    """A suite file linked through a link outside the suite (``VIA -> <outside>/junction/OTHER.txt``, the
    junction naming one of two fixture directories): the junction retargeted, the suite's own bytes kept
    (the suite digest covers what the link resolves to)."""
    fixtures = lab.root / "suites" / SUITE / "fixtures"
    junction, elsewhere = lab.where / "junction", fixtures / TASKS[0] / "OTHER.txt"
    if not elsewhere.exists():
        elsewhere.write_text("other, in the other fixture\n", encoding="utf-8")
    via = lab.root / "suites" / SUITE / "VIA"
    if not via.is_symlink():
        via.symlink_to(junction / "OTHER.txt")
    target = fixtures / TASKS[0] if junction.is_symlink() and os.readlink(junction) == str(fixtures / TASKS[1]) \
        else fixtures / TASKS[1]
    junction.unlink(missing_ok=True)
    junction.symlink_to(target)
    return f"junction -> {target.name}"


EDITS: dict[str, Callable[[Lab, random.Random], str]] = {
    "fixture": edit_fixture, "verifier": edit_verifier, "suite.json": edit_suite_json, "conf": edit_conf,
    "env": edit_env, "lab module": edit_lab_module, "cassette": edit_cassette, "rename": edit_rename,
    "symlink": edit_symlink, "junk": edit_junk, "plugin": edit_plugin, "escaped env": edit_escaped_env,
    "outside link": edit_outside_link,
}
