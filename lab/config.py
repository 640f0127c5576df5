"""Compose, validate and hash the effective configuration (SPEC C1, C2).

Hydra composes ``conf/`` (groups suite, provider, mode, agent, variant) with
the user's overrides. The dataclass schema below, registered as
``base_config``, types every key and rejects unknown ones at compose time; a
JSON Schema (``lab/schemas/config.schema.json``) then checks ranges and
cross-field rules and lists every problem at once.

The *measured view* is the part of the configuration that changes what the
harness sends to the model or how it acts; its sha256 over canonical JSON is
the effective-config hash that every report carries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import typing
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from lab.errors import ConfigError
from lab.paths import CONF_DIR

EFFECTS = ("write", "process", "external", "analysis")


@dataclass
class SuiteConf:
    id: str = MISSING
    path: str = MISSING
    k: int = 5


@dataclass
class ProviderConf:
    name: str = MISSING
    model: str = MISSING
    reasoning_effort: str | None = None
    stream: bool = False
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 2


@dataclass
class ModeConf:
    name: str = MISSING


@dataclass
class CompactionConf:
    enabled: bool = True
    threshold: float = 0.8


@dataclass
class LimitsConf:
    max_context_chars: int = 200_000
    tool_output_chars: int = 16_000
    command_timeout_ms: int = 60_000


@dataclass
class AgentConf:
    name: str = "builtin"
    system_prompt: str | None = None
    tools: list[str] = field(default_factory=list)
    max_output_tokens: int = 4096
    temperature: float | None = None
    compaction: CompactionConf = field(default_factory=CompactionConf)
    limits: LimitsConf = field(default_factory=LimitsConf)


@dataclass
class RatesConf:
    input: float | None = None
    output: float | None = None


@dataclass
class LabConf:
    suite: SuiteConf = MISSING  # type: ignore[assignment]
    provider: ProviderConf = MISSING  # type: ignore[assignment]
    mode: ModeConf = MISSING  # type: ignore[assignment]
    agent: AgentConf = MISSING  # type: ignore[assignment]
    k: int | None = None
    seed: int = 0
    jobs: int = 1
    tasks: list[str] = field(default_factory=list)
    allow: list[str] = field(default_factory=lambda: ["write", "process"])
    read_only: bool = False
    allow_suite_full: bool = False
    rates: RatesConf = field(default_factory=RatesConf)
    out: str | None = None
    keep: bool = False
    progress: bool = False
    json: bool = False
    yes: bool = False
    force: bool = False
    suite_dir: str | None = None
    cassette_dir: str | None = None


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
        from lab.agent.loop import DEFAULT_SYSTEM_PROMPT  # the text, not null, is measured

        agent = self.data["agent"]
        provider = self.data["provider"]
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
            "mode": mode or self.mode,
        }

    def config_hash(self, mode: str | None = None) -> str:
        """sha256 hex of the canonical JSON of :meth:`measured_view`."""
        return canonical_hash(self.measured_view(mode))


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_hash(value: Any) -> str:
    """sha256 hex digest of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


_registered = False


def _register_schema() -> None:
    global _registered
    if not _registered:
        from hydra.core.config_store import ConfigStore

        ConfigStore.instance().store(name="base_config", node=LabConf)
        _registered = True


