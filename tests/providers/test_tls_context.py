"""TLS verification is loaded once per process and CA source, as httpx would load it each time.

The gateway builds an upstream transport per gateway; before, each loaded certifi's bundle again
(~20 ms of CPU). ``default_tls_context`` keeps httpx's choice of CA source: ``SSL_CERT_FILE``, else
``SSL_CERT_DIR``, else certifi's bundle.
"""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import certifi
import pytest

from lab.gateway.upstream import LiveUpstream
from lab.providers.client import default_tls_context


@pytest.fixture(autouse=True)
def no_ca_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def ca_count(context: ssl.SSLContext) -> int:
    return int(context.cert_store_stats()["x509_ca"])


def test_certifis_bundle_is_loaded_once_and_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = default_tls_context()
    assert default_tls_context() is bundled
    assert bundled.verify_mode == ssl.CERT_REQUIRED and bundled.check_hostname
    reference = ssl.create_default_context(cafile=certifi.where())
    assert ca_count(bundled) == ca_count(reference) > 0


def test_the_environments_ca_file_or_directory_is_its_own_context(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    bundled = default_tls_context()
    own = tmp_path / "ca.pem"
    own.write_text(Path(certifi.where()).read_text(encoding="ascii").split("-----END CERTIFICATE-----")[0]
                   + "-----END CERTIFICATE-----\n", encoding="ascii")  # the bundle's first certificate alone
    monkeypatch.setenv("SSL_CERT_FILE", str(own))
    from_file = default_tls_context()
    assert from_file is not bundled and ca_count(from_file) == 1
    monkeypatch.delenv("SSL_CERT_FILE")
    folder = tmp_path / "certs"
    folder.mkdir()
    shutil.copyfile(own, folder / "one.pem")
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    assert default_tls_context() not in (bundled, from_file)  # capath: certificates load when a peer asks
    monkeypatch.delenv("SSL_CERT_DIR")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(OSError):
        default_tls_context()


def test_every_gateway_upstream_shares_the_context() -> None:
    contexts = []
    for _ in range(2):
        client = LiveUpstream(base_url="https://provider.example/v1", api_key="k")._get_client()
        contexts.append(client._transport._pool._ssl_context)  # type: ignore[attr-defined]
    assert contexts[0] is contexts[1] is default_tls_context()
