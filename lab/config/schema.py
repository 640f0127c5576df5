"""The typed schema of the configuration: one dataclass per config group (SPEC C1).

Hydra validates every composed configuration against ``LabConf`` (registered
as ``base_config``): types are checked and unknown keys rejected at compose
time. ``schema_keys`` is the key tree; ``is_measured_key`` says which dotted
keys belong to the effective-config hash (SPEC C2, VA1).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

EFFECTS = ("write", "process", "external", "analysis")


@dataclass
class SuiteConf:
    """``conf/suite/<id>.yaml``: a bundled suite, or ``external`` for one elsewhere.

    ``path`` null means ``<suite_dir>/<id>``; ``id`` null means "whatever
    suiteId the suite.json at ``path`` declares".
    """

    id: str | None = None
    path: str | None = None
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
    max_response_bytes: int = 4 * 1024 * 1024  # the largest answer accepted; not hashed (a runtime guard)
    headers: dict[str, str] = field(default_factory=dict)  # extra request headers (gateways); not hashed
    reasoning_in_history: bool = False  # send reasoning_content back in the assistant message
    max_concurrent_calls: int | None = None  # calls in flight to this endpoint at once, cluster-wide; not hashed


@dataclass
class ModeConf:
    name: str = MISSING


@dataclass
class SandboxConf:
    """``conf/sandbox/<name>.yaml``: where a run's commands execute (docs/sandbox.md).

    ``name``: ``auto`` (bwrap when usable, else none with a warning), ``bwrap``,
    ``none``, or a backend registered with ``lab.sandbox.registry``. Not in the
    effective-config hash: it is a condition of the runs (each run record and
    report header names the backend in force), see docs/configuration.md.
    """

    name: str = "auto"


@dataclass
class ExecutorConf:
    """``conf/executor/<name>.yaml``: where a run executes (docs/distributed.md).

    ``name``: ``local`` (in this process, ``jobs`` threads) or ``ray`` (Ray
    tasks on a cluster at ``address``: null starts a local cluster, ``auto``,
    or ``ray://host:port``). ``resources`` is what one run holds on a node;
    ``max_retries`` how often a run whose worker died is tried again;
    ``cancel_grace_s`` how long Ctrl-C waits for runs to stop before forcing
    them; ``spread`` places runs over the nodes from the first one (Ray's
    ``SPREAD``) rather than by Ray's default scheduling. A runtime setting
    like ``jobs``: not in the effective-config hash.
    """

    name: str = "local"
    address: str | None = None
    resources: dict[str, float] = field(default_factory=dict)
    max_retries: int = 3
    cancel_grace_s: float = 10.0
    spread: bool = True


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
class InstallConf:
    """How ``lab agents install`` installs a command agent (``manager: lab`` = nothing to install)."""

    manager: str = "lab"
    package: str | None = None
    version: str | None = None


@dataclass
class MaskRuleConf:
    pattern: str = MISSING
    replace: str = MISSING


@dataclass
class NormaliseConf:
    """Per-preset replay normalisation: dropped body fields per API, text mask rules."""

    drop: dict[str, list[str]] = field(default_factory=dict)
    rules: list[MaskRuleConf] = field(default_factory=list)


@dataclass
class CommandConf:
    """A command agent (``agent.kind: command``); see docs/agents.md."""

    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    ignore: list[str] = field(default_factory=list)
    claim: str = "exit_zero"
    claim_pattern: str | None = None
    grace_ms: int = 2000
    install: InstallConf = field(default_factory=InstallConf)
    normalise: NormaliseConf = field(default_factory=NormaliseConf)


@dataclass
class AgentConf:
    name: str = "builtin"
    kind: str = "builtin"
    version: str | None = None
    api: str = "chat"
    system_prompt: str | None = None
    tools: list[str] = field(default_factory=lambda: ["list_dir", "read_file", "write_file", "edit_file",
                                                      "search", "run_command"])
    max_output_tokens: int = 4096
    temperature: float | None = None
    compaction: CompactionConf = field(default_factory=CompactionConf)
    limits: LimitsConf = field(default_factory=LimitsConf)
    command: CommandConf = field(default_factory=CommandConf)


@dataclass
class RatesConf:
    input: float | None = None
    output: float | None = None
    cached_input: float | None = None
    cache_write: float | None = None


@dataclass
class LabConf:
    suite: SuiteConf = MISSING
    provider: ProviderConf = MISSING
    mode: ModeConf = MISSING
    agent: AgentConf = MISSING
    sandbox: SandboxConf = field(default_factory=SandboxConf)
    executor: ExecutorConf = field(default_factory=ExecutorConf)
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
    overwrite: bool = False
    preflight: bool = True
    trust_local: bool = False
    suite_dir: str | None = None
    cassette_dir: str | None = None


_registered = False


def _register_schema() -> None:
    global _registered
    if not _registered:
        from hydra.core.config_store import ConfigStore

        ConfigStore.instance().store(name="base_config", node=LabConf)
        _registered = True


@functools.cache
def schema_keys() -> dict[str, Any]:
    """The key tree of the dataclass schema: field → nested dict, or None for a leaf.

    Built once per process (every compose reads it twice, and resolving the dataclasses' type hints
    costs about 5 ms each time); the tree is shared: read it, never change it."""
    return _schema_keys(LabConf)


def _schema_keys(cls: type) -> dict[str, Any]:
    """Field name -> nested dict for dataclass fields, None for leaves."""
    hints = typing.get_type_hints(cls)
    return {f.name: _schema_keys(hints[f.name]) if dataclasses.is_dataclass(hints[f.name]) else None
            for f in dataclasses.fields(cls)}


@functools.cache
def boolean_keys() -> frozenset[str]:
    """Dotted keys whose type is ``bool`` (``keep``, ``provider.stream``, …)."""
    return frozenset(_boolean_keys(LabConf, ""))


def _boolean_keys(cls: type, prefix: str) -> list[str]:
    hints = typing.get_type_hints(cls)
    found: list[str] = []
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if dataclasses.is_dataclass(kind):
            found += _boolean_keys(kind, f"{prefix}{f.name}.")  # type: ignore[arg-type]
        elif kind is bool:
            found.append(f"{prefix}{f.name}")
    return found


MEASURED_KEYS = ("provider.model", "provider.reasoning_effort")
"""Single keys outside ``agent`` that a variant may set."""
MEASURED_PREFIX = "agent."
"""Every known key under ``agent`` is measured."""


def is_measured_key(key: str) -> bool:
    """Whether dotted ``key`` is inside the config hash and may be varied (VA1).

    ``mode`` is hashed too, but is not a variant: variants compare live runs.
    """
    return (key.startswith(MEASURED_PREFIX) or key in MEASURED_KEYS) and _is_known(key, schema_keys())


def _is_known(key: str, known: dict[str, Any]) -> bool:
    node: Any = known
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True
