"""tests/helpers/http_server.py: the reusable real-server helper behaves as documented."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers.http_server import LocalHTTPServer, Request, Response, closed_port_url


def test_requests_are_recorded_and_answered() -> None:
    with LocalHTTPServer() as server:
        server.handler = lambda request, response: response.send_json(201, {"echo": request.json()})
        with httpx.Client(trust_env=False) as client:
            answer = client.post(server.url + "/x?y=1", json={"a": 1}, headers={"X-Test": "t"})
        assert (answer.status_code, answer.json()) == (201, {"echo": {"a": 1}})
        received = server.requests[0]
        assert (received.method, received.path, received.headers["x-test"]) == ("POST", "/x?y=1", "t")


def test_handler_failures_are_recorded() -> None:
    def broken(request: Request, response: Response) -> None:
        raise AssertionError("handler bug")

    with LocalHTTPServer() as server:
        server.handler = broken
        with httpx.Client(trust_env=False) as client, pytest.raises(httpx.RemoteProtocolError):
            client.get(server.url)
        assert [str(e) for e in server.errors] == ["handler bug"]


def test_chunked_pieces_arrive_whole() -> None:
    with LocalHTTPServer() as server:
        def pieces(request: Request, response: Response) -> None:
            response.start(200, {"Content-Type": "text/plain"}, chunked=True)
            response.write_pieces(b"hello world", [2, 5, 6])
            response.end()

        server.handler = pieces
        with httpx.Client(trust_env=False) as client:
            assert client.get(server.url).text == "hello world"


def test_closed_port_refuses() -> None:
    with httpx.Client(trust_env=False) as client, pytest.raises(httpx.ConnectError):
        client.get(closed_port_url())
