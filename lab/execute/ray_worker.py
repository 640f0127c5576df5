"""What a Ray worker does with one run (``executor=ray``; docs/distributed.md).

The driver (:mod:`lab.execute.ray_driver`) sends :func:`run_remote` the
eval's key and a reference to its manifest (put once per eval): the composed
configuration, the suite and the cassettes, each a Ray object named by its
digest, plus the driver's harness digest, the sandbox backend the runs were
planned with, the eval's cancel flag and the provider's call limiter. A
worker process fetches the manifest at its first run of the eval and keeps
what it made of it (by the eval's key) for the next ones. The worker

1. refuses the run when its own harness digest is not the driver's (one
   line naming both: records of two lab versions never share an identity);
2. materialises the suite and cassettes in its own temp dir, once per digest
   and worker process (no shared filesystem), and checks the suite digest;
3. executes the run as :func:`lab.execute.run.execute_run` does locally, in
   its own sandbox, with the provider keys of its own environment;
4. returns the record by value, and in record mode the cassette it wrote.

Ray is imported inside the functions: this module is loaded on the driver
only when ``executor=ray``.
"""

from __future__ import annotations

import asyncio
import io
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CallLimiter", "CancelFlag", "pack_tree", "run_remote"]

_LOCK = threading.Lock()
_DIRS: dict[str, Path] = {}
_CONTEXTS: dict[str, Any] = {}
_WATCHED: set[str] = set()
_MANIFESTS: dict[str, dict[str, Any]] = {}


class CancelFlag:
    """A Ray actor per driver: set on Ctrl-C; every worker process waits on it (no polling)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def wait(self) -> bool:
        await self.event.wait()
        return True

    async def set(self) -> None:
        self.event.set()


class CallLimiter:
    """A Ray actor holding the cluster's call slots for one provider endpoint (a semaphore).

    Args:
        cap: ``provider.max_concurrent_calls``.
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.slots = asyncio.Semaphore(cap)
        self.held = self.peak = 0

    async def acquire(self) -> None:
        await self.slots.acquire()
        self.held += 1
        self.peak = max(self.peak, self.held)

    async def release(self) -> None:
        self.held -= 1
        self.slots.release()

    async def peak_held(self) -> int:
        """The most slots ever held at once."""
        return self.peak


def pack_tree(root: Path, *, skip_top: frozenset[str] = frozenset()) -> bytes:
    """An uncompressed tar of directory ``root`` (entries named ``<root name>/…``), sorted.

    Caches (``__pycache__``, ``.git``, ``.pytest_cache``, ``*.pyc``) and the
    top-level names in ``skip_top`` are left out.
    """
    from lab.sandbox.walk import DIR, FIXTURE_BOUNDS, LINK, walk

    skip = {"__pycache__", ".git", ".pytest_cache", ".DS_Store"}
    buffer = io.BytesIO()
    # lab.sandbox.walk: iterative (any depth), never into a linked directory, bounded.
    entries = sorted(walk(root, skip=skip.__contains__, bounds=FIXTURE_BOUNDS), key=lambda e: Path(e.rel).parts)
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            rel = Path(entry.rel)
            linked_dir = entry.kind == LINK and (root / rel).is_dir()  # left out, as directories are
            if rel.parts[0] in skip_top or rel.suffix == ".pyc" or entry.kind == DIR or linked_dir:
                continue
            tar.add(entry.path, arcname=f"{root.name}/{entry.rel}", recursive=False)
    return buffer.getvalue()


def _materialised(digest: str, ref: Any) -> Path:
    """The directory this worker process unpacked object ``ref`` (digest ``digest``) into; once per digest."""
    import ray

    from lab.execute.sandboxing import process_run_root

    with _LOCK:
        if digest not in _DIRS:
            # in the process's run root: removed at exit, and reaped by the next lab command when the
            # cluster's shutdown kills this worker (its exit handlers never run then)
            where = Path(tempfile.mkdtemp(prefix=f"lab-{digest[:12]}-", dir=process_run_root()))
            with tarfile.open(fileobj=io.BytesIO(ray.get(ref)), mode="r") as tar:
                tar.extractall(where, filter="data")
            _DIRS[digest] = where
        return _DIRS[digest]


