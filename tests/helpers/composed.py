"""The checkout's ``conf/`` composed once per test process for each override list.

``compose_config`` is a pure function of ``conf/``, the overrides and the few
environment variables composition reads (``OPENAI_BASE_URL`` in
``conf/provider/openai.yaml``, ``LAB_CONFIG_PATH``, ``HOME``), which are part
of the key here; a warm Hydra compose costs about 0.2 s of CPU, and many tests
read the same few compositions. Tests of composition itself (errors, the
cache, edited option files, another ``conf_dir``) call ``compose_config``.
"""

from __future__ import annotations

import copy
import os
from functools import cache

from lab.config.compose import EffectiveConfig, compose_config

ENV_READ = ("OPENAI_BASE_URL", "LAB_CONFIG_PATH", "HOME")
"""The environment variables a composition of the checkout's ``conf/`` depends on."""


@cache
def _composed(overrides: tuple[str, ...], env: tuple[str | None, ...]) -> EffectiveConfig:
    return compose_config(list(overrides))


def composed(*overrides: str) -> EffectiveConfig:
    """``compose_config(list(overrides))``, composed once per process and environment; each call
    gets its own copy of the data (a test may change it). Errors are raised each time (not kept)."""
    config = _composed(overrides, tuple(os.environ.get(name) for name in ENV_READ))
    return EffectiveConfig(data=copy.deepcopy(config.data), variant=config.variant, overrides=config.overrides,
                           sources=config.sources)
