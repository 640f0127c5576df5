"""Where a cassette lives under a cassette directory (nothing else: cheap to import)."""

from __future__ import annotations

from pathlib import Path


def cassette_path(cassette_dir: Path, suite_id: str, task_id: str) -> Path:
    """``<cassette dir>/<suite>/<task>.jsonl``: the built-in agent's recording of one task.

    (A command agent's recordings: ``lab.execute.agent_cassettes.agent_cassette_path``.)
    """
    return cassette_dir / suite_id / f"{task_id}.jsonl"
