"""Executing an eval: plan the runs, perform one run, record what happened.

``plan`` turns tasks × k into seeded run specs and checks grants;
``context`` holds the ``EvalContext`` every run of a command shares;
``sandboxing`` resolves the ``sandbox=`` backend once per command (without a
probe where ``probe_memo`` remembers a working bwrap), opens it before the
first run, reaps what a killed lab left and refuses unsandboxed third-party
suites without ``trust_local=true``;
``run`` performs one run (workspace, agent, provider, verifiers) and returns
its record — the only place besides the CLI that catches broad exceptions,
turning a crash into ``status: error``; ``command_run`` is that run for a
command agent (a per-run gateway, ``agent_process`` for its process group);
``recording`` writes a run's cassette and checks one before a replay, and keeps
secrets out of the record; ``fieldcap`` bounds what one record field contributes to written files;
``verifiers`` judges the result (``answer_checks`` over the agent's final answer);
``events`` writes versioned JSONL lifecycle events; ``progress`` is the
terminal progress display; ``interrupt`` turns Ctrl-C/SIGTERM into an
orderly cancellation (exit 130).

May import: lab.config, lab.suites, lab.agents, lab.replay, lab.providers,
lab.sandbox, lab.report and the bottom modules. Never lab.build or lab.cli.
"""
