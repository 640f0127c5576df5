"""Turn a configuration and a suite into ordered run specs (SPEC X1, X4).

A run is one repetition ``i`` (0 … k-1) of one task. Its record is a build
target keyed by its inputs: config hash, harness digest, suite digest, task
id, base seed, repetition index, and in replay the task's cassette.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

from lab.config.compose import EffectiveConfig
from lab.errors import ConfigError
from lab.suites.load import Suite, Task

HARNESS_VERSION = "0.1.0"
"""The built-in harness's version, in every report and cassette header."""

PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")


@dataclass(frozen=True)
class RunSpec:
    """Repetition ``repetition`` of ``task_id``; its seed is ``base_seed + repetition``."""

    task_id: str
    repetition: int
    base_seed: int

    @property
    def seed(self) -> int:
        return self.base_seed + self.repetition

    @property
    def name(self) -> str:
        """``s<base seed>-r<repetition>``: the record's file stem."""
        return f"s{self.base_seed}-r{self.repetition}"


def plan_runs(task_ids: list[str], k: int, seed: int) -> list[RunSpec]:
    """Every task × k repetitions, in an order shuffled by ``seed`` (X1).

    The same (tasks, k, seed) always gives the same order.
    """
    specs = [RunSpec(task_id, i, seed) for task_id in task_ids for i in range(k)]
    random.Random(seed).shuffle(specs)
    return specs


def select_tasks(suite: Suite, wanted: list[str]) -> list[Task]:
    """The tasks named by the ``tasks`` override, or all of them.

    Raises:
        ConfigError: a named task does not exist in the suite.
    """
    if not wanted:
        return list(suite.tasks)
    known = {t.id for t in suite.tasks}
    unknown = [t for t in wanted if t not in known]
    if unknown:
        raise ConfigError(f"config: tasks: suite {suite.id} has no task {', '.join(map(repr, unknown))} "
                          f"(tasks: {', '.join(sorted(known))})")
    return [t for t in suite.tasks if t.id in set(wanted)]


def check_grants(tasks: list[Task], config: EffectiveConfig, suite_id: str) -> None:
    """Reject tasks that need an effect the user did not grant (SPEC C3).

    A suite can only equal or narrow the user's grants (``allow``,
    ``read_only``, ``allow_suite_full``); a task that needs more is rejected
    before the first run, never silently trimmed. Every rejected task and
    effect is listed at once.

    Raises:
        ConfigError: one line per task and missing grant, e.g.
            ``suite smoke-coding: task rename-symbol: policy.allow: needs effect
            process, which is not granted (grant it with allow=[process,write], or
            leave the task out with tasks=[…])``.
    """
    granted = set(config.data["allow"])
    problems = []
    for task in tasks:
        where = f"suite {suite_id}: task {task.id}"
        missing = sorted(task.effects - granted)
        if missing:
            problems.append(f"{where}: policy.allow: needs effect {', '.join(missing)}, which is not "
                            f"granted (grant it with allow=[{','.join(sorted(granted | set(missing)))}], "
                            f"or leave the task out with tasks=[…])")
        if config.data["read_only"] and "write" in task.effects and not task.policy.get("readOnly"):
            problems.append(f"{where}: policy.allow: needs effect write, but read_only=true "
                            f"denies every write")
        if task.policy["mode"] == "full" and not config.data["allow_suite_full"]:
            problems.append(f"{where}: policy.mode: 'full' needs allow_suite_full=true")
    if problems:
        raise ConfigError("\n".join(problems))


def run_id(suite_id: str, store_key: str, k: int, seed: int, tasks: list[str] | None = None) -> str:
    """A plain, unique report name: ``<suiteId>.<store key>.k<k>.s<seed>``.

    The store key (:func:`lab.config.identity.store_key`) names the suite
    version, the effective-config hash (12 hex) and the endpoint, e.g.
    ``smoke-coding.v1.0.0.3f2a9c1e0b7d.scripted.k3.s0``. A run over a subset
    of the tasks (``tasks=[…]``) gets ``.t<8 hex>`` of the sorted subset
    appended, so it never overwrites the full report.
    """
    base = f"{suite_id}.{store_key}.k{k}.s{seed}"
    if not tasks:
        return base
    return f"{base}.t{hashlib.sha256(','.join(sorted(tasks)).encode()).hexdigest()[:8]}"


def harness_digest() -> str:
    """sha256 hex of the code a run can execute (:func:`lab.execute.harness.harness_digest`)."""
    from lab.execute.harness import harness_digest as digest

    return digest()
