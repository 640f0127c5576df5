"""Reliability Lab: does a change to a coding agent make it better or worse?

The public API, imported lazily so that ``import lab.x`` stays cheap::

    from lab import run_eval, summarise_records, wilson_interval
    summary = run_eval(["suite=core", "mode=replay"], on_attempt=print)

(``docs/api.md``: callbacks, typed summaries, attempts counted from 1.)

Everything not listed in ``__all__`` is internal.
"""

from __future__ import annotations

import importlib
from typing import Any

from lab.bytecode import install as _checked_bytecode

_checked_bytecode()  # lab.* modules never run from a .pyc older than their source (lab.bytecode)

_EXPORTS = {
    "Attempt": "lab.report.summary",
    "CassetteError": "lab.errors",
    "ConfigError": "lab.errors",
    "EffectiveConfig": "lab.config.compose",
    "EvalSummary": "lab.report.summary",
    "IncompatibleRecords": "lab.report.summary",
    "LabError": "lab.errors",
    "ProviderError": "lab.errors",
    "RunSpec": "lab.execute.plan",
    "Suite": "lab.suites.load",
    "SuiteError": "lab.errors",
    "Task": "lab.suites.load",
    "TaskSummary": "lab.report.summary",
    "compare_reports": "lab.compare.verdicts",
    "compose_config": "lab.config.compose",
    "find_secrets": "lab.export.secrets",
    "load_suite": "lab.suites.load",
    "pass_at_k": "lab.report.stats",
    "pass_hat_k": "lab.report.stats",
    "run_eval": "lab.build.api",
    "run_suite": "lab.build.commands",
    "summarise_records": "lab.report.summary",
    "wilson_interval": "lab.report.stats",
}

__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'lab' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])
