"""Command agents: any command-line coding agent as configuration (``agent.kind: command``).

A preset (``conf/agent/<name>.yaml``) says how to start the agent, what to
give it, how to read its exit status and how its traffic is normalised for
replay::

    name: my-agent
    kind: command
    version: "1.2.3"                  # pinned; part of the conditions and the config hash
    api: chat                         # chat | responses (what the gateway expects)
    command:
      argv: [my-agent, --model, "{model}", --task-file, "{prompt_file}"]
      env: {MY_AGENT_TELEMETRY: "0"}
      ignore: [.my-agent-history]     # files the agent writes into the task copy (lab.agents.ignore)
      claim: exit_zero                # exit_zero | stdout_pattern | never
      install: {manager: pypi, package: my-agent, version: "1.2.3"}
      normalise: {drop: {chat: [metadata.session]}, rules: [{pattern: "run-[0-9]+", replace: "run-<n>"}]}

Placeholders (``{name}``; ``{{`` for a literal brace) in ``argv`` and ``env``:
:data:`PLACEHOLDERS`. The lab always sets ``OPENAI_BASE_URL``,
``OPENAI_API_BASE`` (the gateway) and ``OPENAI_API_KEY`` (the per-run token,
never the real key); a preset's ``env`` cannot override them.

Installation (``lab agents install NAME``): ``pypi`` agents get a venv at
``<data dir>/agents/<name>/venv``, ``npm`` agents an npm prefix at
``<data dir>/agents/<name>/npm`` (``$LAB_AGENTS_DIR/<name>/…`` when set: one
installation shared by several run stores); ``lab`` agents (the reference agent) run
with the lab's own interpreter and need nothing installed. ``argv[0]`` is
looked up in the agent's own ``bin`` directory first.
"""

from __future__ import annotations

import os
import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab import patterns
from lab.agents.ignore import ignore_problems
from lab.errors import ConfigError
from lab.replay.normalise import APIS, RequestNormaliser, task_rules

PLACEHOLDERS = {
    "prompt": "the task's prompt text",
    "prompt_file": "path of a file holding the prompt (outside the task copy)",
    "model": "provider.model",
    "base_url": "the gateway's base URL, e.g. http://127.0.0.1:PORT/v1",
    "api": "agent.api (chat or responses)",
    "home": "the run's fresh HOME directory",
    "python": "the lab's interpreter (install manager lab only)",
    "agents_dir": "the lab's bundled agents (lab/agents)",
}
"""Every placeholder an ``argv`` or ``env`` template may use."""

RESERVED_ENV = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY")
CLAIMS = ("exit_zero", "stdout_pattern", "never")
MANAGERS = ("lab", "pypi", "npm")
AGENTS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class CommandPreset:
    """A validated command-agent preset (the ``agent`` config group as data).

    Attributes:
        name, version, api: identity and wire API.
        argv, env: templates (see :data:`PLACEHOLDERS`).
        ignore: task-copy paths excluded from tree-diff verifiers.
        claim, claim_pattern: how the exit status and stdout make a claim.
        grace_ms: SIGTERM to SIGKILL grace when the lab ends the agent.
        manager, package, package_version: the install spec.
        drop, rules: per-preset replay normalisation.
    """

    name: str
    version: str
    api: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    ignore: tuple[str, ...]
    claim: str
    claim_pattern: str | None
    grace_ms: int
    manager: str
    package: str | None
    package_version: str | None
    drop: tuple[tuple[str, tuple[str, ...]], ...]
    rules: tuple[tuple[str, str], ...]

    @classmethod
    def from_config(cls, agent: Mapping[str, Any]) -> CommandPreset:
        """Build from the ``agent`` config mapping.

        Raises:
            ConfigError: every problem of :func:`preset_problems`, one per line.
        """
        problems = preset_problems(agent)
        if problems:
            raise ConfigError("\n".join(problems))
        cmd, install = agent["command"], agent["command"]["install"]
        norm = cmd.get("normalise") or {}
        return cls(
            name=agent["name"], version=str(agent["version"]), api=agent["api"], argv=tuple(cmd["argv"]),
            env=tuple(sorted(cmd["env"].items())), ignore=tuple(cmd["ignore"]), claim=cmd["claim"],
            claim_pattern=cmd.get("claim_pattern"), grace_ms=int(cmd["grace_ms"]),
            manager=install["manager"], package=install.get("package"),
            package_version=install.get("version"),
            drop=tuple(sorted((api, tuple(paths)) for api, paths in (norm.get("drop") or {}).items())),
            rules=tuple((r["pattern"], r["replace"]) for r in norm.get("rules") or []))

    def normaliser(self, base: RequestNormaliser) -> RequestNormaliser:
        """``base`` extended with this preset's dropped fields and mask rules."""
        drop: Any = {api: paths for api, paths in self.drop}
        rules = task_rules([{"pattern": p, "replace": r} for p, r in self.rules],
                           source=f"agent {self.name}: command.normalise.rules")
        return base.extended(drop=drop, rules=rules)

    def claims_success(self, exit_code: int | None, stdout_tail: str) -> bool:
        """The agent's own claim: exit 0 (and, for ``stdout_pattern``, the pattern in stdout)."""
        if self.claim == "never" or exit_code != 0:
            return False
        if self.claim == "stdout_pattern":
            try:
                return patterns.search(patterns.compile_pattern(self.claim_pattern or ""), stdout_tail) is not None
            except patterns.PatternTimeout:
                return False  # a claim the lab cannot check in time is no claim
        return True


def _template_problems(where: str, text: str) -> list[str]:
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        return [f"config: {where}: bad template {text!r}: {exc} (write {{{{ for a literal brace)"]
    known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
    return [f"config: {where}: unknown placeholder {{{f}}} in {text!r} (known: {known})"
            for f in fields if f not in PLACEHOLDERS]


