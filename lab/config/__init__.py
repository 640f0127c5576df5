"""Configuration (SPEC C1–C4): Hydra composition, validation, overrides, variants, the hash.

``schema`` holds the typed dataclasses every config group validates against
and the list of measured keys; ``overrides`` reads and explains Hydra
overrides (``suite_dir=``, quoting hints); ``variants`` checks
``conf/variant/`` option files; ``compose`` composes the effective
configuration once per command and computes its hash; ``cache`` gives back
what an earlier command composed from the same inputs; ``identity`` names
what keys a run besides the hash (suite version, endpoint) and which
settings are runtime-only; ``options`` parses
the ``key=value`` options of the small commands.

May import: lab.agents (the built-in agent's default system prompt, which is
measured), lab.export (credential names: never remembered) and the bottom
modules. Never lab.execute, lab.build or lab.cli.
"""
