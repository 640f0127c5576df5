"""``lab run -m …``: a Hydra multirun over the eval (SPEC VA3).

Each combination of the sweep overrides (``variant=a,b``, ``k=3,5``,
``provider.model=m1,m2``, ``range()``, ``glob()``) is one Hydra job; each job
runs the ordinary eval (the same doit graph, the same run store), so finished
runs are shared and nothing is repeated. Hydra's launcher decides where jobs
run: the basic launcher runs them one after another in this process;
``hydra/launcher=joblib`` (``pip install -e '.[joblib]'``) spreads them over
local processes; a cluster launcher (``hydra/launcher=submitit_slurm`` or
``ray``) spreads them over machines that share the run store's filesystem
(set ``LAB_DATA_DIR`` to a shared path).

Each job composes from the override strings exactly as ``lab run`` would
(:func:`job_overrides`: as Hydra's sweeper wrote them, an escaped ``\\${…}``
kept literal). The exit code is the worst of the jobs' (SPEC exit codes):
each job writes its own code into its job directory under a directory of
this sweep alone (``<data dir>/.multirun/<sweep id>/<job number>/exit-code``,
the shared filesystem a cluster launcher needs anyway); a job that left no
code failed before it finished and counts 1, whatever report an earlier
eval of that configuration left behind.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lab.errors import ConfigError, LabError


def combinations(overrides: list[str]) -> list[list[str]]:
    """Every combination of the sweep overrides, as plain override lists (Hydra's parser).

    Raises:
        ConfigError: an override Hydra cannot parse.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides([o for o in overrides if not o.startswith("hydra")])
    except Exception as exc:  # the parser's own error type; its first line names the problem
        raise ConfigError(f"multirun: cannot parse overrides: {str(exc).splitlines()[0]}") from None
    choices = []
    for override in parsed:
        key = override.get_key_element()
        values = [str(v) for v in override.sweep_string_iterator()] if override.is_sweep_override() \
            else [override.get_value_element_as_str()]
        choices.append([f"{key}={v}" for v in values])
    return [list(combo) for combo in itertools.product(*choices)]


def hydra_overrides(overrides: list[str]) -> list[str]:
    """``overrides`` as Hydra's sweeper must see them so each job composes as ``lab run`` would.

    ``suite_dir=DIR suite=<id>`` is expanded the way :func:`lab.config.compose.compose_config`
    expands it (``suite=external suite.id=<id>``); a sweep ``suite=a,b`` under
    ``suite_dir`` becomes ``suite=external suite.id=a,b`` when every value is a
    suite in DIR.

    Raises:
        ConfigError: a suite sweep that mixes suites in DIR with bundled ones.
    """
    from lab.config.overrides import expand_suite_dir, parse_override

    parsed = [parse_override(o) for o in overrides]  # shared per text: the sweep is found by its place
    at = next((i for i, p in enumerate(parsed) if p is not None and p.key_or_group == "suite" and p.package is None
               and p.is_sweep_override()), None)
    if at is None:
        return expand_suite_dir(overrides)
    sweep: Any = parsed[at]
    values = [str(v) for v in sweep.sweep_string_iterator()]
    others = [o for i, o in enumerate(overrides) if i != at]
    expanded = [expand_suite_dir([*others, f"suite={v}"]) for v in values]
    external = [f"suite.id='{v}'" in words for v, words in zip(values, expanded)]
    if not any(external):
        return list(overrides)
    if not all(external):
        raise ConfigError(f"multirun: suite={','.join(values)}: with suite_dir, sweep only suites found in "
                          "suite_dir (or run the bundled ones in another sweep)")
    return ["suite=external", f"suite.id={','.join(values)}", *others]


EXIT_FILE = "exit-code"
INTERRUPTED = 130


def job_overrides(task: Any) -> list[str]:
    """A Hydra job's override strings (``HydraConfig.get().overrides.task``) as the sweeper wrote them.

    Read without resolving: reading the list's items through OmegaConf would
    turn an escaped ``\\${…}`` inside a quoted value into ``${…}``, an
    interpolation the job would then resolve where ``lab run`` keeps the text.
    """
    from omegaconf import OmegaConf

    values = OmegaConf.to_container(task, resolve=False)
    return [str(v) for v in values] if isinstance(values, list) else []


def run_multirun(overrides: list[str]) -> int:
    """Launch the sweep through Hydra, then return the worst exit code of its jobs."""
    import shutil
    import uuid

    import hydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import DictConfig

    from lab.config.schema import _register_schema
    from lab.paths import CONF_DIR, data_dir

    try:
        from lab.build.depdb import check_data_dir

        check_data_dir(data_dir())
        from lab.config.searchpath import searchpath_overrides, user_config_dirs

        overrides = hydra_overrides(overrides)
        combos = combinations(overrides)
        for combo in combos:  # every job's configuration is checked before the first one runs
            _check(combo)
        overrides = searchpath_overrides(user_config_dirs(), overrides)  # LAB_CONFIG_PATH's presets, for Hydra
    except LabError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    _register_schema()
    interrupted: list[bool] = []

    total = len(combos)

    @hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
    def job(cfg: DictConfig) -> int:
        from lab.build.commands import run_graph
        from lab.files import write_atomic

        hydra_cfg = HydraConfig.get()
        task = job_overrides(hydra_cfg.overrides.task)
        if interrupted:  # after Ctrl-C the jobs this process has yet to run are not started
            code = INTERRUPTED
        elif "BasicLauncher" in str(hydra_cfg.launcher.get("_target_", "")):  # one job after another
            print(job_header(int(hydra_cfg.job.num), total, task), flush=True)
            code = run_graph("eval", task)
        else:
            with held_output(data_dir() / ".multirun" / "output.lock"):  # jobs at once: each one's output in one piece
                print(job_header(int(hydra_cfg.job.num), total, task), flush=True)
                code = run_graph("eval", task)
        if code == INTERRUPTED:
            interrupted.append(True)
        write_atomic(Path(hydra_cfg.runtime.output_dir) / EXIT_FILE, f"{code}\n".encode())
        return code

    argv = sys.argv
    # Hydra saves multirun.yaml there, not in the user's cwd; one directory per sweep, so no job's
    # exit code is taken for another's.
    sweep_dir = data_dir() / ".multirun" / uuid.uuid4().hex[:12]
    sys.argv = [argv[0], "--multirun", *overrides, "hydra/job_logging=none", "hydra/hydra_logging=none",
                f"hydra.sweep.dir={sweep_dir}", "hydra.sweep.subdir=${hydra.job.num}"]
    try:
        job()
    finally:
        sys.argv = argv
    try:
        return sweep_code(sweep_dir, combos)
    finally:
        shutil.rmtree(sweep_dir, ignore_errors=True)


def job_header(num: int, total: int, overrides: list[str]) -> str:
    """``multirun: job 2 of 4: k=2 variant=baseline``: the line before each job's output (``num`` from 0)."""
    shown = " ".join(o for o in overrides if not o.startswith("hydra")) or "(no overrides)"
    return f"multirun: job {num + 1} of {total}: {shown}"


@contextmanager
def held_output(lock: Path) -> Iterator[None]:
    """Hold this process's stdout and stderr (file descriptors 1 and 2) in temp files while the
    block runs, then write each out in one piece under an exclusive lock on ``lock``, so jobs that
    run at once in other processes (``hydra/launcher=joblib``) never interleave their lines."""
    import fcntl
    import os
    import tempfile

    lock.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = [os.dup(1), os.dup(2)]
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            with lock.open("a") as held:
                fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
                for fd, kept in ((1, out), (2, err)):
                    kept.seek(0)
                    while chunk := kept.read(1 << 16):
                        os.write(fd, chunk)


def sweep_code(sweep_dir: Path, combos: list[list[str]]) -> int:
    """The worst exit code of a sweep's jobs, read from ``<sweep_dir>/<job number>/exit-code``.

    A job that left no code (its process died, Hydra could not start it, it
    raised) counts 1 and is named on stderr. 130 (interrupted) wins over
    every other code: the sweep did not complete.
    """
    codes = []
    for number, combo in enumerate(combos):
        try:
            codes.append(int((sweep_dir / str(number) / EXIT_FILE).read_text(encoding="utf-8").strip()))
        except (OSError, ValueError):
            print(f"multirun: job {number} ({' '.join(combo)}) ended without an exit code (it failed "
                  "before it finished)", file=sys.stderr)
            codes.append(1)
    if INTERRUPTED in codes:
        return INTERRUPTED
    return max(codes, default=0)


def _check(combo: list[str]) -> None:
    from lab.build.baseline import check_baseline
    from lab.build.graph import prepare

    check_baseline(prepare([o for o in combo if not o.startswith("hydra")]))
