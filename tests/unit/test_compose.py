"""compose.yaml cannot run here (no Docker engine), so its structure is checked instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def test_services_and_roles(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"tls", "postgres", "migrate", "server", "worker", "applier", "leader"}
    assert "version" not in compose
    for role in ("server", "worker", "applier", "leader"):
        assert compose["services"][role]["command"] == ["corral", role]
    assert compose["services"]["migrate"]["command"] == ["corral", "db", "upgrade"]


def test_replicas_and_standbys(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["worker"]["deploy"]["replicas"] >= 2
    assert services["applier"]["deploy"]["replicas"] == 2
    assert services["leader"]["deploy"]["replicas"] == 2
    for scaled in ("worker", "applier", "leader"):
        assert "container_name" not in services[scaled] and "ports" not in services[scaled]


def test_startup_order_uses_conditions(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert services["migrate"]["restart"] == "no"
    done = {"condition": "service_completed_successfully"}
    for role in ("worker", "applier", "leader"):
        assert services[role]["depends_on"] == {"migrate": done}
    assert services["server"]["depends_on"] == {"migrate": done, "tls": done}


def test_healthchecks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert "pg_isready -h 127.0.0.1" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "/v1/agent/health" in " ".join(services["server"]["healthcheck"]["test"])


def test_every_role_talks_to_the_compose_postgres(compose: dict[str, Any]) -> None:
    for name in ("migrate", "server", "worker", "applier", "leader"):
        env = compose["services"][name]["environment"]
        assert env["CORRAL_DATABASE_URL"].startswith("postgresql://corral:corral@postgres:5432/")
    assert compose["services"]["server"]["environment"]["CORRAL_BIND"] == "0.0.0.0:4646"
    assert "pgdata" in compose["volumes"]


def test_acls_and_tls_are_on(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("migrate", "server", "worker", "applier", "leader"):
        assert services[name]["environment"]["CORRAL_ACL_ENABLED"] == "true"
    server = services["server"]
    env = server["environment"]
    assert env["CORRAL_TLS_CERT_FILE"].startswith("/tls/") and env["CORRAL_TLS_KEY_FILE"].startswith("/tls/")
    assert server["volumes"] == ["tls:/tls:ro"]
    health = " ".join(server["healthcheck"]["test"])
    assert "https://127.0.0.1:4646/v1/agent/health" in health and "cafile='/tls/ca.pem'" in health
    tls = services["tls"]
    script = " ".join(tls["command"])
    assert "server.pem" in script and "IP:127.0.0.1" in script and "chown -R corral:corral /tls" in script
    assert tls["restart"] == "no" and "tls" in compose["volumes"]


def test_the_bootstrap_step_is_documented() -> None:
    text = (ROOT / "compose.yaml").read_text()
    assert "corral acl bootstrap" in text and "CORRAL_CACERT" in text and "CORRAL_TOKEN" in text


def test_the_servers_share_one_link_secret(compose: dict[str, Any]) -> None:
    """Made once by the `tls` one-shot, private to the corral user, read by every server."""
    services = compose["services"]
    assert services["server"]["environment"]["CORRAL_LINK_KEY_FILE"] == "/tls/link.key"
    script = " ".join(services["tls"]["command"])
    assert "umask 077; openssl rand -hex 32 > link.key" in script
    assert script.index("link.key") < script.index("chown -R corral:corral /tls")
