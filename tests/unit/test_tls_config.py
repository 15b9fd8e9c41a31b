"""TLS settings are checked together before the server starts; callers build their TLS context
from CORRAL_* (else NOMAD_*) variables."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from app.settings.client_tls import client_tls
from app.settings.config import Settings, tls_problem
from tests.support.tls import make_pki

pytestmark = pytest.mark.unit


def test_tls_settings_are_checked_together(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    assert tls_problem(Settings()) is None
    assert tls_problem(Settings(tls_cert_file=pki.server_cert, tls_key_file=pki.server_key)) is None
    assert "together" in (tls_problem(Settings(tls_cert_file=pki.server_cert)) or "")
    verify = Settings(tls_cert_file=pki.server_cert, tls_key_file=pki.server_key, tls_verify_client=True)
    assert "CORRAL_TLS_CA_FILE" in (tls_problem(verify) or "")
    missing = Settings(tls_cert_file=tmp_path / "nope.pem", tls_key_file=pki.server_key)
    assert "not a readable file" in (tls_problem(missing) or "")


def test_client_tls_reads_corral_then_nomad_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pki = make_pki(tmp_path)
    for name in ("CACERT", "CLIENT_CERT", "CLIENT_KEY"):
        monkeypatch.delenv(f"CORRAL_{name}", raising=False)
        monkeypatch.delenv(f"NOMAD_{name}", raising=False)
    assert client_tls() is True
    monkeypatch.setenv("NOMAD_CACERT", str(pki.ca))
    monkeypatch.setenv("NOMAD_CLIENT_CERT", str(pki.client_cert))
    monkeypatch.setenv("NOMAD_CLIENT_KEY", str(pki.client_key))
    context = client_tls()
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED
    monkeypatch.setenv("CORRAL_CACERT", str(tmp_path / "missing.pem"))
    with pytest.raises(OSError):
        client_tls()  # CORRAL_* wins over NOMAD_*
