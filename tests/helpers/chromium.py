"""Headless Chromium for the HTML reports: the DOM it builds from a page, and screenshots of it.

One browser per test process, started on first use and closed when the process exits: a start
costs about two seconds of CPU (its helper processes included), a page in the running browser
about a tenth of a second. The tests drive it
over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages ended by a NUL
byte on fds 3 and 4; no port, no extra package). Every page is a cross-document load in the same
tab (it passes through ``about:blank``), so a ``#fragment`` is honoured as on a fresh start.

Outside CI a missing browser skips the test; under CI (CI=true, where .ci/run installs it) it fails.
"""

from __future__ import annotations

import atexit
import base64
import ctypes
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

TIMEOUT_S = 180
"""The longest one page may take (load, DOM, screenshot) before the browser is killed and the test fails."""

SERIALISED_DOM = ("(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '')"
                  " + document.documentElement.outerHTML")
"""What ``chromium --dump-dom`` prints: the doctype and the serialised document element."""


def chromium() -> str:
    """The browser's path (skips, or fails under CI, when it is not installed)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")
    return browser




class _Browser:
    """A running headless Chromium with one tab, driven over its DevTools pipe."""

    def __init__(self, program: str) -> None:
        self.home = tempfile.mkdtemp(prefix="lab-tests-chromium-")
        commands_r, self._commands = os.pipe()  # the browser reads commands on its fd 3
        self._replies, replies_w = os.pipe()  # and writes replies and events on its fd 4
        argv = [program, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-extensions", "--disable-crash-reporter", f"--user-data-dir={Path(self.home) / 'profile'}",
                "--remote-debugging-pipe", "about:blank"]

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork: the child only calls it

        def child_fds() -> None:
            prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the browser never outlives the tests
            os.dup2(commands_r, 3)
            os.dup2(replies_w, 4)

        self.process = subprocess.Popen(argv, pass_fds=(3, 4), preexec_fn=child_fds, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        env={**os.environ, "HOME": self.home})
        os.close(commands_r)
        os.close(replies_w)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._replies, selectors.EVENT_READ)
        self._buffer = b""
        self._last_id = 0
        self._events: list[dict[str, Any]] = []
        deadline = time.monotonic() + TIMEOUT_S
        target = self.call("Target.createTarget", {"url": "about:blank"}, deadline=deadline)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 deadline=deadline)["sessionId"]
        self.call("Page.enable", session=True, deadline=deadline)

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                raise TimeoutError(f"headless chromium did not answer within {TIMEOUT_S} s")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise EOFError(f"headless chromium ended (exit {self.process.wait()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False,
             deadline: float) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._last_id += 1
        message: dict[str, Any] = {"id": self._last_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._last_id:
                if "error" in reply:
                    raise RuntimeError(f"chromium: {method}: {reply['error']}")
                return dict(reply["result"])
            if "method" in reply:
                self._events.append(reply)

    def _load(self, url: str, deadline: float) -> None:
        self._events.clear()
        navigated = self.call("Page.navigate", {"url": url}, session=True, deadline=deadline)
        assert not navigated.get("errorText"), f"{url}: {navigated['errorText']}"
        while True:
            events = [e for e in self._events if e["method"] == "Page.loadEventFired"
                      and e.get("sessionId") == self.session]
            if events:
                return
            self._events.append(self._message(deadline))

    def page(self, url: str, shot: Path | None, size: tuple[int, int] | None, expression: str = SERIALISED_DOM) -> Any:
        """The value of ``expression`` (by default the DOM) in ``url`` once loaded; with ``shot``, a PNG of its top
        ``size`` (px) written there too."""
        deadline = time.monotonic() + TIMEOUT_S
        self._load("about:blank", deadline)  # so the next load is a new document, even for a #fragment of this one
        if size is None:
            self.call("Emulation.clearDeviceMetricsOverride", session=True, deadline=deadline)
        else:
            self.call("Emulation.setDeviceMetricsOverride", {"width": size[0], "height": size[1],
                                                             "deviceScaleFactor": 1, "mobile": False},
                      session=True, deadline=deadline)
        self._load(url, deadline)
        reply = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True,
                          deadline=deadline)
        assert "exceptionDetails" not in reply, f"{url}: {reply['exceptionDetails']}"
        if shot is not None:
            data = self.call("Page.captureScreenshot", {"format": "png"}, session=True, deadline=deadline)["data"]
            shot.write_bytes(base64.b64decode(data))
        return reply["result"].get("value")

    def close(self, *, kill: bool = False) -> None:
        """Close the browser (``kill``: at once, as after a failure) and wait for it."""
        if not kill:
            try:
                self.call("Browser.close", deadline=time.monotonic() + 30)
            except (OSError, EOFError, TimeoutError, RuntimeError):
                kill = True
            else:
                try:
                    self.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    kill = True
        if kill:
            self.process.kill()
            self.process.wait()
        self._selector.close()
        os.close(self._commands)
        os.close(self._replies)
        shutil.rmtree(self.home, ignore_errors=True)


_browser: list[_Browser] = []
"""The test process's browser, once started (at most one)."""


