"""Which provider and model a suite's cassettes were recorded with (their header lines).

A replay sends the requests the recording's configuration sent, model
included, so it has to run with the provider and model the recording used:
``lab ci`` and a ``mode=replay`` eval take them from the cassette headers
(:func:`recorded_provider`), and an explicit ``provider=``/``provider.model=``
still wins (:func:`adopted_overrides` says which, in one line).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from lab.errors import ConfigError


def recorded_provider(cassettes: Path, tasks: Iterable[str] | None = None, *, who: str = "ci") -> list[str]:
    """Overrides selecting the provider and model the cassettes in ``cassettes`` were recorded with.

    Returns:
        ``["provider=NAME", "provider.model=MODEL"]`` (the model quoted for
        Hydra when it is not a plain word), or ``[]`` when no header names them.

    Raises:
        ConfigError: as :func:`recorded_choice`.
    """
    choice = recorded_choice(cassettes, tasks, who=who)
    return [] if choice is None else as_overrides(choice)


def as_overrides(choice: tuple[str, str]) -> list[str]:
    """``provider=…`` and ``provider.model=…`` for (provider, model), quoted for Hydra's parser when needed."""
    return [f"provider={_hydra_value(choice[0])}", f"provider.model={_hydra_value(choice[1])}"]


def _hydra_value(text: str) -> str:
    """``text`` as one Hydra override value: plain, or single-quoted with its quotes escaped
    (and the backslashes before a quote or the closing quote doubled, as Hydra's grammar reads them)."""
    import re

    if re.fullmatch(r"[A-Za-z][A-Za-z0-9_./-]*", text) and text.lower() not in ("null", "true", "false", "inf",
                                                                                 "nan"):
        return text
    body = re.sub(r"(\\*)('|\Z)", lambda m: m.group(1) * 2 + ("\\'" if m.group(2) else ""), text)
    return f"'{body}'"


def recorded_choice(cassettes: Path, tasks: Iterable[str] | None = None, *,
                    who: str = "ci") -> tuple[str, str] | None:
    """(provider, model) the cassettes in ``cassettes`` were recorded with.

    Reads each cassette's header line only; a header that cannot be read is
    left to the replay itself to report.

    Args:
        cassettes: the directory of one suite's (or one agent's) ``<task>.jsonl`` cassettes.
        tasks: only these tasks' cassettes (default: every ``*.jsonl``).
        who: the command named in an error (``ci``, ``replay``).

    Returns:
        (provider name, model), or None when no header names them.

    Raises:
        ConfigError: the cassettes name different providers or models
            (one replay cannot match both; re-record them with one).
    """
    from lab.files import loads_json, open_binary

    files = sorted(cassettes.glob("*.jsonl")) if tasks is None else [cassettes / f"{t}.jsonl" for t in sorted(tasks)]
    seen: dict[tuple[str, str], str] = {}
    for path in files:
        try:
            with open_binary(path) as fh:  # a FIFO or device in a cassette's place is skipped, not waited on
                header = loads_json(fh.readline())
        except (OSError, ValueError):
            continue
        if isinstance(header, dict) and isinstance(header.get("provider"), str) and isinstance(header.get("model"), str):
            seen.setdefault((header["provider"], header["model"]), path.name)
    if len(seen) > 1:
        (a, a_file), (b, b_file) = list(seen.items())[:2]
        raise ConfigError(f"{who}: {cassettes}: cassettes recorded with different providers: {a_file} with "
                          f"{a[0]}/{a[1]}, {b_file} with {b[0]}/{b[1]}; re-record the suite with one")
    return next(iter(seen), None)


def given_keys(overrides: Sequence[str]) -> set[str]:
    """Which of ``provider`` and ``provider.model`` the overrides set (``+``/``++``/``~`` prefixes read too)."""
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    return keys & {"provider", "provider.model"}


def adopted_overrides(recorded: tuple[str, str] | None, overrides: Sequence[str], composed: tuple[str, str],
                      cassettes: Path) -> tuple[list[str], str | None]:
    """The recorded choices a replay takes, and the one line that says so.

    Args:
        recorded: :func:`recorded_choice`'s answer (None: nothing recorded).
        overrides: the command's own overrides.
        composed: (provider name, model) the configuration composes to without them.
        cassettes: where the cassettes are (named in the line).

    Returns:
        (overrides to put before the command's own, the line to print or
        None when nothing differs). An explicit ``provider=`` naming another
        provider takes neither recorded value; ``provider.model=`` alone keeps
        the recorded provider.
    """
    if recorded is None:
        return [], None
    provider, model = recorded
    given = given_keys(overrides)
    take = [o for o, key in zip(as_overrides(recorded), ("provider", "provider.model")) if key not in given]
    differing = [f"{key}={value}" for key, value, was in (("provider", composed[0], provider),
                                                           ("provider.model", composed[1], model))
                 if key in given and value != was]
    if differing:
        if "provider" in given and composed[0] != provider:
            take = []  # another provider: the recorded model means nothing to it
        return take, (f"replay: {' '.join(differing)} given, which wins over the cassettes in {cassettes}, "
                      f"recorded with {provider}/{model} (requests that differ from the recording diverge)")
    if (provider, model) == composed:
        return [], None
    return take, (f"replay: with {provider}/{model}, the provider and model the cassettes in {cassettes} were "
                  "recorded with (provider=/provider.model= choose others)")
