"""Variant files may only override measured-config keys (SPEC VA1).

A variant (``conf/variant/<name>.yaml``, ``# @package _global_``) is a set of
overrides of keys inside the effective-config hash: ``agent.*``,
``provider.model`` and ``provider.reasoning_effort``. A key outside the hash
(provider endpoint, credentials, paths, runtime knobs), an unknown key, a
defaults list (which would swap whole groups such as provider or mode) or an
interpolation (a machine-dependent value inside the hash) is rejected before
the first run, naming the variant file and the key.
"""

from __future__ import annotations

import io
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from lab.config.overrides import relative_to_conf
from lab.config.schema import MEASURED_KEYS, MEASURED_PREFIX, _is_known, schema_keys
from lab.paths import CONF_DIR


def variant_path(name: str, conf_dir: Path = CONF_DIR) -> Path:
    """``conf/variant/<name>.yaml``, else the first ``LAB_CONFIG_PATH`` directory's ``variant/<name>.yaml``
    (the bundled path when neither exists)."""
    from lab.config.searchpath import option_file

    return option_file("variant", name, conf_dir) or conf_dir / "variant" / f"{name}.yaml"


def variant_problems(name: str, conf_dir: Path = CONF_DIR) -> list[str]:
    """Every reason the variant ``name`` is not a valid measured-config override set.

    Args:
        name: the variant option (file stem).
        conf_dir: the config directory (the checkout's ``conf/``).

    Returns:
        One line per problem, ``config: variant <name> (conf/variant/<name>.yaml):
        <key>: <what is wrong>``; empty when the file is valid or does not
        exist (Hydra then reports the missing option).
    """
    path = variant_path(name, conf_dir)
    if not path.is_file():
        return []
    where = f"config: variant {name} ({relative_to_conf(path)})"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{where}: not valid YAML: {' '.join(str(exc).split())[:200]}"]
    return list(_text_problems(where, os.path.abspath(path), text))


@lru_cache(maxsize=64)
def _text_problems(where: str, file: str, text: str) -> tuple[str, ...]:
    """:func:`variant_problems` of the ``text`` of variant ``file`` (``where`` names it in each line).

    Remembered per text: every compose checks the chosen variant, and parsing it costs more
    than reading it; an edited file is another text, so it is checked again."""
    from omegaconf import DictConfig, OmegaConf

    stream = io.StringIO(text)
    stream.name = file  # YAML's error messages name the file, as OmegaConf.load(path) does
    try:
        node = OmegaConf.load(stream)
    except Exception as exc:  # yaml and OmegaConf raise several types; any is a broken file
        return (f"{where}: not valid YAML: {' '.join(str(exc).split())[:200]}",)
    problems = []
    if "# @package _global_" not in text.splitlines()[:5]:
        problems.append(f"{where}: the first lines must say '# @package _global_' "
                        f"(keys are written from the root: agent.…, provider.model)")
    if node is None:
        return tuple(problems)
    if not isinstance(node, DictConfig):
        return (*problems, f"{where}: must be a mapping of keys to values")
    known = schema_keys()
    for key, value in flatten(OmegaConf.to_container(node, resolve=False)):
        problem = _key_problem(key, value, known)
        if problem:
            problems.append(f"{where}: {key}: {problem}")
    return tuple(problems)


def _key_problem(key: str, value: Any, known: dict[str, Any]) -> str | None:
    if key == "defaults" or key.startswith("defaults."):
        return ("a variant may not have a defaults list (it would swap whole groups such as "
                "provider or mode); set measured keys instead")
    if not (key.startswith(MEASURED_PREFIX) or key in MEASURED_KEYS):
        return ("not a measured-config key, so it is outside the config hash; a variant may "
                f"set only agent.*, {', '.join(MEASURED_KEYS)}")
    if not _is_known(key, known):
        return "unknown key (see conf/config.yaml and conf/agent/builtin.yaml for valid keys)"
    if _has_interpolation(value):
        return "interpolations (${…}) are not allowed: the hash must not depend on the machine"
    return None


def _has_interpolation(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, list):
        return any(_has_interpolation(v) for v in value)
    return False


def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Dotted leaf keys of nested mappings: ``{"a": {"b": 1}}`` → ``[("a.b", 1)]``.

    Lists are leaves; an empty mapping contributes nothing.
    """
    if not isinstance(value, dict):
        return [(prefix, value)] if prefix else []
    out: list[tuple[str, Any]] = []
    for key, item in value.items():
        out += flatten(item, f"{prefix}{key}" if not prefix else f"{prefix}.{key}")
    return out


def all_variant_problems(conf_dir: Path = CONF_DIR) -> dict[str, list[str]]:
    """Problems of every ``conf/variant/*.yaml``, by variant name (empty lists when valid)."""
    return {p.stem: variant_problems(p.stem, conf_dir) for p in sorted((conf_dir / "variant").glob("*.yaml"))}