def compose_config(overrides: list[str] | tuple[str, ...] = ()) -> EffectiveConfig:
    """Compose ``conf/`` with Hydra and validate the result.

    Args:
        overrides: Hydra override strings (``k=3``, ``suite=core``,
            ``provider.model=x``). Sweep syntax (``a,b``) is not accepted here.

    Raises:
        ConfigError: an unknown key, a bad value or a missing option; the
            message is one line per problem and names the key.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf, open_dict

    _register_schema()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="lab"):
            cfg = compose(config_name="config", overrides=list(overrides),
                          return_hydra_config=True)
            variant = str(cfg.hydra.runtime.choices.get("variant") or "baseline")
            with open_dict(cfg):
                del cfg["hydra"]
            data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except Exception as exc:  # Hydra/OmegaConf raise many types; all are user input errors here
        raise ConfigError(describe_compose_error(exc, overrides)) from exc
    finally:
        GlobalHydra.instance().clear()
    assert isinstance(data, dict)
    # `+key=value` appends even under a struct schema, so check the keys again.
    unknown = _unknown_keys(data, _schema_keys(LabConf))
    if unknown:
        raise ConfigError("\n".join(f"config: unknown key '{key}' (see conf/config.yaml for valid keys)"
                                     for key in unknown))
    validate_config(data)
    return EffectiveConfig(data=data, variant=variant, overrides=tuple(overrides))


def describe_compose_error(exc: BaseException, overrides: list[str] | tuple[str, ...]) -> str:
    """One line naming the key for a Hydra/OmegaConf composition error."""
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 5:
        chain.append(chain[-1].__cause__)
    text = " ".join(" ".join(str(e).split()) for e in chain)
    override = re.search(r"Could not override '([^']+)'", text)
    if override:
        return f"config: unknown key '{override.group(1)}' (see conf/config.yaml for valid keys)"
    missing_key = re.search(r"Key '([^']+)' (?:is not in struct|not in '[^']+')", text)
    full_key = re.search(r"full_key: (\S+)", text)
    if missing_key and full_key:
        return f"config: unknown key '{full_key.group(1)}' (see conf/config.yaml for valid keys)"
    if missing_key or "is not in struct" in text:
        key = missing_key.group(1) if missing_key else "?"
        full = next((o.split("=", 1)[0].lstrip("+~") for o in overrides
                     if o.split("=", 1)[0].lstrip("+~").split(".")[-1] == key), key)
        return f"config: unknown key '{full}' (see conf/config.yaml and `lab list` for valid keys)"
    group = re.search(r"Could not find '([^']+)'", text)
    if group:
        name = group.group(1)
        folder = name.split("/")[0]
        options = sorted(p.stem for p in (CONF_DIR / folder).glob("*.yaml"))
        return (f"config: no option '{name.split('/', 1)[-1]}' in group '{folder}' "
                f"(available: {', '.join(options)})")
    if type(exc).__name__ == "OverrideParseException":
        bad = _unparseable_override(overrides)
        return f"config: cannot parse override '{bad}': {str(chain[-1]).splitlines()[0]}"
    merging = re.search(r"Error merging override (\S+)", text)
    detail = " ".join(" ".join(str(chain[-1]).split("\n")[0].split()).split())
    if merging:
        return f"config: bad value in override '{merging.group(1)}': {detail}"
    return f"config: {detail}"


def _schema_keys(cls: type) -> dict[str, Any]:
    """Field name -> nested dict for dataclass fields, None for leaves."""
    hints = typing.get_type_hints(cls)
    return {f.name: _schema_keys(hints[f.name]) if dataclasses.is_dataclass(hints[f.name]) else None
            for f in dataclasses.fields(cls)}


def _unknown_keys(data: Any, schema: dict[str, Any], prefix: str = "") -> list[str]:
    found = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if key not in schema:
            found.append(name)
        elif isinstance(schema[key], dict) and isinstance(value, dict):
            found += _unknown_keys(value, schema[key], name + ".")
    return found


def _unparseable_override(overrides: list[str] | tuple[str, ...]) -> str:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for override in overrides:
        try:
            parser.parse_overrides([override])
        except Exception:  # the parser's own exception type; we only need which one fails
            return override
    return " ".join(overrides)


def validate_config(data: dict[str, Any]) -> None:
    """Check ranges and cross-field rules; list every problem at once.

    Raises:
        ConfigError: one line per problem, each naming the key.
    """
    import jsonschema

    from lab.schemas import load_schema

    schema = load_schema("config")
    validator = jsonschema.Draft202012Validator(schema)
    problems = [f"config: {_dotted(err.absolute_path)}: {err.message}"
                for err in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))]
    rates = data.get("rates") or {}
    if (rates.get("input") is None) != (rates.get("output") is None):
        problems.append("config: rates: give both rates.input and rates.output, or neither")
    if problems:
        raise ConfigError("\n".join(problems))


def _dotted(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    return "".join(parts).lstrip(".") or "(root)"
