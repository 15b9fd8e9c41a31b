"""`corral server` over HTTPS with client-certificate verification (mTLS), with a CA and
certificates made in the test run: callers without the CA's trust or without a client
certificate signed by it are refused at the handshake; the CLI and the client honour
CORRAL_CACERT, CORRAL_CLIENT_CERT and CORRAL_CLIENT_KEY (and the NOMAD_* names)."""

from __future__ import annotations

import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import CORRAL, Corral, CorralFactory, free_port
from tests.support.tls import Pki, make_pki

pytestmark = pytest.mark.acceptance


def context(pki: Pki, *, cert: tuple[Path, Path] | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    if cert:
        ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


def wait_tls_healthy(base: str, process: Corral, ctx: ssl.SSLContext) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.process.poll() is None, process.output
        try:
            if httpx.get(f"{base}/v1/agent/health", verify=ctx, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    pytest.fail(process.output)


def test_https_with_client_verification(corral: CorralFactory, database_url: str, workdir: Path) -> None:
    pki = make_pki(workdir / "pki")
    port = free_port()
    env = {
        "CORRAL_DATABASE_URL": database_url,
        "CORRAL_BIND": f"127.0.0.1:{port}",
        "CORRAL_TLS_CERT_FILE": str(pki.server_cert),
        "CORRAL_TLS_KEY_FILE": str(pki.server_key),
        "CORRAL_TLS_CA_FILE": str(pki.ca),
        "CORRAL_TLS_VERIFY_CLIENT": "true",
    }
    server = corral(["server"], env=env)
    base = f"https://127.0.0.1:{port}"
    good = context(pki, cert=(pki.client_cert, pki.client_key))
    wait_tls_healthy(base, server, good)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/v1/agent/health", timeout=5)  # plain HTTP is not served
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{base}/v1/agent/health", timeout=5)  # the server's CA is not trusted
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{base}/v1/agent/health", verify=context(pki, cert=None), timeout=5).raise_for_status()
    intruder = context(pki, cert=(pki.other_client_cert, pki.other_client_key))
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{base}/v1/agent/health", verify=intruder, timeout=5).raise_for_status()

    cli_env = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": base}
    certs = {"CORRAL_CACERT": str(pki.ca), "CORRAL_CLIENT_CERT": str(pki.client_cert)}
    certs["CORRAL_CLIENT_KEY"] = str(pki.client_key)
    ok = subprocess.run(
        [CORRAL, "operator", "scheduler", "get-config"], env={**cli_env, **certs}, capture_output=True, text=True
    )
    assert ok.returncode == 0 and "Scheduler Algorithm" in ok.stdout, ok.stderr
    nomad_names = {k.replace("CORRAL_", "NOMAD_"): v for k, v in certs.items()}
    assert (
        subprocess.run(
            [CORRAL, "operator", "scheduler", "get-config"], env={**cli_env, **nomad_names}, capture_output=True
        ).returncode
        == 0
    )
    refused = subprocess.run(
        [CORRAL, "operator", "scheduler", "get-config"], env=cli_env, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "cannot reach corral" in refused.stderr

    home = workdir / "client"
    home.mkdir()
    client_env = {**certs, "CORRAL_ADDR": base}
    corral(["client", "--name", "tls-node", "--driver", "mock"], env=client_env, cwd=home)
    deadline = time.monotonic() + 60
    names: list[str] = []
    while time.monotonic() < deadline and "tls-node" not in names:
        names = [n["Name"] for n in httpx.get(f"{base}/v1/nodes", verify=good, timeout=5).json()]
        time.sleep(0.3)
    assert "tls-node" in names


def test_https_with_certificates_from_corral_tls(corral: CorralFactory, database_url: str, workdir: Path) -> None:
    """The CA and certificates `corral tls` writes serve corral's own mTLS: the server's for
    the API (valid for 127.0.0.1 and localhost), the CLI's for the command line."""
    pki = workdir / "corral-tls"
    pki.mkdir()
    for args in (["ca", "create"], ["cert", "create", "-server"], ["cert", "create", "-cli"]):
        made = subprocess.run([CORRAL, "tls", *args], cwd=pki, capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
    port = free_port()
    env = {
        "CORRAL_DATABASE_URL": database_url,
        "CORRAL_BIND": f"127.0.0.1:{port}",
        "CORRAL_TLS_CERT_FILE": str(pki / "global-server-nomad.pem"),
        "CORRAL_TLS_KEY_FILE": str(pki / "global-server-nomad-key.pem"),
        "CORRAL_TLS_CA_FILE": str(pki / "nomad-agent-ca.pem"),
        "CORRAL_TLS_VERIFY_CLIENT": "true",
    }
    server = corral(["server"], env=env)
    cli_cert = (pki / "global-cli-nomad.pem", pki / "global-cli-nomad-key.pem")
    good = ssl.create_default_context(cafile=str(pki / "nomad-agent-ca.pem"))
    good.load_cert_chain(str(cli_cert[0]), str(cli_cert[1]))
    wait_tls_healthy(f"https://127.0.0.1:{port}", server, good)
    assert httpx.get(f"https://localhost:{port}/v1/agent/health", verify=good, timeout=5).status_code == 200
    certs = {
        "CORRAL_CACERT": str(pki / "nomad-agent-ca.pem"),
        "CORRAL_CLIENT_CERT": str(cli_cert[0]),
        "CORRAL_CLIENT_KEY": str(cli_cert[1]),
    }
    cli_env = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": f"https://localhost:{port}", **certs}
    ok = subprocess.run([CORRAL, "operator", "scheduler", "get-config"], env=cli_env, capture_output=True, text=True)
    assert ok.returncode == 0 and "Scheduler Algorithm" in ok.stdout, ok.stderr
    without_cert = {k: v for k, v in cli_env.items() if k != "CORRAL_CLIENT_CERT"}
    refused = subprocess.run([CORRAL, "operator", "scheduler", "get-config"], env=without_cert, capture_output=True)
    assert refused.returncode != 0
