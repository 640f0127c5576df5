"""The effective configuration of a command, remembered between commands (the no-op path).

Composing ``conf/`` costs Hydra's and OmegaConf's imports and the compose
itself, several times what doit needs to start. A command whose inputs are
those of an earlier command gets that command's composed configuration back
from ``<user cache dir>/config/`` (``lab.stamps.shared_cache_dir``) without importing either
(:func:`compose_cached`). Its inputs, all checked before an entry is used:

- the override list, the config directory, the working directory, the
  interpreter (its path and version) and ``sys.path`` (an entry is named by
  their hash and repeats them: ``PYTHONPATH`` or another virtual environment
  sharing the user cache dir gives another entry);
- the value of ``LAB_CONFIG_PATH`` (also in the entry's name);
- the content stamp (:mod:`lab.stamps`) of every directory and file under the
  config directory and under each ``LAB_CONFIG_PATH`` directory, so an edited,
  added or removed option file counts;
- the content stamp of every code file loaded when it was composed: the lab's
  modules and schemas and the top-level module of every library (Hydra,
  OmegaConf, their parsers), so an edited lab or an upgraded library counts;
- the listing of every ``sys.path`` directory (an installed, removed or
  upgraded distribution: its ``*.dist-info`` name carries its version) and
  every file under each ``<sys.path entry>/hydra_plugins/`` (a plugin dropped
  into an existing one adds a search path);
- Hydra's search path as composed: every folder and package it read configs
  from (``hydra.searchpath`` additions, plugins'), each with every file under it;
- the paths composition looks at outside the config directory: ``suite_dir``
  and ``suite_dir/<id>/suite.json`` (which decide what ``suite=<id>`` means);
- the environment variables it reads: every ``${oc.env:NAME}`` of a config
  file of the search path or an override, and ``HOME`` (``~`` in paths); kept
  as sha256 digests.

Nothing is remembered when an input changed while it was composed, when a
config file or override holds an interpolation whose
value is not a function of these inputs (``${now:…}``, ``${hydra:…}``, a
custom resolver; config files are read as parsed YAML too, so an interpolation
spelled with escapes in a quoted string counts), when it reads a variable named like a credential, when it
sets any provider header (``provider.headers`` values are gateway plumbing and
may be secrets whatever their name: they are never written to the user cache
dir), when the entry would hold a secret the scanner finds
(:mod:`lab.export.secrets`: a key in an override or a config value), or when
the configuration does not survive a JSON round trip unchanged. A failed compose is never remembered: its error
is reported again.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.canonical import canonical_hash
from lab.config.compose import EffectiveConfig, compose_config
from lab.config.searchpath import ENV as USER_CONF_ENV
from lab.paths import CONF_DIR, from_root
from lab.stamps import content_stamp, env_digest, remember, remembered, shared_cache_dir, tree_stamps

KIND = "composed-config"
MAX_ENTRIES = 256
"""Entries kept in ``config/`` of the user cache dir; past that the least recently written are removed."""

# Resolvers whose value depends on nothing but their arguments and the config itself.
PURE_RESOLVERS = frozenset({"oc.create", "oc.decode", "oc.deprecated", "oc.select", "oc.dict.keys",
                            "oc.dict.values"})
_RESOLVER = re.compile(r"\$\{\s*([A-Za-z_][\w.-]*)\s*:")
_ENV_NAME = re.compile(r"\$\{\s*oc\.env\s*:\s*([A-Za-z_][A-Za-z0-9_]*)\s*[,}]")


def compose_cached(overrides: Sequence[str] = (), *, conf_dir: Path | None = None,
                   cache: Path | None = None) -> EffectiveConfig:
    """:func:`~lab.config.compose.compose_config`, remembered between commands.

    Args:
        overrides: Hydra override strings, as for ``compose_config``.
        conf_dir: the config directory; default the checkout's ``conf/``.
        cache: the cache directory; default ``lab.stamps.shared_cache_dir()``.

    Returns:
        The same :class:`~lab.config.compose.EffectiveConfig` a fresh compose
        gives (equal data, variant and overrides, hence the same hash).

    Raises:
        ConfigError: as ``compose_config`` (a failed compose is not remembered).
    """
    conf = CONF_DIR if conf_dir is None else conf_dir
    ident = {"overrides": list(overrides), "conf": str(conf), "cwd": os.getcwd(),
             "userConf": os.environ.get(USER_CONF_ENV, ""),
             "python": [sys.executable, sys.version], "sysPath": list(sys.path)}
    file = (shared_cache_dir() if cache is None else cache) / "config" / f"{canonical_hash(ident)}.json"
    known = _remembered(file, ident)
    if known is not None:
        return known
    # Stamped before composing (see lab.stamps.remember): conf/, suite_dir, the installed packages.
    watched = {**tree_stamps(conf), **_user_conf_stamps(), **_suite_dir_paths(overrides, conf), **_installed()}
    config = compose_config(list(overrides), conf_dir=conf_dir)
    _remember(file, ident, config, watched, conf)
    return config


def _installed() -> dict[str, Any]:
    """Content stamps of every ``sys.path`` directory's listing and of every file under its
    ``hydra_plugins/`` (where Hydra looks for plugins, which may add search paths)."""
    found: dict[str, Any] = {}
    for entry in sys.path:
        folder = os.path.abspath(entry or ".")
        if folder in found or not os.path.isdir(folder):
            continue
        found[folder] = content_stamp(folder)
        plugins = os.path.join(folder, "hydra_plugins")
        if os.path.isdir(plugins):
            found.update(tree_stamps(Path(plugins)))
    return found


def _search_path(config: EffectiveConfig, conf: Path) -> dict[str, Any] | None:
    """Content stamps of every file under the folders and packages of Hydra's search path other
    than ``conf`` (None: a source that cannot be located, never remembered)."""
    import importlib.util

    found: dict[str, Any] = {}
    for source in config.sources:
        scheme, _, where = source.partition("://")
        if scheme == "file":
            folder = Path(where)
        elif scheme == "pkg":
            try:
                spec = importlib.util.find_spec(where.replace("/", "."))
            except (ImportError, ValueError):
                return None
            locations = list(spec.submodule_search_locations or []) if spec is not None else []
            if len(locations) != 1:
                return None
            folder = Path(locations[0])
        elif scheme == "structured":
            continue  # registered by code: the lab's schema, Hydra's and its plugins' (stamped as code)
        else:
            return None  # a source the lab cannot stamp: never remembered
        if folder.absolute() != conf.absolute():
            found.update(tree_stamps(folder.absolute()))
    return found


def _remembered(file: Path, ident: dict[str, Any]) -> EffectiveConfig | None:
    entry = remembered(file, KIND, ident)
    if entry is None:
        return None
    env, data, variant = entry.get("env"), entry.get("data"), entry.get("variant")
    if not (isinstance(env, dict) and isinstance(data, dict) and isinstance(variant, str)):
        return None
    if any(env_digest(os.environ.get(name)) != digest for name, digest in env.items()):
        return None
    return EffectiveConfig(data=data, variant=variant, overrides=tuple(ident["overrides"]))


def _user_conf_stamps() -> dict[str, Any]:
    """Stamps of every directory and file under the ``LAB_CONFIG_PATH`` directories (their presets
    are composed as the bundled ones are); an entry that is not a directory is stamped as missing."""
    stamps: dict[str, Any] = {}
    for entry in os.environ.get(USER_CONF_ENV, "").split(os.pathsep):
        if entry.strip():
            path = Path(entry).expanduser().absolute()
            stamps.update(tree_stamps(path) if path.is_dir() else {str(path): content_stamp(path)})
    return stamps


def _in_user_conf(path: str) -> bool:
    """Whether ``path`` lies under one of the ``LAB_CONFIG_PATH`` directories."""
    return any(path.startswith(str(Path(entry).expanduser().absolute()) + os.sep)
               for entry in os.environ.get(USER_CONF_ENV, "").split(os.pathsep) if entry.strip())


def _suite_dir_paths(overrides: Sequence[str], conf: Path) -> dict[str, Any]:
    """Stamps of what ``suite_dir=DIR`` makes composition look at: ``DIR``, ``DIR/<id>`` and
    ``DIR/<id>/suite.json`` (whether ``suite=<id>`` is a bundled suite or one in ``DIR``)."""
    if not any("suite_dir" in o for o in overrides):
        return {}
    from lab.config.overrides import _last_value, group_choice  # Hydra's parser, as compose reads them

    suite_dir = _last_value(overrides, "suite_dir")
    if not isinstance(suite_dir, str) or not suite_dir:
        return {}
    root = from_root(suite_dir)
    name = group_choice(overrides, "suite", conf) or ""
    return {str(p): content_stamp(p) for p in (root, root / name, root / name / "suite.json")}


def _yaml_strings(text: str) -> list[str] | None:
    """Every key and string value of the YAML ``text`` as Hydra reads it (None when it does not parse).

    A double-quoted YAML scalar may spell an interpolation with escapes (``"\\x24{now:%f}"`` is
    ``${now:%f}`` once parsed), which the raw text does not show: the parsed strings are checked too.
    """
    import yaml  # type: ignore[import-untyped]  # PyYAML: what OmegaConf (a dependency) parses with

    try:
        node = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    found: list[str] = []
    stack: list[Any] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
    return found


def _env_names(texts: Sequence[str]) -> set[str] | None:
    """Names read through ``${oc.env:NAME}`` in ``texts``; None when another impure interpolation appears."""
    names: set[str] = set()
    for text in texts:
        if "${" not in text:
            continue
        for resolver in _RESOLVER.findall(text):
            if resolver != "oc.env" and resolver not in PURE_RESOLVERS:
                return None
        if text.count("oc.env") != len(_ENV_NAME.findall(text)):
            return None  # a name that is itself an interpolation, or unreadable
        names.update(_ENV_NAME.findall(text))
    return names


def _remember(file: Path, ident: dict[str, Any], config: EffectiveConfig, watched: dict[str, Any],
              conf: Path) -> None:
    """Write the entry for ``config`` when every rule of the module docstring allows it."""
    import json

    searched = _search_path(config, conf)
    if searched is None:
        return
    import hydra

    # Hydra's own configs fill only the ``hydra`` node, which composing drops (lab.config.compose):
    # their ``${now:…}`` and ``${hydra:…}`` never reach the configuration.
    own = str(Path(hydra.__file__).resolve().parent / "conf")
    texts = list(ident["overrides"])
    for path in [*watched, *searched]:
        if ((path.startswith(str(conf)) or path in searched or _in_user_conf(path)) and not path.startswith(own)
                and path.endswith((".yaml", ".yml"))):
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return
            # Only an escape (a backslash) makes a parsed value hold a character its text does not show.
            parsed = _yaml_strings(text) if "\\" in text else []
            if parsed is None:
                return
            texts += [text, *parsed]
    names = _env_names(texts)
    if names is None or _credentials_named(names, config.data):
        return
    names.add("HOME")
    inputs = {**watched, **searched}
    suite_dir = config.data.get("suite_dir")
    if isinstance(suite_dir, str) and suite_dir and str(from_root(suite_dir)) not in inputs:
        inputs[str(from_root(suite_dir))] = content_stamp(from_root(suite_dir))  # set in a config file
    try:
        if json.loads(json.dumps(config.data, allow_nan=False)) != config.data:
            return
    except (TypeError, ValueError):
        return
    if _holds_secret(ident, config.data):
        return
    env = {name: env_digest(os.environ.get(name)) for name in sorted(names)}
    if remember(file, KIND, ident, inputs, {"env": env, "data": config.data, "variant": config.variant}):
        _prune(file.parent)


def _credentials_named(env_names: set[str], data: dict[str, Any]) -> bool:
    """Whether a variable read is named like a credential or any provider header is set (never remembered:
    a header's value may be a secret whatever its name, and the entry would keep it verbatim)."""
    from lab.export.credentials import CREDENTIAL_NAME

    headers = (data.get("provider") or {}).get("headers") or {}
    return any(CREDENTIAL_NAME.search(n) for n in env_names) or bool(headers)


def _holds_secret(ident: dict[str, Any], data: dict[str, Any]) -> bool:
    """Whether the overrides or the configuration hold a secret (a key shape or a credential of the
    environment, :class:`lab.export.secrets.SecretScanner`): such an entry is never written."""
    from lab.export.secrets import SecretScanner

    provider = data.get("provider") or {}
    scanner = SecretScanner(env=os.environ, credential_env=[str(provider.get("api_key_env") or "")])
    return bool(scanner.scan({"overrides": ident["overrides"], "data": data}))


def _prune(directory: Path) -> None:
    """Keep the :data:`MAX_ENTRIES` newest entries (an entry for every sweep point would pile up)."""
    try:
        entries = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in entries[:-MAX_ENTRIES]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
