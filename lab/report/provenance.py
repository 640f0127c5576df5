"""Under what conditions a report's runs were made, from the runs themselves (SPEC X10, K3).

A report states the execution facts of its runs (``header.execution``): how
many ran at once (``jobs``), the machine's fingerprint, the sandbox backend,
the executor and the lab's version, read from each run record's ``runtime``
block, never from the command that built the report (a report rebuilt by a
``jobs=3`` command over runs made with ``jobs=1`` says ``jobs: 1``). Runs made
under different conditions are stated as mixed: ``lab compare`` then compares
no wall time.
"""

from __future__ import annotations

from typing import Any

EXECUTION_KEYS = ("jobs", "machine", "sandbox", "executor", "labVersion")
"""The execution facts of a run record's ``runtime`` block a report states (``header.execution``)."""


class ExecutionFacts:
    """The ``header.execution`` block of a report, from its runs' records (not from the command
    that built it): per key the one value every record has, ``{"mixed": [values]}`` when they
    differ (a report over runs made with ``jobs=1`` and ``jobs=3``), None when no record says."""

    def __init__(self) -> None:
        self.values: dict[str, set[Any]] = {key: set() for key in EXECUTION_KEYS}

    def add(self, record: dict[str, Any]) -> None:
        found = record.get("runtime")
        runtime: dict[str, Any] = found if isinstance(found, dict) else {}
        for key in EXECUTION_KEYS:
            value = runtime.get(key)
            self.values[key].add(value if isinstance(value, (str, int)) else None)

    def block(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, values in self.values.items():
            if len(values) > 1:
                out[key] = {"mixed": sorted(values, key=lambda v: (v is None, str(v)))}
            else:
                out[key] = next(iter(values), None)
        return out
