"""A compose leaves out Hydra's own config groups that the data never reads, and gets the same data.

:func:`lab.config.compose._compose` deletes ``hydra/job_logging``, ``hydra/help`` … from the defaults
list. Each case here is also composed the plain way (every Hydra group, as ``hydra.main`` would), and
the resolved data, the variant choice and the config sources must be equal.
"""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf, open_dict

from lab.config.compose import HYDRA_GROUPS_UNREAD, _compose, _unread_hydra_groups
from lab.config.schema import _register_schema
from lab.paths import CONF_DIR

pytestmark = pytest.mark.xdist_group("config-docs")  # composes; shares a worker with the docs' table


def plain_compose(overrides: list[str]) -> tuple[dict[str, object], str, tuple[str, ...]]:
    """Hydra's compose with its whole defaults list: what ``_compose`` gave before it left groups out."""
    _register_schema()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="lab"):
            cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
            variant = str(cfg.hydra.runtime.choices.get("variant") or "baseline")
            sources = tuple(f"{s.schema}://{s.path}" for s in cfg.hydra.runtime.config_sources)
            with open_dict(cfg):
                del cfg["hydra"]
            data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    finally:
        GlobalHydra.instance().clear()
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}, variant, sources


@pytest.mark.parametrize("overrides", [
    [],
    ["mode=replay", "variant=no-compaction", "agent=reference", "k=3", "provider.model=m"],
    ["hydra/launcher=basic", "hydra.job.name=x", "suite=core", "executor=ray", "sandbox=none"],
], ids=["defaults", "groups-and-keys", "a-hydra-group-named"])
def test_the_lean_compose_gives_the_plain_composes_data(overrides: list[str]) -> None:
    assert _compose(list(overrides), CONF_DIR) == plain_compose(list(overrides))


def test_a_group_the_overrides_name_is_left_to_them() -> None:
    every = [f"~hydra/{group}" for group in HYDRA_GROUPS_UNREAD]
    assert _unread_hydra_groups(["k=2"]) == every
    kept = _unread_hydra_groups(["hydra/launcher=basic", "~hydra/help", "+hydra/sweeper@hydra.x=basic"])
    assert kept == [g for g in every if g not in ("~hydra/launcher", "~hydra/help", "~hydra/sweeper")]