@atexit.register
def _shutdown() -> None:
    while _browser:
        _browser.pop().close()


def render(url: str, shot: Path | None = None, size: tuple[int, int] = (1280, 1600)) -> str:
    """The DOM Chromium built from ``url`` (a file:// URL, with a #fragment if any), serialised as
    ``chromium --dump-dom`` prints it; with ``shot``, a PNG of the page's top ``size`` (px) written there.

    The browser is shared by the test process; a browser that failed is closed and the next call starts one.
    """
    dom = _in_browser(url, SERIALISED_DOM, shot, size if shot is not None else None)
    if shot is not None:
        assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", shot
    return str(dom)


def evaluate(url: str, expression: str) -> Any:
    """The value (JSON-like) of the JavaScript ``expression`` in the page ``url`` once Chromium loaded it;
    a script error fails the test."""
    return _in_browser(url, expression, None, None)


def _in_browser(url: str, expression: str, shot: Path | None, size: tuple[int, int] | None) -> Any:
    """``expression`` evaluated in ``url`` in the shared browser (one that failed is closed; the next call starts one)."""
    program = chromium()
    if _browser and _browser[0].process.poll() is not None:
        _browser.pop().close(kill=True)
    if not _browser:
        _browser.append(_Browser(program))
    try:
        return _browser[0].page(url, shot, size, expression)
    except BaseException:
        _browser.pop().close(kill=True)
        raise


def dump_dom(url: str, home: Path | None = None) -> str:
    """The DOM Chromium built from ``url`` (:func:`render`); ``home`` is not used (the browser has its own)."""
    return render(url)


def screenshot(url: str, out: Path, home: Path | None = None, size: tuple[int, int] = (1280, 1600)) -> Path:
    """A PNG of the top ``size`` (px) of ``url``, written to ``out`` (:func:`render`); ``home`` is not used."""
    render(url, out, size)
    return out


SVG_TEXTS = """Array.from(document.querySelectorAll('svg')).flatMap((svg, index) => {
  const s = svg.getBoundingClientRect(), v = svg.viewBox.baseVal;
  return Array.from(svg.querySelectorAll('text')).map(t => {
    const r = t.getBoundingClientRect(), b = t.getBBox();
    return {svg: svg.id || (svg.getAttribute('class') || 'svg') + '#' + index, text: t.textContent,
            y: t.getAttribute('y'), client: [r.left - s.left, r.top - s.top, r.right - s.left, r.bottom - s.top],
            svgSize: [s.width, s.height], bbox: [b.x, b.y, b.x + b.width, b.y + b.height],
            viewBox: v && v.width ? [v.x, v.y, v.x + v.width, v.y + v.height] : null};
  });
})"""
"""Every ``<text>`` of every ``<svg>`` on a page, as laid out: its box relative to its SVG's box (px, from
getBoundingClientRect: left, top, right, bottom), its SVG's size, its getBBox (user units) and its SVG's viewBox."""


def svg_texts(url: str) -> list[dict[str, Any]]:
    """The laid-out box of each SVG text on ``url`` (:data:`SVG_TEXTS`), as Chromium drew them."""
    return list(evaluate(url, SVG_TEXTS))


def texts_outside_their_svg(url: str) -> list[str]:
    """Each SVG text on ``url`` that is not wholly inside its SVG's box and viewBox, or that overlaps another
    text on the same line of the same SVG, described in one line (none: every text fits)."""
    texts, bad = svg_texts(url), []
    for t in texts:
        left, top, right, bottom = t["client"]
        width, height = t["svgSize"]
        if left < 0 or top < 0 or right > width or bottom > height:
            bad.append(f"{t['svg']}: {t['text']!r} at {t['client']} outside the SVG's 0 0 {width} {height}")
        box, view = t["bbox"], t["viewBox"]
        if view is None:
            bad.append(f"{t['svg']}: has no viewBox")
        elif box[0] < view[0] or box[1] < view[1] or box[2] > view[2] or box[3] > view[3]:
            bad.append(f"{t['svg']}: {t['text']!r} at {box} outside the viewBox {view}")
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            if a["svg"] == b["svg"] and a["y"] == b["y"] and a["client"][0] < b["client"][2] \
                    and b["client"][0] < a["client"][2]:
                bad.append(f"{a['svg']}: {a['text']!r} and {b['text']!r} overlap on the line y={a['y']}")
    return bad
