"""Agents the lab measures.

``builtin`` is the lab's own coding agent (loop, tools, policy, budget,
compaction). ``reference`` is a small standalone agent on the official
``openai`` SDK (one shell tool, one file-write tool; chat completions or the
Responses API) that runs as a command under the lab, like any external
agent. External command-line agents and their presets live beside them.

May import: lab.replay, lab.providers, lab.sandbox and the bottom modules.
Never lab.execute, lab.config, lab.build or lab.cli.
"""
