"""Hydra's command-line flags on ``lab run`` (and ``record``, ``ci``, ``variants``).

    lab run --help                  config groups with their options, top-level keys with defaults
    lab run --cfg job [OVERRIDES…]  the composed, validated configuration and its hash; runs nothing
    lab run --cfg all [OVERRIDES…]  the same plus the effective-config view that is hashed
    lab run --info [OVERRIDES…]     versions, where config, suites, cassettes and results live
    lab run --shell-completion shell=bash|zsh   a completion script (eval "$(…)" in the shell's rc)

The help and the completion words are generated from ``conf/`` and the typed
schema, so they list exactly what an override may name. ``--resolve`` is
accepted and changes nothing: the printed configuration is always resolved.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FLAGS = ("--cfg", "-c", "--info", "-i", "--shell-completion", "-sc", "--resolve")
GROUPS = ("suite", "provider", "mode", "agent", "variant")
KEY_LINE = re.compile(r'^"?([A-Za-z_][A-Za-z0-9_]*)"?:\s*(.*?)\s*(?:#\s*(.*))?$')


def handles(args: list[str]) -> bool:
    """Whether ``args`` ask for one of the flags of this module (not a run)."""
    return any(a in FLAGS for a in args)


def config_flags(command: str, args: list[str]) -> int:
    """Answer ``--cfg``/``--info``/``--shell-completion``; returns the exit code (0, or 1 for a bad config)."""
    from lab.cli.options import guarded

    rest = [a for a in args if a not in FLAGS]
    if "--shell-completion" in args or "-sc" in args:
        return guarded(command, lambda: _print(completion_script(_shell(rest))))
    if "--info" in args or "-i" in args:
        return guarded(command, lambda: _print(info_text(rest)))
    overrides = [a for a in rest if "=" in a]
    return guarded(command, lambda: _print(cfg_text(overrides, all_views=_cfg_which(args) == "all")))


def _cfg_which(args: list[str]) -> str:
    """The word after ``--cfg``/``-c`` (``job`` or ``all``); ``job`` when none is given."""
    for i, arg in enumerate(args):
        if arg in ("--cfg", "-c") and i + 1 < len(args) and "=" not in args[i + 1]:
            return args[i + 1]
    return "job"


def _print(text: str) -> int:
    print(text)
    return 0


def _shell(rest: list[str]) -> str:
    from lab.errors import ConfigError

    shell = next((a.split("=", 1)[1] for a in rest if a.startswith(("shell=", "install="))), "bash")
    if shell not in ("bash", "zsh"):
        raise ConfigError(f"--shell-completion: shell: expected bash or zsh, got {shell!r}")
    return shell


def cfg_text(overrides: list[str], *, all_views: bool = False) -> str:
    """The composed configuration as YAML, then its effective-config hash.

    Raises:
        ConfigError: the overrides do not compose (one line per problem).
    """
    from omegaconf import OmegaConf

    from lab.config.compose import compose_config

    config = compose_config(overrides)
    text = OmegaConf.to_yaml(OmegaConf.create(config.data))
    if all_views:
        text += "# measured view (what the effective-config hash covers):\n"
        text += OmegaConf.to_yaml(OmegaConf.create(config.measured_view()))
    return f"{text}# effective-config hash: {config.config_hash()} (variant {config.variant})"


def info_text(overrides: list[str]) -> str:
    """Versions and the places the lab reads and writes."""
    from importlib.metadata import version

    from lab import paths

    lines = [f"reliability-lab {version('reliability-lab')} · hydra-core {version('hydra-core')} · "
             f"doit {version('doit')} · python {sys.version.split()[0]}",
             f"config:    {paths.CONF_DIR} (groups: {', '.join(GROUPS)})",
             f"suites:    {paths.SUITES_DIR}",
             f"cassettes: {paths.CASSETTES_DIR}",
             f"results:   {paths.data_dir()} (LAB_DATA_DIR overrides)"]
    if overrides:
        from lab.config.compose import compose_config

        config = compose_config([o for o in overrides if "=" in o])
        lines.append(f"config hash: {config.config_hash()} (variant {config.variant})")
    return "\n".join(lines)


def group_options(conf_dir: Path | None = None) -> dict[str, list[str]]:
    """Config group → its options (the YAML file names in ``conf/<group>/``)."""
    from lab.paths import CONF_DIR

    conf = CONF_DIR if conf_dir is None else conf_dir
    return {g: sorted(p.stem for p in (conf / g).glob("*.yaml")) for g in GROUPS}


def top_level_keys(conf_dir: Path | None = None) -> list[tuple[str, str, str]]:
    """(key, default, comment) of every top-level key in ``conf/config.yaml``."""
    from lab.paths import CONF_DIR

    conf = CONF_DIR if conf_dir is None else conf_dir
    rows = []
    for line in (conf / "config.yaml").read_text(encoding="utf-8").splitlines():
        match = KEY_LINE.match(line)
        if match and match.group(1) not in ("defaults", "hydra"):
            rows.append((match.group(1), match.group(2), match.group(3) or ""))
    return rows


def help_text(command: str) -> str:
    """``lab COMMAND --help`` for the commands that take Hydra overrides."""
    from tabulate import tabulate

    from lab.config.overrides import default_choice

    groups = [(g, ", ".join(o if o != default_choice(g) else f"{o} (default)" for o in opts))
              for g, opts in group_options().items()]
    keys = [(k, d, c) for k, d, c in top_level_keys()]
    return "\n".join([
        f"usage: lab {command} [KEY=VALUE …]   (Hydra overrides; `doit {_doit_name(command)} …` is the same)",
        "", "Config groups (GROUP=OPTION):", tabulate(groups, tablefmt="plain"),
        "", "Top-level keys (KEY=VALUE, default shown):", tabulate(keys, tablefmt="plain"),
        "", "Nested keys: GROUP.KEY=VALUE, e.g. provider.model=gpt-4.1 agent.compaction.enabled=false;",
        f"see them all with `lab {command} --cfg job`.",
        "Flags: --cfg job|all (print the composed config and its hash), --info, "
        "--shell-completion shell=bash|zsh, -m (Hydra multirun, `lab run` only).",
        *(["Sequential: sequential=true k=K [round=5] [tolerance=0.05] runs rounds of `round` repetitions and "
           "stops when a group-sequential test decides (k = the most; docs/variants.md)."]
          if command == "variants" else []),
        "Exit codes: 0 completed, 1 usage or infrastructure error, 2 replay divergence, 130 cancelled."])


def _doit_name(command: str) -> str:
    return "eval" if command == "run" else command


def completion_words() -> list[str]:
    """Every word an override may start with: ``group=option``, ``key=`` and nested ``group.key=``."""
    from lab.config.schema import schema_keys

    words = [f"{g}={o}" for g, opts in group_options().items() for o in opts]

    def walk(tree: dict[str, object], prefix: str) -> None:
        for key, sub in tree.items():
            if isinstance(sub, dict):
                walk(sub, f"{prefix}{key}.")
            else:
                words.append(f"{prefix}{key}=")

    walk(schema_keys(), "")
    return sorted(set(words))


def completion_script(shell: str) -> str:
    """A bash or zsh completion script for ``lab``: commands, then groups, options and keys."""
    from lab.cli import COMMANDS

    commands = " ".join(sorted(COMMANDS))
    words = " ".join(completion_words())
    if shell == "zsh":
        return (f"#compdef lab\n_lab() {{\n  if (( CURRENT == 2 )); then compadd -- {commands} --help --version\n"
                f"  else compadd -S '' -- {words}\n  fi\n}}\ncompdef _lab lab")
    # The word is taken from COMP_LINE because bash splits words at "=" (COMP_WORDBREAKS).
    return (f"_lab() {{\n  local line=\"${{COMP_LINE:0:$COMP_POINT}}\"\n  local cur=\"${{line##* }}\"\n"
            f"  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
            f"    COMPREPLY=($(compgen -W \"{commands} --help --version\" -- \"$cur\"))\n  else\n"
            f"    compopt -o nospace 2>/dev/null\n    COMPREPLY=($(compgen -W \"{words}\" -- \"$cur\"))\n"
            f"    case \"$cur\" in *=*) COMPREPLY=(\"${{COMPREPLY[@]#${{cur%%=*}}=}}\") ;; esac\n"
            f"  fi\n}}\ncomplete -F _lab lab")
