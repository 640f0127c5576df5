"""Reading command-line overrides before and after Hydra sees them (SPEC C1, S6).

Three jobs, all about the user's ``key=value`` words:

- :func:`expand_suite_dir` turns ``suite_dir=DIR suite=<id>`` into the
  generic option ``suite=external suite.id='<id>'`` when ``DIR/<id>`` holds a
  suite (or no bundled option ``<id>`` exists), so third-party suites need no
  YAML file of their own;
- :func:`group_choice` tells which option of a group (``variant``,
  ``suite``) an override list selects, defaults included;
- :func:`describe_compose_error` turns a Hydra/OmegaConf exception into one
  line that names the key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from lab.paths import CONF_DIR, ROOT, from_root

LIST_KEYS = ("tasks", "allow", "agent.tools")
"""Keys whose values are lists: ``tasks=a,b`` reads as a sweep, ``tasks=[a,b]`` is the list."""
PLAIN_OPTION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")


@lru_cache(maxsize=512)
def parse_override(text: str) -> Any | None:
    """The parsed Hydra ``Override`` for ``text``, or None when it does not parse.

    Remembered per text (the parse depends on nothing else; one compose reads each override
    three or four times): the object is shared, so callers read it and never change it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return OverridesParser.create().parse_overrides([text])[0]
    except Exception:  # Hydra's parser raises its own exception types; unparseable is all we need
        return None


def _selects(override: Any, group: str) -> bool:
    return override is not None and override.key_or_group == group and override.package is None


@cache
def default_choice(group: str, conf_dir: Path = CONF_DIR) -> str | None:
    """The option ``conf/config.yaml``'s defaults list picks for ``group``."""
    from omegaconf import DictConfig, OmegaConf

    node = OmegaConf.load(conf_dir / "config.yaml")
    if not isinstance(node, DictConfig):
        return None
    for entry in node.get("defaults", []):
        if isinstance(entry, DictConfig) and group in entry:
            value = entry[group]
            return None if value is None else str(value)
    return None


def group_choice(overrides: Sequence[str], group: str, conf_dir: Path = CONF_DIR) -> str | None:
    """The option of ``group`` that ``overrides`` select (the last one wins), else the default.

    Returns None when the group is deleted (``~group``) or the choice is a
    sweep or not a plain name (Hydra reports those itself).
    """
    choice: Any = default_choice(group, conf_dir)
    for text in overrides:
        override: Any = parse_override(text)
        if _selects(override, group):
            choice = None if override.is_delete() else override.value()
    return choice if isinstance(choice, str) and PLAIN_OPTION.match(choice) else None


def _last_value(overrides: Sequence[str], key: str) -> Any:
    value = None
    for text in overrides:
        override: Any = parse_override(text)
        if _selects(override, key) and not override.is_sweep_override():
            value = None if override.is_delete() else override.value()
    return value


def expand_suite_dir(overrides: Sequence[str], conf_dir: Path = CONF_DIR) -> list[str]:
    """Rewrite the suite choice for ``suite_dir=DIR`` (see :mod:`lab.suites.source`).

    With ``suite_dir`` set, the selected suite ``<id>`` (``suite=<id>`` or the
    default) becomes ``suite=external suite.id='<id>'`` when
    ``DIR/<id>/suite.json`` exists or ``conf/suite/<id>.yaml`` does not. The
    rewritten words replace ``suite=<id>`` in place (or are put first when the
    default was used) so later ``suite.*`` overrides still apply.
    """
    suite_dir = _last_value(overrides, "suite_dir")
    name = group_choice(overrides, "suite", conf_dir)
    if not isinstance(suite_dir, str) or not suite_dir or name is None:
        return list(overrides)
    from lab.config.searchpath import option_file

    bundled = option_file("suite", name, conf_dir) is not None  # a preset, bundled or in LAB_CONFIG_PATH
    try:
        present = os.path.lexists(from_root(suite_dir) / name / "suite.json")  # refused at load if not a file
    except (OSError, ValueError):
        present = False
    if name == "external" or (bundled and not present):
        return list(overrides)
    words = ["suite=external", f"suite.id='{name}'"]
    out: list[str] = []
    replaced = False
    for text in overrides:
        if _selects(parse_override(text), "suite"):
            out += words if not replaced else []
            replaced = True
        else:
            out.append(text)
    return out if replaced else [*words, *out]


