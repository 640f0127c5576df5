"""Build a provider from its config group (``conf/provider/*.yaml``) by short name."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lab.errors import ConfigError, SuiteError
from lab.providers.base import Provider
from lab.providers.openai_compat import DEFAULT_MAX_RESPONSE_BYTES, OpenAICompatProvider
from lab.providers.scripted import ScriptedProvider, load_script

PROVIDER_NAMES = ("openai", "scripted")


def make_provider(settings: Mapping[str, Any], *, suite_dir: Path, task_id: str,
                  env: Mapping[str, str]) -> Provider:
    """The provider named by ``settings["name"]`` for one task.

    Args:
        settings: the ``provider`` config group. ``openai`` reads base_url,
            api_key_env, stream, timeout_s (default 120), max_retries
            (default 2); ``scripted`` reads stream (default false). Other
            keys (model, reasoning_effort) belong to the request, not here.
        suite_dir: the suite directory; scripts live in ``<suite_dir>/scripts``.
        task_id: the task the provider serves (selects the script).
        env: environment for the API key, CA files and proxies.

    Returns:
        An ``OpenAICompatProvider`` or a ``ScriptedProvider``.

    Raises:
        ConfigError: unknown name, or a missing / mistyped key (named).
        SuiteError: the script ``<suite_dir>/scripts/<task_id>.json`` is
            missing or invalid, or names another task.
    """
    name = settings.get("name")
    if name == "scripted":
        return _scripted(settings, suite_dir, task_id)
    if name == "openai":
        return OpenAICompatProvider(
            base_url=_setting(settings, "base_url", str),
            api_key_env=_setting(settings, "api_key_env", str),
            stream=_setting(settings, "stream", bool, False),
            timeout_s=float(_setting(settings, "timeout_s", (int, float), 120.0)),
            max_retries=_setting(settings, "max_retries", int, 2),
            env=env, headers=dict(settings.get("headers") or {}),
            max_response_bytes=_setting(settings, "max_response_bytes", int, DEFAULT_MAX_RESPONSE_BYTES))
    raise ConfigError(f"provider.name: expected one of {', '.join(PROVIDER_NAMES)}, got {name!r}")


def _scripted(settings: Mapping[str, Any], suite_dir: Path, task_id: str) -> ScriptedProvider:
    if not task_id or "/" in task_id or "\\" in task_id or task_id in (".", ".."):
        raise SuiteError([f"task id {task_id!r}: not a plain name; cannot locate its script"])
    path = suite_dir / "scripts" / f"{task_id}.json"
    if not path.is_file():
        raise SuiteError([f"{path}: no scripted-provider script for task {task_id!r} "
                          f"(expected <suite dir>/scripts/<task id>.json)"])
    script = load_script(path)
    if script["taskId"] != task_id:
        raise SuiteError([f'{path}: field "taskId": expected {task_id!r}, got {script["taskId"]!r}'])
    return ScriptedProvider(script, stream=_setting(settings, "stream", bool, False), source=str(path))


_REQUIRED = object()


def _setting(settings: Mapping[str, Any], key: str, kind: type | tuple[type, ...],
             default: Any = _REQUIRED) -> Any:
    value = settings.get(key)
    if value is None:
        if default is _REQUIRED:
            raise ConfigError(f"provider.{key}: required for provider {settings.get('name')!r}, got nothing")
        return default
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ConfigError(f"provider.{key}: expected {expected}, got {value!r}")
    return value
