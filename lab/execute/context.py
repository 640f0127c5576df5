"""What every run of one command shares: the ``EvalContext`` (composed once per command).

Kept apart from :mod:`lab.execute.run` so that planning a command (and
finding every run up to date) loads none of what executing a run needs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.config.compose import EffectiveConfig
from lab.suites.load import Suite

VOID_AFTER_ERRORS = 3


@dataclass
class EvalContext:
    """What every run of one command shares: composed once per command.

    Attributes:
        config: the effective configuration.
        suite: the loaded suite.
        cassette_dir: where cassettes are read (replay) or written (record).
        env: the environment credentials are read from (never recorded).
        cancel: set to stop running agents and verifiers (Ctrl-C).
        sandbox: the backend in force and the temp root for task copies
            (``lab.execute.sandboxing.Sandbox``); None resolves ``sandbox=``
            of the config at the first run.
        sandbox_choice: the backend planned for the runs before one is
            opened (``lab.execute.sandboxing.SandboxChoice``); opening the
            sandbox must confirm it (see :meth:`sandbox_in_force`).
        label: the variant a ``lab variants`` command measures with this
            context ('' for a plain eval); it names the variant on each
            run's console line.
        executor: where stale runs execute (``lab.execute.executor``); set
            from ``executor=`` of the config before the first run.
        call_gate: holds one of the provider endpoint's call slots around
            each model call (``provider.max_concurrent_calls``), or None.
    """

    config: EffectiveConfig
    suite: Suite
    cassette_dir: Path
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    cancel: threading.Event = field(default_factory=threading.Event)
    work_dir: Path | None = None
    events: Any = None
    voided: bool = False
    warned: set[str] = field(default_factory=set)
    idle: threading.Condition = field(default_factory=threading.Condition)
    _active: dict[int, int] = field(default_factory=dict)
    _errors_in_a_row: int = 0
    sandbox: Any = None
    label: str = ""
    sandbox_choice: Any = None
    executor: Any = None
    call_gate: Any = None

    @property
    def config_hash(self) -> str:
        return self.config.config_hash()

    def sandbox_in_force(self) -> Any:
        """The command's ``Sandbox``, resolved once from ``sandbox.name``.

        Raises:
            SandboxError: the backend cannot be used, or is not the one the
                runs were planned with (``sandbox_choice``).
        """
        if self.sandbox is None:
            from lab.execute.sandboxing import open_chosen, open_sandbox

            if self.sandbox_choice is not None:
                self.sandbox = open_chosen(self.sandbox_choice)
            else:
                self.sandbox = open_sandbox(self.config.data["sandbox"]["name"])
        return self.sandbox

    def sandbox_name(self) -> str:
        """The backend the runs use (``bwrap``, ``none`` …), without starting one when it was planned."""
        if self.sandbox is not None:
            return str(self.sandbox.name)
        if self.sandbox_choice is not None:
            return str(self.sandbox_choice.name)
        return str(self.sandbox_in_force().name)

    @contextmanager
    def running(self) -> Iterator[None]:
        """Mark a run in progress in this thread (so Ctrl-C can wait for workers)."""
        ident = threading.get_ident()
        with self.idle:
            self._active[ident] = self._active.get(ident, 0) + 1
        try:
            yield
        finally:
            with self.idle:
                self._active[ident] -= 1
                self.idle.notify_all()

    def active_elsewhere(self) -> int:
        """Runs in progress in threads other than the main one."""
        main = threading.main_thread().ident
        with self.idle:
            return sum(n for ident, n in self._active.items() if ident != main)

    def note_result(self, record: dict[str, Any]) -> bool:
        """Count infrastructure errors in a row (SPEC X3); True when this one voids the eval.

        A replay divergence is the harness's own finding, not an outage: it
        does not count.
        """
        kind = (record.get("error") or {}).get("kind")
        with self.idle:
            if record["status"] == "error" and kind != "replay_divergence":
                self._errors_in_a_row += 1
            else:
                self._errors_in_a_row = 0
            newly = self._errors_in_a_row >= VOID_AFTER_ERRORS and not self.voided
            if newly:
                self.voided = True
            return newly
