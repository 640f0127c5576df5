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

import os
import re
import sys
from pathlib import Path

from lab.config.searchpath import GROUPS

FLAGS = ("--cfg", "-c", "--info", "-i", "--shell-completion", "-sc", "--resolve")
CFG_WORDS = ("job", "all")
"""What ``--cfg`` prints: the job's composed configuration, or it with the hashed view (Hydra's
``--cfg hydra`` is not offered: the lab fixes Hydra's own settings)."""
INFO_WORDS = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")
"""Hydra's ``--info`` topics; every one prints the lab's single info page."""
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
        return guarded(command, lambda: _print(info_text(_checked_words(args, ("--info", "-i"), INFO_WORDS,
                                                                         "all"))))
    return guarded(command, lambda: _print(cfg_text(_checked_words(args, ("--cfg", "-c"), CFG_WORDS, "job"),
                                                    all_views=_flag_word(args, ("--cfg", "-c")) == "all")))


def _flag_word(args: list[str], flags: tuple[str, ...]) -> str | None:
    """The word right after one of ``flags`` when it is not an override or another flag."""
    for i, arg in enumerate(args):
        if arg in flags and i + 1 < len(args) and "=" not in args[i + 1] and not args[i + 1].startswith("-"):
            return args[i + 1]
    return None


def _checked_words(args: list[str], flags: tuple[str, ...], allowed: tuple[str, ...], default: str) -> list[str]:
    """The overrides of ``args`` after checking the flag's word and that no other bare word is left.

    Raises:
        ConfigError: the flag is given twice, its word is not one of ``allowed`` (``--cfg hydra``,
            ``--cfg bogus``, ``--info bogus``), or a word is neither a flag nor an override; one line naming it.
    """
    from lab.errors import ConfigError

    given = [a for a in args if a in flags]
    flag = given[0]
    if len(given) > 1:
        raise ConfigError(f"{flag}: given {len(given)} times; give it once")
    word = _flag_word(args, flags)
    if word is not None and word not in allowed:
        hint = " (the lab fixes Hydra's own settings; --cfg job shows what a run uses)" if word == "hydra" else ""
        raise ConfigError(f"{flag} {word}: expected {' or '.join(allowed) if len(allowed) == 2 else ', '.join(allowed)}"
                          f" (default {default}){hint}")
    skip = {i + 1 for i, a in enumerate(args) if a in flags and word is not None}
    stray = [a for i, a in enumerate(args) if i not in skip and a not in FLAGS and "=" not in a]
    if stray:
        raise ConfigError(f"{flag}: {stray[0]!r} is neither a flag nor a KEY=VALUE override")
    return [a for a in args if "=" in a]


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
    from lab.config.searchpath import ENV, clash_problems, user_config_dirs, user_options

    dirs = user_config_dirs()
    lines = [f"reliability-lab {version('reliability-lab')} · hydra-core {version('hydra-core')} · "
             f"doit {version('doit')} · python {sys.version.split()[0]}",
             f"config:    {paths.CONF_DIR} (groups: {', '.join(GROUPS)})"]
    if dirs:
        found = user_options(dirs)
        named = "; ".join(f"{g}: {', '.join(o for o, _ in found[g])}" for g in GROUPS if found[g]) or "no presets"
        lines.append(f"user config: {os.pathsep.join(map(str, dirs))} ({ENV}; {named})")
        lines += [f"  refused: {problem}" for problem in clash_problems(dirs)]  # every command stops on these
    else:
        lines.append(f"user config: none ({ENV}=DIR[{os.pathsep}DIR…] adds your own presets)")
    lines += [f"suites:    {paths.SUITES_DIR}",
             f"cassettes: {paths.CASSETTES_DIR}",
             f"results:   {paths.data_dir()} (LAB_DATA_DIR overrides)"]
    if overrides:
        from lab.config.compose import compose_config

        config = compose_config([o for o in overrides if "=" in o])
        lines.append(f"config hash: {config.config_hash()} (variant {config.variant})")
    return "\n".join(lines)


def group_options(conf_dir: Path | None = None) -> dict[str, list[str]]:
    """Config group → its options: the YAML file names in ``conf/<group>/``, then those the
    ``LAB_CONFIG_PATH`` directories add (lab.config.searchpath).

    Raises:
        ConfigError: a ``LAB_CONFIG_PATH`` entry is not a directory.
    """
    from lab.config.searchpath import user_config_dirs, user_options
    from lab.paths import CONF_DIR

    conf = CONF_DIR if conf_dir is None else conf_dir
    bundled = {g: sorted(p.stem for p in (conf / g).glob("*.yaml")) for g in GROUPS}
    for group, options in user_options(user_config_dirs()).items():
        bundled[group] += [o for o, _ in options if o not in bundled[group]]
    return bundled


def group_options_bundled(group: str) -> list[str]:
    """The options of ``group`` in the bundled ``conf/`` only."""
    from lab.paths import CONF_DIR

    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


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
    from lab.errors import ConfigError

    try:
        options, problem = group_options(), ""
    except ConfigError as exc:  # a bad LAB_CONFIG_PATH: the bundled options, and the problem said once
        options, problem = {g: group_options_bundled(g) for g in GROUPS}, f"\n{exc}"
    groups = [(g, ", ".join(o if o != default_choice(g) else f"{o} (default)" for o in opts))
              for g, opts in options.items()]
    keys = [(k, d, c) for k, d, c in top_level_keys()]
    return "\n".join([
        f"usage: lab {command} [KEY=VALUE …]   (Hydra overrides; `doit {_doit_name(command)} …` is the same)",
        "", "Config groups (GROUP=OPTION):", tabulate(groups, tablefmt="plain"),
        "", "Top-level keys (KEY=VALUE, default shown):", tabulate(keys, tablefmt="plain"),
        "", "Nested keys: GROUP.KEY=VALUE, e.g. provider.model=gpt-4.1 agent.compaction.enabled=false;",
        f"see them all with `lab {command} --cfg job`.",
        "User presets: LAB_CONFIG_PATH=DIR[:DIR…], each laid out like conf/ (DIR/agent/my-agent.yaml …).",
        "Flags: --cfg job|all (print the composed config and its hash), --info, "
        "--shell-completion shell=bash|zsh, -m (Hydra multirun, `lab run` only).",
        *(["Sequential: sequential=true k=K [round=5] [tolerance=0.05] runs rounds of `round` repetitions and "
           "stops when a group-sequential test decides (k = the most; docs/variants.md)."]
          if command == "variants" else []),
        "Exit codes: 0 completed, 1 usage or infrastructure error, 2 replay divergence, 130 cancelled."]) + problem


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
