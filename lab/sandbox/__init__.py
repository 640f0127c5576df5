"""The isolated place where a run's commands execute (SPEC G3, issue 11).

Every command a run executes on the agent's behalf (``run_command`` tool
calls, ``command`` verifiers, fixture set-up such as ``git init``, later a
command agent) goes through one backend behind one interface:

    from lab.sandbox.base import Limits
    from lab.sandbox.registry import resolve_backend

    resolved = resolve_backend("auto")          # once per lab process
    if resolved.warning:
        print(resolved.warning)                 # auto fell back to none
    backend = resolved.backend                  # .name: "bwrap" | "none" | ...
    backend.prepare(workspace)                  # once per new task copy
    launch = backend.wrap(["python3", "check.py"], workspace=workspace,
                          env=task_env, network=False,
                          limits=Limits(cpu_time_s=31))
    result = run_launch(launch, timeout_ms=30_000)  # run_process with the launch's
                                                    # argv, env, cwd and fd_args

A backend only *describes* the execution (``Launch``: argv, env, cwd); the
process runner starts it in its own session and kills its group on timeout,
as before. Backends:

- ``bwrap`` (``bwrap.py``): bubblewrap, no daemon; the task copy read-write
  at ``/workspace``, ``/usr`` and a few ``/etc`` files read-only, fresh
  ``/proc`` and ``/dev``, tmpfs ``/tmp`` and ``HOME``, no network unless
  granted, only allow-listed variables, resource limits with ``prlimit``; the
  pid namespace dies with the command, so nothing outlives it.
- ``none`` (``none.py``): the host itself; argv unchanged, cwd the task copy.
- ``auto`` (``registry.py``): ``bwrap`` when it works here, else ``none`` and
  one warning line naming the fix (``apt-get install bubblewrap``).

Beside the backends: ``workspace`` creates the fresh copy of a fixture,
snapshots and diffs its tree and confines paths to it; ``process`` runs one
command in its own session with a deadline, bounded output and a
process-group kill; ``confined`` gives the lab's own file tools and
verifiers access to the task copy without following a link out of it.

``seccomp.py`` builds the filter every bwrap command runs under (no kernel
keyring, no ``ptrace`` of bwrap's pid 1).

``reaper.py`` owns the lab's temp root for task copies (``RunRoot``, one
flock-held directory per lab process) and ``reap_stale``, which removes what
a lab killed with ``kill -9`` left behind.

Commands under ``bwrap`` see the task copy at the fixed path ``/workspace``
(``backend.inside_path``), so prompts, tool outputs and recorded requests do
not vary with a temp path.

The package's ``__init__`` re-exports nothing (the tree's convention); import
from the modules: ``base`` (``SandboxBackend``, ``Launch``, ``Limits``,
``Bind``, ``command_limits``; ``SandboxError`` lives in ``lab.errors``), ``registry`` (``resolve_backend``,
``register_backend``, ``known_backends``), ``bwrap``, ``none``, ``reaper``
(``RunRoot``, ``reap_stale``).

May import: lab.errors and the standard library only.
"""

