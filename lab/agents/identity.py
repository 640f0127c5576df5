"""A command agent's identity: which program, at which version, a run measured (SPEC C4).

Two runs of the same preset measure the same agent only when the program is
the same. :func:`agent_identity` names it by what is on disk:

- ``executable``: ``argv[0]`` resolved as the run resolves it (the agent's
  own ``bin`` first, then ``PATH``; ``{python}`` is the lab's interpreter);
- ``digest``: sha256 hex over the files the agent is made of, each by role
  and path: the executable, every script ``argv`` names by an absolute path
  (the reference agent's ``agent.py``, a user's ``/opt/my-agent/run.py``),
  and the installed package — a ``pypi`` agent's ``*.dist-info/RECORD``
  (which lists every installed file with its own sha256), an ``npm`` agent's
  ``package.json`` and ``node_modules/.package-lock.json`` (every dependency
  with its integrity hash);
- ``reported``: the version the installed package states (``Version`` of the
  dist-info, ``version`` of ``package.json``), read from metadata, no
  program started; None when there is none (a script, a ``lab`` agent).

Editing the script, reinstalling another version or pointing ``PATH`` at
another program changes the identity, so the runs are out of date. Each
file is hashed once per version (:func:`lab.stamps.shared_digests`, by file
stamp): on a no-op the identity costs a few ``stat`` calls.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from lab.agents.command import CommandPreset, agent_prefix, placeholder_values, render, resolve_program
from lab.files import loads_json, read_bytes

DIST_NAME = re.compile(r"[-_.]+")
RUN_PLACEHOLDERS = ("prompt", "prompt_file", "model", "base_url", "home")


def agent_identity(preset: CommandPreset, data_dir: Path) -> dict[str, Any]:
    """The identity of ``preset``'s program as installed under ``data_dir``.

    Returns:
        ``{"name", "version", "executable", "digest", "reported"}``: the preset
        name and pinned version; the resolved ``argv[0]`` (None when not
        found); sha256 hex over ``(role, path, file sha256)`` of every file the
        agent is made of (see the module docstring); the package's own
        version or None.
    """
    from lab.stamps import shared_digests

    # A run's own values (its prompt file, its HOME) are not known here: a NUL names no file, so an
    # argument built from one is never taken for the agent's script.
    values = placeholder_values(preset, **dict.fromkeys(RUN_PLACEHOLDERS, "\0"))
    argv = render(preset.argv, values)
    try:
        executable = resolve_program(preset, data_dir, argv[0]) if argv else None
    except ValueError:  # argv[0] built from a run's own value ("{home}/bin/agent"): known per run only
        executable = None
    parts: list[tuple[str, str]] = []
    if executable is not None:
        parts.append(("executable", executable))
    parts += [("script", arg) for arg in argv[1:] if os.path.isabs(arg) and os.path.isfile(arg)]
    package_files, reported = _package(preset, data_dir)
    parts += [("package", str(p)) for p in package_files]
    digests = shared_digests()
    digest = hashlib.sha256()
    for role, path in parts:
        try:
            file_digest = digests.digest(Path(path))
        except OSError:
            file_digest = None  # unreadable: named by its path alone
        digest.update(f"{role}\0{path}\0{file_digest}\n".encode("utf-8", "surrogateescape"))
    return {"name": preset.name, "version": preset.version, "executable": executable,
            "digest": digest.hexdigest(), "reported": reported}


def _package(preset: CommandPreset, data_dir: Path) -> tuple[list[Path], str | None]:
    """The installed package's metadata files and the version they state."""
    if preset.manager == "pypi" and preset.package:
        return _pypi(agent_prefix(data_dir, preset.name) / "venv", preset.package)
    if preset.manager == "npm" and preset.package:
        return _npm(agent_prefix(data_dir, preset.name) / "npm", preset.package)
    return [], None


def _pypi(venv: Path, package: str) -> tuple[list[Path], str | None]:
    """``RECORD`` of ``package``'s dist-info in ``venv`` and its version (PEP 427/503 names)."""
    wanted = DIST_NAME.sub("_", package).lower()
    lib = venv / "lib"
    try:
        pythons = sorted(os.listdir(lib))
    except OSError:
        return [], None
    for python in pythons:
        site = lib / python / "site-packages"
        try:
            names = sorted(os.listdir(site))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            dist, _, version = name[: -len(".dist-info")].partition("-")
            if DIST_NAME.sub("_", dist).lower() == wanted:
                return [site / name / "RECORD"], version or None
    return [], None


def _npm(prefix: Path, package: str) -> tuple[list[Path], str | None]:
    """``package.json`` of ``package`` and the prefix's lock file, and the version ``package.json`` states."""
    manifest = prefix / "node_modules" / package / "package.json"
    try:
        version = loads_json(read_bytes(manifest)).get("version")
    except (OSError, ValueError, AttributeError):
        return [], None
    lock = prefix / "node_modules" / ".package-lock.json"
    return [manifest, *([lock] if lock.is_file() else [])], version if isinstance(version, str) else None