def preset_problems(agent: Mapping[str, Any]) -> list[str]:
    """Every problem of a command-agent preset, one line each naming the key."""
    name = agent.get("name")
    cmd = agent.get("command") or {}
    install = cmd.get("install") or {}
    problems = []
    if not agent.get("version"):
        problems.append(f"config: agent.version: agent {name} needs a pinned version (it enters the conditions)")
    if not cmd.get("argv"):
        problems.append(f"config: agent.command.argv: agent {name} has no command to run")
    for i, arg in enumerate(cmd.get("argv") or []):
        problems += _template_problems(f"agent.command.argv[{i}]", arg)
    for key, value in (cmd.get("env") or {}).items():
        if key in RESERVED_ENV:
            problems.append(f"config: agent.command.env.{key}: set by the lab (the gateway and the run token)")
        problems += _template_problems(f"agent.command.env.{key}", value)
    if cmd.get("claim") == "stdout_pattern":
        try:
            patterns.compile_pattern(cmd.get("claim_pattern") or "")
        except ValueError as exc:
            problems.append(f"config: agent.command.claim_pattern: not a valid regex: {exc}")
        if not cmd.get("claim_pattern"):
            problems.append("config: agent.command.claim_pattern: claim stdout_pattern needs a pattern")
    if install.get("manager") in ("pypi", "npm") and not (install.get("package") and install.get("version")):
        problems.append(f"config: agent.command.install: a {install.get('manager')} agent needs package "
                        f"and a pinned version")
    problems += _normalise_problems(cmd.get("normalise") or {})
    problems += ignore_problems(list(cmd.get("ignore") or []))
    return problems


def _normalise_problems(norm: Mapping[str, Any]) -> list[str]:
    problems = [f"config: agent.command.normalise.drop.{api}: unknown API (expected chat or responses)"
                for api in norm.get("drop") or {} if api not in APIS]
    if problems:
        return problems
    try:
        RequestNormaliser().extended(drop=dict(norm.get("drop") or {}))
        task_rules(norm.get("rules") or [], source="agent.command.normalise.rules")
    except ConfigError as exc:
        problems.append(f"config: {exc}")
    return problems


def measured_command_view(agent: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a command agent that enter the effective-config hash (name and version first)."""
    cmd = agent["command"]
    return {"kind": "command", "name": agent["name"], "version": agent.get("version"), "api": agent["api"],
            "argv": list(cmd["argv"]), "env": dict(cmd["env"]), "ignore": list(cmd["ignore"]),
            "claim": cmd["claim"], "claimPattern": cmd.get("claim_pattern"),
            "normalise": {"drop": {k: list(v) for k, v in (cmd["normalise"].get("drop") or {}).items()},
                          "rules": [dict(r) for r in cmd["normalise"].get("rules") or []]}}


def agent_prefix(data_dir: Path, name: str) -> Path:
    """Where ``lab agents install`` puts agent ``name``: ``$LAB_AGENTS_DIR/<name>``, else ``<data dir>/agents/<name>``."""
    root = os.environ.get("LAB_AGENTS_DIR")
    return (Path(root).absolute() if root else data_dir / "agents") / name


def bin_dir(preset: CommandPreset, data_dir: Path) -> Path | None:
    """The agent's own ``bin`` directory, None for ``lab`` agents."""
    prefix = agent_prefix(data_dir, preset.name)
    if preset.manager == "pypi":
        return prefix / "venv" / "bin"
    if preset.manager == "npm":
        return prefix / "npm" / "node_modules" / ".bin"
    return None


def installed_version(preset: CommandPreset, data_dir: Path) -> str | None:
    """The version ``lab agents install`` recorded, or None when not installed."""
    stamp = agent_prefix(data_dir, preset.name) / "installed-version"
    try:
        return stamp.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def check_installed(preset: CommandPreset, data_dir: Path) -> None:
    """Raise before the first run when the agent cannot start.

    Raises:
        ConfigError: not installed, installed at another version than the
            preset pins, or ``argv[0]`` not found (names the fix).
    """
    if preset.manager != "lab":
        version = installed_version(preset, data_dir)
        if version is None:
            raise ConfigError(f"agent {preset.name}: not installed (run: lab agents install {preset.name})")
        if version != preset.package_version:
            raise ConfigError(f"agent {preset.name}: installed {version}, the preset pins "
                              f"{preset.package_version} (run: lab agents install {preset.name})")
    program = render(preset.argv[:1], placeholder_values(preset))[0]
    if resolve_program(preset, data_dir, program) is None:
        raise ConfigError(f"agent {preset.name}: program {program!r} not found "
                          f"(run: lab agents install {preset.name})")


def resolve_program(preset: CommandPreset, data_dir: Path, program: str) -> str | None:
    """``program`` as an absolute path: the agent's own bin first, then ``PATH``; None if absent."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) else None
    own = bin_dir(preset, data_dir)
    if own is not None and os.access(own / program, os.X_OK):
        return str(own / program)
    import shutil

    return shutil.which(program)


def placeholder_values(preset: CommandPreset, **run: str) -> dict[str, str]:
    """Values for the templates: the static ones plus this run's (prompt, model, base_url, …)."""
    values = {p: "" for p in PLACEHOLDERS}
    values.update(api=preset.api, python=sys.executable, agents_dir=str(AGENTS_DIR))
    values.update(run)
    return values


def render(templates: tuple[str, ...] | list[str], values: Mapping[str, str]) -> list[str]:
    """Each template with its placeholders filled (templates were validated)."""
    return [t.format_map(values) for t in templates]
