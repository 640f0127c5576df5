"""The sandbox relay: 127.0.0.1:PORT → the gateway's unix socket, ready line on stdout."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

import lab.gateway.relay
from lab.gateway import Gateway
from tests.helpers.gateway_support import AUTH, sdk
from tests.helpers.http_server import LocalHTTPServer
from tests.helpers.openai_stub import ScriptedStub, Turn

MakeGateway = Callable[..., Gateway]
RELAY = Path(lab.gateway.relay.__file__)


@pytest.fixture
def start_relay() -> Iterator[Callable[[Path], tuple[subprocess.Popen[str], str]]]:
    """Factory: a relay process to ``socket_path``; returns it and its ``http://host:port``."""
    started: list[subprocess.Popen[str]] = []

    def start(socket_path: Path) -> tuple[subprocess.Popen[str], str]:
        process = subprocess.Popen([sys.executable, "-I", "-S", str(RELAY), "127.0.0.1:0", str(socket_path)],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        started.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("ready 127.0.0.1:"), line
        return process, "http://" + line.split()[1]

    yield start
    for process in started:
        process.kill()
        process.communicate()


@pytest.fixture
def socket_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("relay") / "gw.sock"


@pytest.mark.parametrize("stream", [True, False])
def test_an_sdk_client_reaches_the_gateway_through_the_relay(
        make_gateway: MakeGateway, provider: LocalHTTPServer, start_relay: Callable[[Path], tuple[object, str]],
        socket_path: Path, stream: bool) -> None:
    provider.handler = ScriptedStub([Turn(text="relayed")])
    make_gateway(tcp=False, socket_path=socket_path)
    _, url = start_relay(socket_path)

    with sdk(url + "/v1") as client:
        if stream:
            text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
                model="m", messages=[], stream=True) if c.choices)
        else:
            text = client.chat.completions.create(model="m", messages=[]).choices[0].message.content or ""

    assert text == "relayed"


def test_the_relay_serves_connections_one_after_another(
        make_gateway: MakeGateway, provider: LocalHTTPServer, start_relay: Callable[[Path], tuple[object, str]],
        socket_path: Path) -> None:
    provider.handler = ScriptedStub([Turn(text="x")])
    gateway = make_gateway(tcp=False, socket_path=socket_path)
    _, url = start_relay(socket_path)

    statuses = [httpx.post(url + "/v1/responses", json={"model": "m"}, headers=AUTH).status_code
                for _ in range(3)]

    assert statuses == [200, 200, 200]
    assert gateway.stats.calls == 3


def test_a_relay_without_a_gateway_closes_the_connection(
        start_relay: Callable[[Path], tuple[subprocess.Popen[str], str]], socket_path: Path) -> None:
    process, url = start_relay(socket_path)

    with pytest.raises(httpx.TransportError):  # a FIN or a RST, depending on what the relay had read
        httpx.get(url + "/v1/models")

    process.kill()
    assert process.stderr is not None
    assert f"relay: cannot reach {socket_path}" in process.stderr.read()


def test_bad_arguments_exit_2_with_usage() -> None:
    result = subprocess.run([sys.executable, "-I", "-S", str(RELAY), "nonsense"], capture_output=True,
                            text=True, check=False)

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("usage: relay.py HOST:PORT UNIX_SOCKET_PATH")
