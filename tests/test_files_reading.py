"""Files the lab reads are refused by type before opening, and JSON nested too deep is a one-line error.

Two kinds of hostile input, each tried on every reader of user-provided or
run-produced files: a FIFO (or device) in a file's place, which made
``open()`` block forever (replay hung on a FIFO cassette), and a JSON line
nested 200,000 deep, which made ``json.loads`` raise ``RecursionError``
(a traceback). Each reader must answer with one line naming the file (and
the line, for JSON Lines).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.errors import CassetteError, LabError, SuiteError
from lab.files import NotRegularFile, loads_json, read_bytes, read_text
from lab.providers.scripted import load_script
from lab.replay.cassette import read_cassette
from lab.report.summary import summarise_records
from lab.store import read_report

DEEP = "[" * 200_000 + "]" * 200_000


ROOT = Path(__file__).resolve().parents[1]


def header_line() -> str:
    """The header of a cassette the lab ships (a valid first line)."""
    cassette = sorted(ROOT.glob("cassettes/**/*.jsonl"))[0]
    return read_text(cassette).split("\n", 1)[0]


Reader = Callable[[Path], object]
READERS: dict[str, tuple[str, Reader, type[Exception]]] = {
    "cassette": ("task.jsonl", read_cassette, CassetteError),
    "report": ("report.json", read_report, LabError),
    "records": ("runs.jsonl", lambda p: list(summarise_records(p)), LabError),
    "scripted-provider": ("script.json", load_script, SuiteError),
}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_fifo_in_a_files_place_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    name, reader, error = READERS[kind]
    fifo = tmp_path / name
    os.mkfifo(fifo)  # no writer ever comes: open() without O_NONBLOCK would block forever
    with pytest.raises(error) as caught:
        reader(fifo)
    message = str(caught.value)
    assert str(fifo) in message and "not a regular file (a FIFO)" in message and "\n" not in message


@pytest.mark.parametrize("kind", sorted(READERS))
def test_json_nested_200000_deep_is_an_error_naming_file_and_line(tmp_path: Path, kind: str) -> None:
    name, reader, error = READERS[kind]
    path = tmp_path / name
    path.write_text(f"{header_line()}\n{DEEP}\n" if kind == "cassette" else f"{DEEP}\n", encoding="utf-8")
    with pytest.raises(error) as caught:
        reader(path)
    message = str(caught.value)
    assert str(path) in message and "nested too deep" in message and "\n" not in message
    assert {"cassette": "line 2:", "records": f"{path}:1:"}.get(kind, "") in message


def test_the_helpers_name_the_file_and_its_type(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(NotRegularFile, match=r"not a regular file \(a FIFO\)") as caught:
        read_bytes(tmp_path / "pipe")
    assert caught.value.filename == str(tmp_path / "pipe")
    with pytest.raises(NotRegularFile, match=r"\(a character device\)"):
        read_text("/dev/null")
    with pytest.raises(NotRegularFile, match=r"\(a directory\)"):
        read_bytes(tmp_path)
    (tmp_path / "plain").write_text("ok")
    os.symlink(tmp_path / "plain", tmp_path / "link")
    assert read_text(tmp_path / "link") == "ok"  # a link to a regular file is that file


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(min_value=1, max_value=300_000), prefix_lines=st.integers(min_value=0, max_value=3),
       opener=st.sampled_from(["[", '{"k":']))
def test_any_nesting_depth_parses_or_is_a_decode_error_at_its_line(depth: int, prefix_lines: int,
                                                                   opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = "\n" * prefix_lines + opener * depth + ("0" if opener == "[" else "0") + closer * depth
    try:
        value = loads_json(text)
    except json.JSONDecodeError as exc:
        assert exc.lineno == prefix_lines + 1 and "nested too deep" in exc.msg
    else:
        for _ in range(depth):  # the structure parsed is the one written
            value = value[0] if opener == "[" else value["k"]
        assert value == 0


def test_a_fifo_among_the_config_presets_is_named_before_hydra_opens_it(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.config.compose import compose_config
    from lab.errors import ConfigError

    (tmp_path / "agent").mkdir()
    os.mkfifo(tmp_path / "agent" / "mine.yaml")
    monkeypatch.setenv("LAB_CONFIG_PATH", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        compose_config([])
    assert str(caught.value) == (f"config: {tmp_path / 'agent' / 'mine.yaml'}: not a regular file (a FIFO); "
                                 "a config file must be one")


def _plant(path: Path, kind: str) -> str:
    """Put a non-regular file of ``kind`` at ``path``; returns the type the error must name."""
    import socket

    if kind == "fifo":
        os.mkfifo(path)
        return "FIFO"
    if kind == "socket":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))  # the socket file stays after close
        server.close()
        return "socket"
    if kind == "device-link":
        os.symlink("/dev/zero", path)  # read whole, it would never end
        return "character device"
    path.mkdir()
    return "directory"


@settings(max_examples=12, deadline=None)
@given(reader=st.sampled_from(sorted(READERS)), kind=st.sampled_from(["fifo", "socket", "device-link", "directory"]))
def test_any_special_file_in_any_readers_place_is_refused_by_type(tmp_path_factory: pytest.TempPathFactory,
                                                                  reader: str, kind: str) -> None:
    name, read, error = READERS[reader]
    path = tmp_path_factory.mktemp("special") / name
    shown = _plant(path, kind)
    with pytest.raises(error) as caught:
        read(path)
    assert str(path) in str(caught.value) and f"not a regular file (a {shown})" in str(caught.value)


# -- the stamps and digests a command takes before reading anything are refused by type too ---------

@pytest.mark.parametrize("kind", ["fifo", "device-link"])
def test_stamps_digests_and_the_baseline_marker_never_wait_on_a_special_file(tmp_path: Path, kind: str) -> None:
    from lab.build.baseline import stored_digest
    from lab.stamps import DigestCache, content_stamp

    cassette = tmp_path / "task.jsonl"
    _plant(cassette, kind)
    assert content_stamp(cassette) is None  # unreadable: the cache is not trusted, nothing is read
    with pytest.raises(NotRegularFile):
        DigestCache(None).digest(cassette)  # a cassette's digest: /dev/zero would be read for ever
    marker = tmp_path / "store" / "suite-digest.json"
    marker.parent.mkdir()
    _plant(marker, kind)
    assert stored_digest(marker.parent, "1.0.0", "f" * 64) is None
