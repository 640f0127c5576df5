"""Run the doit graph in this process: ``lab run``/``record``/``ci``/``variants`` and ``run_suite``.

``TASK_CREATORS`` is every doit task creator by name; ``dodo.py`` exposes the
same ones, so ``doit eval …`` and ``lab run …`` build one graph and share
results on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from lab.build import cmdline
from lab.build.actions import OUTCOME
from lab.build.ci import task_ci
from lab.build.compare_export import task_compare, task_export
from lab.build.graph import task_eval, task_record
from lab.build.variants import task_variants
from lab.errors import LabError
from lab.files import loads_json, read_text

TASK_CREATORS: dict[str, Callable[[], Iterator[dict[str, Any]]]] = {
    "task_eval": task_eval, "task_record": task_record, "task_ci": task_ci, "task_variants": task_variants,
    "task_compare": task_compare, "task_export": task_export}
"""doit task creators by the name doit looks for (``task_<basename>``)."""


def run_graph(basename: str, overrides: Sequence[str], *, quiet: bool = False) -> int:
    """Run doit task ``basename`` in this process, as ``doit BASENAME OVERRIDES…`` would.

    ``quiet=True`` prints nothing on stdout (as with ``json=true``, without the JSON lines).
    The eval routes SIGINT/SIGTERM/SIGHUP to its cancel while it runs; the
    caller's handlers are put back when it returns or raises
    (:mod:`lab.execute.interrupt`), except in a ``lab`` command.

    Returns:
        The SPEC exit code (0 completed, 1 usage or infrastructure error,
        2 replay divergence).
    """
    from doit.cmd_base import ModuleTaskLoader
    from doit.doit_cmd import DoitMain

    from lab.build.depdb import PLUGINS

    cmdline.REQUESTED = {basename}
    OUTCOME.clear()
    namespace: dict[str, Any] = dict(TASK_CREATORS)
    namespace["DOIT_CONFIG"] = cmdline.doit_config(dict(o.split("=", 1) for o in overrides if "=" in o))
    if quiet:
        from lab.execute.progress import reset_display

        reset_display(quiet=True)
    from lab.execute import interrupt

    try:
        result = DoitMain(ModuleTaskLoader(namespace), extra_config=PLUGINS).run([basename, *overrides])
    finally:
        interrupt.release()  # a program calling the API gets its own Ctrl-C handlers back
    if "code" in OUTCOME:
        return int(OUTCOME["code"])
    return 0 if result == 0 else 1


def run_suite(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Run an eval (``lab run OVERRIDES…``) and return its report document.

    Args:
        overrides: Hydra overrides, e.g. ``["suite=core", "mode=replay", "k=3"]``.

    Returns:
        The parsed ``report.json`` (see ``lab/schemas/report.schema.json``).

    Raises:
        LabError: the eval stopped before writing a report (bad configuration
            or suite; the message printed to stderr says which).
    """

    code = run_graph("eval", list(overrides))
    report_dir = OUTCOME.get("report_dir")
    if report_dir is None:
        raise LabError(f"run_suite: no report was written (exit {code})")
    doc: dict[str, Any] = loads_json(read_text(Path(report_dir) / "report.json"))
    return doc