def describe_compose_error(exc: BaseException, overrides: Sequence[str], conf_dir: Path = CONF_DIR) -> str:
    """One line naming the key for a Hydra/OmegaConf composition error."""
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 5:
        chain.append(chain[-1].__cause__)
    text = " ".join(" ".join(str(e).split()) for e in chain)
    override = re.search(r"Could not override '([^']+)'", text)
    if override:
        return f"config: unknown key '{override.group(1)}' (see conf/config.yaml for valid keys)"
    missing_key = re.search(r"Key '([^']+)' (?:is not in struct|not in '[^']+')", text)
    full_key = re.search(r"full_key: (?!object_type=)(\S+)", text)  # an empty full_key is followed by object_type
    if missing_key and full_key:
        key = full_key.group(1)
        return f"config: unknown key '{key}'{preset_of_key(key, overrides, conf_dir)} (see conf/config.yaml for valid keys)"
    if missing_key or "is not in struct" in text:
        key = missing_key.group(1) if missing_key else "?"
        full = next((o.split("=", 1)[0].lstrip("+~") for o in overrides
                     if o.split("=", 1)[0].lstrip("+~").split(".")[-1] == key), key)
        return f"config: unknown key '{full}' (see conf/config.yaml and `lab list` for valid keys)"
    sweep = re.search(r"Ambiguous value for argument '([^']+)'", text)
    if sweep:
        from lab.config.schema import is_measured_key

        key = sweep.group(1).split("=", 1)[0].lstrip("+~")
        hint = (f"compare them with `lab variants … {sweep.group(1)}` or sweep with `lab run -m …`"
                if key == "variant" or is_measured_key(key) else f"sweep with `lab run -m … {sweep.group(1)}`")
        if key in LIST_KEYS:
            hint += f"; for a list, write {key}=[{sweep.group(1).split('=', 1)[1]}]"
        return f"config: '{sweep.group(1)}' is a sweep, and this command runs one configuration; {hint}"
    if "Config group override must be a string" in text:
        bad = next((o for o in overrides if "=" in o and not o.startswith(("+", "~"))
                    and "." not in o.split("=", 1)[0] and _reads_as_non_string(o.split("=", 1)[1])), "?")
        key, _, value = bad.partition("=")
        return (f"config: {bad}: the option name reads as a number or boolean; quote it: "
                f"{key}=\"'{value}'\"")
    group = re.search(r"Could not find '([^']+)'", text)
    if group and group.group(1).startswith("hydra/"):  # a group of Hydra's own (job_logging, launcher …)
        hydra_group, _, option = group.group(1).rpartition("/")
        return (f"config: no option '{option}' in Hydra's group '{hydra_group}' "
                f"(available: {', '.join(hydra_group_options(hydra_group, conf_dir))})")
    if group:
        name = group.group(1)
        folder = name.split("/")[0]
        from lab.config.searchpath import ENV, user_config_dirs, user_options

        options = sorted(p.stem for p in (conf_dir / folder).glob("*.yaml"))
        dirs = user_config_dirs()
        options += sorted(o for o, _ in user_options(dirs).get(folder, []))
        where = f"; {ENV} adds {os.pathsep.join(map(str, dirs))}" if dirs else f"; {ENV}=DIR adds your own"
        return (f"config: no option '{name.split('/', 1)[-1]}' in group '{folder}' "
                f"(available: {', '.join(options)}{where})")
    yaml_problem = _yaml_problem(chain[-1])
    if yaml_problem:
        return yaml_problem
    if type(exc).__name__ == "OverrideParseException":
        bad = next((o for o in overrides if parse_override(o) is None), " ".join(overrides))
        return f"config: cannot parse override '{bad}': {str(chain[-1]).splitlines()[0]}"
    merging = re.search(r"Error merging override (\S+)", text)
    lines = [line.strip() for line in str(chain[-1]).splitlines() if line.strip()]
    detail = " ".join((lines[0] if lines else "").split())
    if detail.endswith(":") and len(lines) > 1:  # "ValidationError raised while composing config:" + the reason
        detail = f"{detail} {' '.join(lines[1].split())}"
    if merging:
        merged = merging.group(1)
        key, _, value = merged.partition("=")
        hint = (f" (a list: write {key}=[{value}])"
                if "is not a ListConfig" in detail and value and not value.startswith("[") else "")
        return f"config: bad value in override '{merged}': {detail}{hint}"
    if full_key:
        return f"config: {full_key.group(1)}: {detail}"
    if len(overrides) == 1:  # composed one override at a time: that one is the culprit
        shown = overrides[0] if len(overrides[0]) <= 80 else overrides[0][:77] + "…"
        return f"config: bad override '{shown}': {detail}"
    return f"config: {detail}"


def preset_of_key(key: str, overrides: Sequence[str], conf_dir: Path) -> str:
    """`` in FILE`` when ``key`` comes from the user preset its group selects, else ""."""
    group = key.split(".", 1)[0]
    if "." not in key or any(o.split("=", 1)[0].lstrip("+~") == key for o in overrides):
        return ""
    from lab.config.searchpath import option_file

    choice = group_choice(overrides, group, conf_dir)
    file = option_file(group, choice, conf_dir) if choice else None
    return f" in {file}" if file is not None and not file.is_relative_to(conf_dir) else ""


def _yaml_problem(exc: BaseException) -> str | None:
    """``config: FILE: line L, column C: problem (context)`` for a YAML syntax error in a preset, else None."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None or not isinstance(getattr(exc, "problem", None), str):
        return None
    context_mark = getattr(exc, "context_mark", None)
    context = getattr(exc, "context", None)
    where = (f" ({context}, from line {context_mark.line + 1}, column {context_mark.column + 1})"
             if context and context_mark is not None else f" ({context})" if context else "")
    return f"config: {mark.name}: line {mark.line + 1}, column {mark.column + 1}: {exc.problem}{where}"  # type: ignore[attr-defined]


def hydra_group_options(group: str, conf_dir: Path) -> list[str]:
    """The options of one of Hydra's own config groups (``hydra/launcher``: ``basic``, and
    ``joblib`` when its plugin is installed), as Hydra lists them with ``conf_dir`` as the config dir."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3", job_name="lab"):
            return list(GlobalHydra.instance().config_loader().get_group_options(group))
    finally:
        GlobalHydra.instance().clear()


def relative_to_conf(path: Path) -> str:
    """``conf/variant/x.yaml`` for a file in the checkout (else the path as given)."""
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def _reads_as_non_string(value: str) -> bool:
    """Whether Hydra's grammar reads ``value`` as a number, boolean or null."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_override(f"x={value}").value()
    except Exception:  # the parser's own error type: not the case this helps with
        return False
    return not isinstance(parsed, str)
