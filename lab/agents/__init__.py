"""Agents the lab measures.

``builtin`` is the lab's own reference coding agent (loop, tools, policy,
budget, compaction). External command-line agents and their presets live
beside it.

May import: lab.replay, lab.providers, lab.sandbox and the bottom modules.
Never lab.execute, lab.config, lab.build or lab.cli.
"""
