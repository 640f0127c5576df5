"""Headless Chromium for the HTML reports: the DOM it builds from a page, and screenshots of it.

Outside CI a missing browser skips the test; under CI (CI=true, where .ci/run installs it) it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str:
    """The browser's path (skips, or fails under CI, when it is not installed)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")
    return browser


def _run(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-extensions", f"--user-data-dir={home / 'chromium-profile'}", *args]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False,
                            env={**os.environ, "HOME": str(home)})
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def dump_dom(url: str, home: Path) -> str:
    """The DOM Chromium built from ``url`` (a file:// URL, with a #fragment if any), serialised."""
    return _run(["--dump-dom", url], home).stdout


def screenshot(url: str, out: Path, home: Path, size: tuple[int, int] = (1280, 1600)) -> Path:
    """A PNG of the top ``size`` (px) of ``url``, written to ``out``."""
    result = _run([f"--screenshot={out}", f"--window-size={size[0]},{size[1]}", url], home)
    assert out.is_file(), result.stderr[-2000:]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return out
