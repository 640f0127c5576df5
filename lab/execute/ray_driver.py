"""``executor=ray``: the driver's side of runs executed as Ray tasks (SPEC X9; docs/distributed.md).

doit still decides on the driver which runs are stale; each stale run's
action calls :meth:`RayExecutor.execute`, which sends the run to a Ray task
(:func:`lab.execute.ray_worker.run_remote`) and waits for its record by
value. The composed configuration, the suite and the cassettes are put once
per eval as Ray objects named by their digests (an object already put for
the same digest is reused, e.g. by the next eval of a sweep), and the eval's
manifest naming them is put once too: a run's task carries only the eval's
key, a reference to the manifest (fetched by a worker process once per eval)
and the run's spec, which keeps a dispatch to a few milliseconds.

Failures by kind:

- a run that fails or errors is data: the task returns its record and Ray
  never retries it (``retry_exceptions=False``);
- a worker or node that dies mid-run is retried by Ray up to
  ``executor.max_retries`` times, then the run is recorded as an
  infrastructure error (``error.kind: worker_lost``);
- a worker whose harness digest differs refuses the run
  (``error.kind: harness_mismatch``, one line naming both digests).

Ctrl-C: the eval's cancel event is set (no new runs), the cancel flag actor
tells every worker to stop its runs as a local Ctrl-C would (agent, tools and
verifiers killed), and runs still in flight after ``executor.cancel_grace_s``
are cancelled with ``ray.cancel(force=True)``. No record is written for them.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any

from lab.errors import ConfigError

__all__ = ["RayExecutor", "ray_executor"]

_EXECUTORS: dict[str, RayExecutor] = {}
_EXECUTORS_LOCK = threading.Lock()
WORKER_LOST = "worker_lost"
HARNESS_MISMATCH = "harness_mismatch"


def ray_executor(settings: dict[str, Any]) -> RayExecutor:
    """The process's :class:`RayExecutor` for these ``executor`` settings (connected once).

    Raises:
        ConfigError: Ray is not installed, the cluster cannot be reached, or no
            node advertises the per-run resources.
    """
    key = json.dumps(settings, sort_keys=True)
    with _EXECUTORS_LOCK:
        if key not in _EXECUTORS:
            executor = RayExecutor(settings)
            executor.connect()
            _EXECUTORS[key] = executor
        return _EXECUTORS[key]


class RayExecutor:
    """Executes runs as Ray tasks; see the module docstring.

    Args:
        settings: the ``executor`` config group (``address``, ``resources``,
            ``max_retries``, ``cancel_grace_s``).
    """

    name = "ray"

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.resources = {str(k): float(v) for k, v in (settings.get("resources") or {}).items()}
        self._objects: dict[str, Any] = {}  # digest -> ObjectRef, put once per process
        self._manifests: dict[int, tuple[Any, dict[str, Any]]] = {}  # id(ctx) -> (ctx, its manifest); ctx kept
        self._making = threading.Lock()  # one manifest (and call limiter) per eval, however many runs ask at once
        self._limiters: dict[tuple[str, int], Any] = {}
        self._inflight: set[Any] = set()
        self._idle = threading.Condition()
        self._watched: dict[int, Any] = {}  # id(cancel event) -> the event, kept alive
        self._flag: Any = None
        self._task: Any = None

    def connect(self) -> None:
        """Join the cluster at ``executor.address`` (null: start one in this process)."""
        try:
            import ray
        except ImportError:
            raise ConfigError("config: executor=ray: Ray is not installed; install the extra with "
                              "pip install -e '.[ray]'") from None
        from lab.execute.ray_worker import CancelFlag, run_remote

        address = self.settings.get("address")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")  # Ray's C++ warnings would bury the lab's one line
        if not ray.is_initialized():
            options: dict[str, Any] = {"logging_level": "ERROR", "log_to_driver": False, "include_dashboard": False}
            if address is None:  # a local cluster: this machine advertises the per-run resources; jobs caps runs
                options["resources"] = {name: 1e6 for name in self.resources}
            try:
                # "local": a cluster of this command's own, even when `ray start` or RAY_ADDRESS names
                # another (address=None would join that one, where per-run resources cannot be advertised)
                _init_for_the_process(ray, address or "local", options)
            except Exception as exc:  # Ray's ConnectionError, ValueError …: one line, not a traceback
                where = address or "a local cluster"
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise ConfigError(f"config: executor.address: cannot start or reach {where}: {first}") from None
        available = ray.cluster_resources()  # type: ignore[no-untyped-call]
        missing = [name for name in self.resources if available.get(name, 0) < self.resources[name]]
        if missing:
            advert = json.dumps({name: 8 for name in missing})
            raise ConfigError(f"config: executor.resources: no node of the Ray cluster advertises "
                              f"{', '.join(missing)} (start workers with ray start --resources='{advert}')")
        self._flag = ray.remote(CancelFlag).options(num_cpus=0).remote()
        # spread: runs over every node that has slots from the first one (SPREAD), not packed onto the
        # driver's node; false: Ray's default scheduling (a node takes runs until half its slots are busy),
        # measured to dispatch several times more runs a second (docs/distributed.md).
        spread = bool(self.settings.get("spread", True))
        self._task = ray.remote(run_remote).options(
            num_cpus=0, resources=self.resources, max_retries=int(self.settings.get("max_retries", 3)),
            scheduling_strategy="SPREAD" if spread else "DEFAULT", retry_exceptions=False)

    def execute(self, ctx: Any, spec: Any) -> dict[str, Any] | None:
        """Send ``spec`` to a Ray task and return its record (None: cancelled); see the module docstring."""
        import ray

        from lab.execute.run import error_record

        manifest = self._manifest(ctx)
        self._watch(ctx)
        if ctx.cancel.is_set():
            return None
        ref = self._task.remote(manifest["eval"], manifest["ref"], spec.task_id, spec.repetition, spec.base_seed)
        with self._idle:
            self._inflight.add(ref)
        try:
            reply = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return None
        except ray.exceptions.RayTaskError as exc:  # a bug in the lab's worker code: data, like locally
            if ctx.cancel.is_set():
                return None
            record = error_record(ctx, spec, "internal", _first_line(exc))
            return self._finish(ctx, record, "")
        except ray.exceptions.RayError as exc:  # the worker or its node died on every try
            if ctx.cancel.is_set():
                return None
            tries = int(self.settings.get("max_retries", 3)) + 1
            message = f"the Ray worker executing this run was lost on each of {tries} tries: {_first_line(exc)}"
            return self._finish(ctx, error_record(ctx, spec, WORKER_LOST, message), "")
        finally:
            with self._idle:
                self._inflight.discard(ref)
                self._idle.notify_all()
        if reply["kind"] == "cancelled" or ctx.cancel.is_set():
            return None
        if reply["kind"] == "refused":
            return self._finish(ctx, error_record(ctx, spec, HARNESS_MISMATCH, reply["message"]), reply["node"])
        record = reply["record"]
        if "cassette" in reply:
            _write_cassette(ctx, spec.task_id, reply["cassette"], record)
        from lab.execute.recording import redact_record

        return self._finish(ctx, redact_record(ctx, record), reply["node"])  # the driver's scan, as locally

    def _finish(self, ctx: Any, record: dict[str, Any], node: str) -> dict[str, Any]:
        record["runtime"] = {**record.get("runtime", {}), "executor": self.name, "node": node}
        return record

    def _put(self, digest: str, value: Any) -> list[Any]:
        """The Ray object for ``digest``, put on first use; wrapped in a list so a task receives the
        reference (and fetches it once per worker process), not the value with every run."""
        import ray

        if digest not in self._objects:
            self._objects[digest] = ray.put(value)
        return [self._objects[digest]]

    def _manifest(self, ctx: Any) -> dict[str, Any]:
        """``{"eval": key, "ref": [manifest object]}``: what every run of ``ctx``'s eval sends (made and put
        once per eval; the manifest itself is described in :mod:`lab.execute.ray_worker`)."""
        with self._making:
            known = self._manifests.get(id(ctx))
            if known is None:
                known = self._manifests[id(ctx)] = (ctx, self._make_manifest(ctx))
            return known[1]

    def _make_manifest(self, ctx: Any) -> dict[str, Any]:
        from lab.canonical import canonical_hash
        from lab.execute.plan import harness_digest
        from lab.execute.ray_worker import pack_tree

        config = {"data": ctx.config.data, "variant": ctx.config.variant, "overrides": list(ctx.config.overrides)}
        config_digest = canonical_hash(config)
        suite = ctx.suite
        cassettes = None
        if ctx.config.mode == "replay":
            root = Path(ctx.cassette_dir) / suite.id
            packed = pack_tree(root)
            digest = hashlib.sha256(packed).hexdigest()
            cassettes = (digest, self._put(digest, packed))
        manifest = {"eval": f"{os.getpid()}-{uuid.uuid4().hex}", "harness": harness_digest(),
                    "config": (config_digest, self._put(config_digest, config)),
                    "suite": (suite.digest, self._put(suite.digest, pack_tree(suite.path, skip_top=frozenset(
                        {"cassettes"})))),
                    "suiteDir": suite.path.name, "cassettes": cassettes, "sandbox": ctx.sandbox_name(),
                    "cancel": [self._flag], "limiter": self._limiter(ctx)}
        import ray

        # in a list: fetched by the worker on need; the entry in _manifests keeps ctx alive, so its id
        # names no later eval of a sweep
        return {"eval": manifest["eval"], "ref": [ray.put(manifest)]}

    def _limiter(self, ctx: Any) -> list[Any] | None:
        """The cluster-wide call limiter of the eval's endpoint (``provider.max_concurrent_calls``)."""
        provider = ctx.config.data["provider"]
        cap = provider.get("max_concurrent_calls")
        if cap is None or ctx.config.mode == "replay":
            return None
        import ray

        from lab.config.identity import endpoint_identity, endpoint_key
        from lab.execute.ray_worker import CallLimiter

        key = (endpoint_key(endpoint_identity(provider, ctx.config.mode)), int(cap))
        if key not in self._limiters:
            self._limiters[key] = ray.remote(CallLimiter).options(num_cpus=0).remote(int(cap))
        return [self._limiters[key]]

    def limiter_peak(self, ctx: Any) -> int | None:
        """The most calls to ``ctx``'s endpoint ever in flight at once across the cluster (None: no cap)."""
        import ray

        limiter = self._limiter(ctx)
        return None if limiter is None else int(ray.get(limiter[0].peak_held.remote()))

    def _watch(self, ctx: Any) -> None:
        """On ``ctx.cancel``: tell the workers, then force what is still in flight after the grace."""
        with self._idle:
            if id(ctx.cancel) in self._watched:
                return
            self._watched[id(ctx.cancel)] = ctx.cancel

        def watch() -> None:
            import ray

            ctx.cancel.wait()
            self._flag.set.remote()
            with self._idle:
                self._idle.wait_for(lambda: not self._inflight, timeout=float(self.settings.get("cancel_grace_s", 10)))
                left = list(self._inflight)
            for ref in left:
                ray.cancel(ref, force=True)

        threading.Thread(target=watch, name="lab-ray-cancel", daemon=True).start()