def _context(manifest: dict[str, Any]) -> Any:
    """The ``EvalContext`` of this eval in this worker process (made once per eval)."""
    import ray

    from lab.config.compose import EffectiveConfig
    from lab.errors import SuiteError
    from lab.execute.context import EvalContext
    from lab.suites.load import load_suite

    key = manifest["eval"]
    with _LOCK:
        ctx = _CONTEXTS.get(key)
    if ctx is not None:
        return ctx
    doc = ray.get(manifest["config"][1][0])
    data = dict(doc["data"])
    data["sandbox"] = {**data["sandbox"], "name": manifest["sandbox"]}  # the backend the runs were planned with
    config = EffectiveConfig(data=data, variant=doc["variant"], overrides=tuple(doc["overrides"]))
    suite_digest, suite_ref = manifest["suite"]
    suite = load_suite(_materialised(suite_digest, suite_ref[0]) / manifest["suiteDir"])
    if suite.digest != suite_digest:
        raise SuiteError([f"suite {suite.id}: unpacked on this worker with digest {suite.digest[:12]}, "
                          f"the driver's is {suite_digest[:12]}"])
    cassettes = manifest["cassettes"]
    if cassettes:
        cassette_dir = _materialised(cassettes[0], cassettes[1][0])
    else:
        from lab.execute.sandboxing import process_run_root

        cassette_dir = Path(tempfile.mkdtemp(prefix="lab-cassettes-", dir=process_run_root()))
    ctx = EvalContext(config=config, suite=suite, cassette_dir=cassette_dir, work_dir=None)
    limiter = manifest["limiter"]
    if limiter is not None:
        ctx.call_gate = _remote_gate(limiter[0])
    with _LOCK:
        return _CONTEXTS.setdefault(key, ctx)


def _remote_gate(limiter: Any) -> Any:
    import ray

    @contextmanager
    def slot() -> Iterator[None]:
        ray.get(limiter.acquire.remote())
        try:
            yield
        finally:
            limiter.release.remote()

    return slot


def _watch(manifest: dict[str, Any], ctx: Any) -> None:
    """Set ``ctx.cancel`` when the driver sets its cancel flag (one waiting thread per eval and process)."""
    import ray

    key = manifest["eval"]
    with _LOCK:
        if key in _WATCHED:
            return
        _WATCHED.add(key)
    flag = manifest["cancel"][0]

    def wait() -> None:
        try:
            ray.get(flag.wait.remote())
        except Exception:  # the driver is gone: so is the point of this run  # noqa: BLE001
            pass
        ctx.cancel.set()

    threading.Thread(target=wait, name="lab-cancel-watch", daemon=True).start()


def _manifest(key: str, ref: Any) -> dict[str, Any]:
    """The manifest of eval ``key``, fetched once per worker process and eval."""
    import ray

    with _LOCK:
        manifest = _MANIFESTS.get(key)
    if manifest is None:
        manifest = ray.get(ref)
        with _LOCK:
            manifest = _MANIFESTS.setdefault(key, manifest)
    return manifest


def run_remote(key: str, manifest_ref: list[Any], task_id: str, repetition: int, base_seed: int) -> dict[str, Any]:
    """Execute one run of eval ``key`` on this worker; the reply the driver reads (:mod:`lab.execute.ray_driver`).

    Args:
        key: the eval's key (``manifest["eval"]``).
        manifest_ref: ``[ObjectRef]`` of the eval's manifest (in a list, so Ray
            does not fetch it for every run).
        task_id, repetition, base_seed: the run's spec.

    Returns:
        ``{"kind": "record", "record", "node"[, "cassette"]}``, ``{"kind":
        "refused", "message", "node"}`` (another harness) or ``{"kind":
        "cancelled", "node"}``.
    """
    import ray

    from lab.execute.plan import RunSpec, harness_digest
    from lab.execute.run import execute_run

    node = ray.get_runtime_context().get_node_id()
    manifest = _manifest(key, manifest_ref[0])
    mine, theirs = harness_digest(), manifest["harness"]
    if mine != theirs:
        return {"kind": "refused", "node": node,
                "message": f"refused by the Ray worker on node {node[:12]}: its lab harness digest is {mine}, "
                           f"the driver's is {theirs} (install the same lab on every node)"}
    ctx = _context(manifest)
    _watch(manifest, ctx)
    if ctx.cancel.is_set():
        return {"kind": "cancelled", "node": node}
    record = execute_run(ctx, RunSpec(task_id, repetition, base_seed))
    if ctx.cancel.is_set():
        return {"kind": "cancelled", "node": node}
    reply: dict[str, Any] = {"kind": "record", "record": record, "node": node}
    if ctx.config.mode == "record":
        from lab.replay.layout import cassette_path

        path = cassette_path(ctx.cassette_dir, ctx.suite.id, task_id)
        if path.exists():
            reply["cassette"] = path.read_bytes()
            path.unlink()
    return reply
