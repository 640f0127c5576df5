"""A compose leaves out Hydra's own config groups that the data never reads, and gets the same answer.

:func:`lab.config.compose._compose` deletes ``hydra/job_logging``, ``hydra/help`` … from the defaults
list, and composes again with them when that fails. Each case here is also composed the plain way
(every Hydra group, as ``hydra.main`` would): the resolved data, the variant choice and the config
sources must be equal, or both must fail with the same error.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hypothesis import given, settings
from hypothesis import strategies as st
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


def answer(compose: Callable[[list[str]], object], overrides: list[str]) -> object:
    try:
        return compose(list(overrides))
    except Exception as exc:  # noqa: BLE001  # Hydra's and OmegaConf's many types: compared by type and text
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("overrides", [
    [],
    ["mode=replay", "variant=no-compaction", "agent=reference", "k=3", "provider.model=m"],
    ["hydra/launcher=basic", "hydra.job.name=x", "suite=core", "executor=ray", "sandbox=none"],
    ["hydra.job_logging.root.level=DEBUG", "hydra.sweeper.max_batch_size=3", "+hydra.hydra_help.x=1"],
    ["kk=1"],
    ["hydra.launcher.n_jobs=2"],
], ids=["defaults", "groups-and-keys", "a-hydra-group-named", "keys-of-left-out-groups", "unknown-key",
        "unknown-hydra-key"])
def test_the_lean_compose_answers_as_the_plain_one(overrides: list[str]) -> None:
    lean = answer(lambda o: _compose(o, CONF_DIR), overrides)
    assert lean == answer(plain_compose, overrides)
    assert isinstance(lean, tuple) and (len(lean) == 3) == (overrides not in (["kk=1"], ["hydra.launcher.n_jobs=2"]))


def test_a_group_the_overrides_name_is_left_to_them() -> None:
    every = [f"~hydra/{group}" for group in HYDRA_GROUPS_UNREAD]
    assert _unread_hydra_groups(["k=2"]) == every
    kept = _unread_hydra_groups(["hydra/launcher=basic", "~hydra/help", "+hydra/sweeper@hydra.x=basic"])
    assert kept == [g for g in every if g not in ("~hydra/launcher", "~hydra/help", "~hydra/sweeper")]


VOCABULARY = ["mode=replay", "mode=record", "variant=small-context", "agent=codex", "provider=scripted", "k=2",
              "jobs=0", "seed=x", "hydra/launcher=basic", "~hydra/help", "hydra.job_logging.version=2",
              "hydra.sweeper.max_batch_size=1", "hydra.verbose=true", "hydra.launcher.n_jobs=2", "kk=1",
              "+hydra.help.extra=1", "hydra/job_logging=none", "sandbox=none", "suite=holdout"]


@settings(max_examples=5, deadline=None, derandomize=True, database=None)  # 2 to 6 composes each
@given(st.lists(st.sampled_from(VOCABULARY), max_size=4, unique=True))
def test_any_override_list_gets_the_plain_composes_answer(overrides: list[str]) -> None:
    assert answer(lambda o: _compose(o, CONF_DIR), overrides) == answer(plain_compose, overrides)
