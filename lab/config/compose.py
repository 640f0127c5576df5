"""Compose, validate and hash the effective configuration (SPEC C1, C2).

Hydra composes ``conf/`` (groups suite, provider, mode, agent, variant) with
the user's overrides. The dataclass schema below, registered as
``base_config``, types every key and rejects unknown ones at compose time; a
JSON Schema (``lab/schemas/config.schema.json``) then checks ranges and
cross-field rules and lists every problem at once.

The *measured view* is the part of the configuration that changes what the
harness sends to the model or how it acts; its sha256 over canonical JSON is
the effective-config hash that every report carries.

Helpers: :mod:`lab.config.overrides` reads overrides (``suite_dir`` expansion,
group choices, one-line error messages); :mod:`lab.config.variants` checks
that a variant sets only measured keys (VA1). The user-facing reference is
``docs/configuration.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.canonical import canonical_hash
from lab.errors import ConfigError
from lab.paths import CONF_DIR, from_root


@dataclass(frozen=True)
class EffectiveConfig:
    """The composed, validated configuration of one command.

    Attributes:
        data: the resolved configuration as plain JSON-able data.
        variant: the chosen ``variant`` option (``baseline`` by default).
        overrides: the command-line overrides it was composed from.
    """

    data: dict[str, Any]
    variant: str = "baseline"
    overrides: tuple[str, ...] = ()
    sources: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """Hydra's search path when composed: ``<scheme>://<path>`` of every config source it read
    (``file://`` folders, ``pkg://`` packages, ``hydra.searchpath`` additions, plugins'); empty when
    remembered (:mod:`lab.config.cache`)."""
    _hashes: dict[str | None, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def mode(self) -> str:
        return str(self.data["mode"]["name"])

    @property
    def k(self) -> int:
        """Repetitions per task: ``k`` if given, else 1 in replay, else the suite's default."""
        if self.data["k"] is not None:
            return int(self.data["k"])
        return 1 if self.mode == "replay" else int(self.data["suite"]["k"])

    @property
    def seed(self) -> int:
        return int(self.data["seed"])

    def measured_view(self, mode: str | None = None) -> dict[str, Any]:
        """The keys that change what the harness sends or does (SPEC C2).

        Excluded: credentials, paths, endpoint URL, output and runtime knobs
        (k, seed, jobs, out, progress …). ``mode`` substitutes another mode,
        e.g. to compare a replay with the recording's hash.
        """
        from lab.agents.builtin.prompt import DEFAULT_SYSTEM_PROMPT  # the text, not null, is measured

        agent = self.data["agent"]
        provider = self.data["provider"]
        if agent.get("kind") == "command":
            from lab.agents.command import measured_command_view

            return {"agent": measured_command_view(agent), "model": provider["model"],
                    "reasoningEffort": provider["reasoning_effort"], "mode": mode or self.mode}
        return {
            "agent": {
                "name": agent["name"],
                "systemPrompt": agent["system_prompt"] or DEFAULT_SYSTEM_PROMPT,
                "tools": list(agent["tools"]),
                "maxOutputTokens": agent["max_output_tokens"],
                "temperature": agent["temperature"],
                "compaction": {"enabled": agent["compaction"]["enabled"],
                               "threshold": agent["compaction"]["threshold"]},
                "limits": {"maxContextChars": agent["limits"]["max_context_chars"],
                           "toolOutputChars": agent["limits"]["tool_output_chars"],
                           "commandTimeoutMs": agent["limits"]["command_timeout_ms"]},
            },
            "model": provider["model"],
            "reasoningEffort": provider["reasoning_effort"],
            # only when set, so configurations that never send reasoning back keep their hash
            **({"reasoningInHistory": True} if provider.get("reasoning_in_history") else {}),
            "mode": mode or self.mode,
        }

    def config_hash(self, mode: str | None = None) -> str:
        """sha256 hex of the canonical JSON of :meth:`measured_view` (computed once per mode;
        ``data`` is not changed once composed)."""
        if mode not in self._hashes:
            self._hashes[mode] = canonical_hash(self.measured_view(mode))
        return self._hashes[mode]


def compose_config(overrides: list[str] | tuple[str, ...] = (), *,
                   conf_dir: Path | None = None) -> EffectiveConfig:
    """Compose ``conf/`` (and the ``LAB_CONFIG_PATH`` directories, :mod:`lab.config.searchpath`)
    with Hydra and validate the result.

    Checks, in order: the chosen variant file (VA1: measured keys only), the
    overrides against the dataclass schema (types, unknown keys), then the
    JSON Schema and cross-field rules over the resolved config. Every problem
    found is reported, one line each.

    Args:
        overrides: Hydra override strings (``k=3``, ``suite=core``,
            ``provider.model=x``). Sweep syntax (``a,b``) is not accepted here.
            ``suite_dir=DIR suite=<id>`` selects ``DIR/<id>`` (see
            :mod:`lab.suites.source`).
        conf_dir: the config directory; default the checkout's ``conf/``.

    Raises:
        ConfigError: an unknown key, a bad value, a missing option, an
            invalid variant, or a ``LAB_CONFIG_PATH`` entry that is not a
            directory or holds a preset with a bundled one's name; one line
            per problem, each naming the key or file.
    """
    from lab.config.overrides import describe_compose_error, expand_suite_dir, group_choice, parse_override
    from lab.config.searchpath import clash_problems, special_file_problems, user_config_dirs
    from lab.config.variants import variant_problems

    conf = CONF_DIR if conf_dir is None else conf_dir
    user_dirs = user_config_dirs()
    clashes = special_file_problems([conf, *user_dirs]) + clash_problems(user_dirs, conf)
    if clashes:
        raise ConfigError(bounded_lines(clashes))
    expanded = expand_suite_dir(overrides, conf)
    variant = group_choice(expanded, "variant", conf)
    problems = variant_problems(variant, conf) if variant else []
    if problems:
        # Check the other overrides too, against the baseline variant, so all problems show at once.
        others = [o for o in expanded if getattr(parse_override(o), "key_or_group", None) != "variant"]
        raise ConfigError(bounded_lines(problems + _override_problems([*others, "variant=baseline"], conf)))
    try:
        data, chosen, sources = _compose(expanded, conf)
    except Exception as exc:  # Hydra/OmegaConf raise many types; all are user input errors here
        problems = _override_problems(expanded, conf, failed=exc) or [describe_compose_error(exc, expanded, conf)]
        raise ConfigError(bounded_lines(boolean_problems(expanded) + problems)) from exc
    problems = boolean_problems(expanded) + data_problems(data, expanded, conf)
    if problems:
        raise ConfigError(bounded_lines(problems))
    return EffectiveConfig(data=data, variant=chosen, overrides=tuple(overrides), sources=sources)


_LENIENT_WORDS = frozenset({"y", "n", "on", "off"})
"""Words OmegaConf reads as a boolean that the lab's other boolean options refuse."""


def boolean_problems(overrides: Sequence[str]) -> list[str]:
    """A boolean key given a value OmegaConf turns into a boolean but the lab does not take:
    ``keep=2`` (any number but 0 and 1) or ``keep=on``/``off``/``y``/``n``. OmegaConf reads
    ``keep=2`` as true, which is never what was meant; other values it refuses itself."""
    from lab.config.overrides import parse_override
    from lab.config.schema import boolean_keys

    keys = boolean_keys()
    problems = []
    for text in overrides:
        override: Any = parse_override(text)
        if override is None or override.is_delete() or override.is_sweep_override():
            continue
        key = override.key_or_group.lstrip("+")
        value = override.value()
        word = value.strip().lower() if isinstance(value, str) else None
        lenient = (isinstance(value, int) and not isinstance(value, bool) and value not in (0, 1)) \
            or word in _LENIENT_WORDS or (word is not None and word.lstrip("+-").isdigit() and word not in ("0", "1"))
        if key in keys and lenient:
            problems.append(f"config: {key}: expected true or false, got {_shorten(repr(value), value)}")
    return problems


def _compose(overrides: list[str], conf_dir: Path) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    """Hydra compose → (resolved plain data, variant choice, config sources as ``scheme://path``).
    Raises Hydra's own errors."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf, open_dict

    from lab.config.schema import _register_schema
    from lab.config.searchpath import searchpath_overrides, user_config_dirs

    _register_schema()
    overrides = searchpath_overrides(user_config_dirs(), overrides)  # LAB_CONFIG_PATH's presets
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3", job_name="lab"):
            cfg = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
            variant = str(cfg.hydra.runtime.choices.get("variant") or "baseline")
            sources = tuple(f"{s.schema}://{s.path}" for s in cfg.hydra.runtime.config_sources)
            with open_dict(cfg):
                del cfg["hydra"]
            data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    finally:
        GlobalHydra.instance().clear()
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}, variant, sources


def _override_problems(overrides: list[str], conf_dir: Path, *, failed: Exception | None = None) -> list[str]:
    """Every problem in ``overrides``: each override is added to the ones known
    good so far, so one bad word does not hide the next; then the resolved
    config of the good ones is validated too.

    ``failed``: the error composing all of ``overrides`` gave, taken as the
    answer for that same list instead of composing it again. Without it the
    whole list is composed first: when that works (an invalid variant checked
    with otherwise sound overrides) one compose answers, not one per override."""
    from lab.config.overrides import describe_compose_error

    if failed is None:
        try:
            return data_problems(_compose(overrides, conf_dir)[0], overrides, conf_dir)
        except Exception as exc:  # any Hydra/OmegaConf error: find the culprits one by one below
            failed = exc
    good: list[str] = []
    problems: list[str] = []
    data: dict[str, Any] | None = None  # the resolved config of ``good`` once one override composed
    for override in overrides:
        try:
            if failed is not None and [*good, override] == overrides:
                raise failed
            data = _compose([*good, override], conf_dir)[0]
            good.append(override)
        except Exception as exc:  # any Hydra/OmegaConf error: this override is the culprit
            problems.append(describe_compose_error(exc, [override], conf_dir))
    if data is None:
        try:
            data = _compose(good, conf_dir)[0]
        except Exception as exc:  # the base config itself is broken; say so once
            return problems + [describe_compose_error(exc, good, conf_dir)]
    return problems + data_problems(data, good, conf_dir)


def data_problems(data: dict[str, Any], overrides: Sequence[str] = (), conf_dir: Path = CONF_DIR) -> list[str]:
    """Unknown keys (``+key=…`` slips past the struct schema) and range/cross-field problems.

    An unknown key no override set, under a group whose chosen option is a user
    preset (``LAB_CONFIG_PATH``), names that preset's file.
    """
    from lab.config.overrides import preset_of_key
    from lab.config.schema import schema_keys

    unknown = _unknown_keys(data, schema_keys())
    return [f"config: unknown key '{key}'{preset_of_key(key, overrides, conf_dir)} (see conf/config.yaml for valid "
            "keys)" for key in unknown] + config_problems(data)


def _unknown_keys(data: Any, schema: dict[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key not in schema:
            found.append(name)
        elif isinstance(schema[key], dict) and isinstance(value, dict):
            found += _unknown_keys(value, schema[key], name + ".")
    return found


def config_problems(data: dict[str, Any]) -> list[str]:
    """Range and cross-field problems of resolved config ``data`` (JSON Schema + rules below)."""
    import jsonschema

    from lab.schemas import load_schema

    schema = load_schema("config")
    validator = jsonschema.Draft202012Validator(schema)
    problems = [f"config: {path}: {value!r} is not a finite number" for path, value in _non_finite(data)]
    problems += [f"config: {_dotted(err.absolute_path)}: {_shorten(err.message, err.instance)}"
                for err in sorted(validator.iter_errors(data), key=lambda e: _dotted(e.absolute_path))]
    rates = data.get("rates") or {}
    if (rates.get("input") is None) != (rates.get("output") is None):
        problems.append("config: rates: give both rates.input and rates.output, or neither")
    suite = data.get("suite") or {}
    if not suite.get("path") and not (data.get("suite_dir") and suite.get("id")):
        problems.append("config: suite.path: no suite location; use suite=<id> (bundled), "
                        "suite_dir=DIR suite=<id>, or suite=external suite.path=DIR")
    suite_dir = data.get("suite_dir")
    if isinstance(suite_dir, str) and suite_dir and not from_root(suite_dir).is_dir():
        problems.append(f"config: suite_dir: {from_root(suite_dir)} is not a directory")
    problems += _provider_problems(data.get("provider") or {})
    agent = data.get("agent") or {}
    if agent.get("kind") == "command":
        from lab.agents.command import preset_problems

        problems += preset_problems(agent)
    limits = agent.get("limits") or {}
    tool_chars, context_chars = limits.get("tool_output_chars"), limits.get("max_context_chars")
    if isinstance(tool_chars, int) and isinstance(context_chars, int) and tool_chars > context_chars:
        problems.append(f"config: agent.limits.tool_output_chars: {tool_chars} is greater than "
                        f"agent.limits.max_context_chars ({context_chars})")
    return problems


LINE_CHARS = 400
"""The longest config error line: a value quoted in one is cut (a 100,000-character
``provider.model`` must not become a 100 KB line)."""
EXCERPT_CHARS = 60


def _shorten(message: str, value: Any) -> str:
    """``message`` with its quote of ``value`` cut to an excerpt that gives the full length."""
    quoted = repr(value)
    if len(quoted) > EXCERPT_CHARS and quoted in message:
        size = f"{len(value):,} characters" if isinstance(value, str) else f"{len(quoted):,} characters as text"
        message = message.replace(quoted, f"{quoted[:EXCERPT_CHARS]}… ({size})")
    return message


def bounded_lines(problems: list[str]) -> str:
    """The problems as one message, each line cut to ``LINE_CHARS`` with its full length."""
    return "\n".join(line if len(line) <= LINE_CHARS else f"{line[:LINE_CHARS]}… ({len(line):,} characters)"
                     for problem in problems for line in problem.splitlines())


def _non_finite(value: Any, path: str = "") -> list[tuple[str, float]]:
    """(dotted path, value) of every NaN or infinite float (JSON has no such numbers)."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return [(path, value)]
    if isinstance(value, dict):
        return [hit for k, v in value.items() for hit in _non_finite(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, list):
        return [hit for i, v in enumerate(value) for hit in _non_finite(v, f"{path}[{i}]")]
    return []


def _dotted(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    return "".join(parts).lstrip(".") or "(root)"


def _provider_problems(provider: dict[str, Any]) -> list[str]:
    """Credentials go through ``provider.api_key_env`` only: never in the URL, never as an
    ``Authorization`` header (either would replace the key silently and could be written)."""
    from urllib.parse import urlsplit

    problems = []
    base_url = provider.get("base_url")
    if isinstance(base_url, str) and base_url:
        try:
            parts = urlsplit(base_url)
            has_userinfo = parts.username is not None or parts.password is not None
        except ValueError:
            has_userinfo = False
        if has_userinfo:
            problems.append("config: provider.base_url: carries credentials (user:password@); "
                            "give the key through provider.api_key_env instead")
    for name in provider.get("headers") or {}:
        if str(name).lower() in ("authorization", "proxy-authorization"):
            problems.append(f"config: provider.headers.{name}: set the API key through provider.api_key_env, "
                            "not an Authorization header")
    return problems