def _init_for_the_process(ray: Any, address: str | None, options: dict[str, Any]) -> None:
    """``ray.init`` in a thread that lives as long as this process, and wait for it.

    A local cluster's daemons (GCS, raylet, agents) are started with
    ``PR_SET_PDEATHSIG``: the kernel kills them when the *thread* that started
    them ends, not the process. A run action's thread ends with its eval, so a
    cluster started there died between the evals of a sweep (the next eval's
    driver lost its raylet and exited). Started from this thread, the cluster
    stays until the process exits, and every eval of a sweep reuses it.

    Raises:
        Exception: whatever ``ray.init`` raised.
    """
    started = threading.Event()
    failed: list[BaseException] = []

    def keep() -> None:
        try:
            ray.init(address=address, **options)
        except BaseException as exc:  # noqa: BLE001 (re-raised in the caller's thread)
            failed.append(exc)
        started.set()
        if not failed:
            threading.Event().wait()  # never set: this thread ends with the process

    threading.Thread(target=keep, name="lab-ray-cluster", daemon=True).start()
    started.wait()
    if failed:
        raise failed[0]


def _write_cassette(ctx: Any, task_id: str, data: bytes, record: dict[str, Any]) -> None:
    """Write the cassette a worker recorded: scanned for secrets here too, timestamp kept when unchanged (R6)."""
    from lab.execute.recording import credential_env, recorded_at
    from lab.files import split_lines
    from lab.replay.cassette import dump_cassette, write_cassette
    from lab.replay.layout import cassette_path
    from lab.replay.scrub import check_secrets, redact_cassette

    lines = [json.loads(line) for line in split_lines(data.decode("utf-8")) if line]
    header, calls = lines[0], lines[1:]
    header.pop("recordedAt", None)
    header, calls, replaced = redact_cassette(header, calls, env=ctx.env, credential_env=credential_env(ctx))
    path = cassette_path(ctx.cassette_dir, ctx.suite.id, task_id)
    check_secrets(header, calls, source=str(path), env=ctx.env, credential_env=credential_env(ctx))  # last guard (R4)
    if replaced:
        record["redactions"] = list(record.get("redactions") or []) + [{"file": "cassette", **hit} for hit in replaced]
    header["recordedAt"] = recorded_at(path, header, calls)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_cassette(path, dump_cassette(header, calls))


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
