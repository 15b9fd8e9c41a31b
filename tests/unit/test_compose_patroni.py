"""compose.patroni.yaml cannot run here (no Docker engine), so its structure is checked instead:
every member is in corral's URL, synchronous replication is on, start-up waits on health."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
MEMBERS = ("patroni1", "patroni2", "patroni3")
ETCD = ("etcd1", "etcd2", "etcd3")
ROLES = ("migrate", "server", "worker", "applier", "leader")
HEALTHY = {"condition": "service_healthy"}
DONE = {"condition": "service_completed_successfully"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.patroni.yaml").read_text())
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = compose["services"]
    return found


def hosts(url: str) -> list[str]:
    """The host names of a libpq multi-host URL, in order."""
    netloc = urlsplit(url).netloc.rpartition("@")[2]
    return [part.rpartition(":")[0] for part in netloc.split(",")]


def test_services_and_roles(compose: dict[str, Any], services: dict[str, Any]) -> None:
    assert set(services) == {*ETCD, *MEMBERS, "dbinit", "tls", *ROLES}
    assert compose["name"] == "corral-patroni" and "version" not in compose
    for role in ROLES[1:]:
        assert services[role]["command"] == ["corral", role]
        assert "profiles" not in services[role]
    assert services["migrate"]["command"] == ["corral", "db", "upgrade"]
    assert services["worker"]["deploy"]["replicas"] >= 2
    assert services["applier"]["deploy"]["replicas"] == 2 and services["leader"]["deploy"]["replicas"] == 2


def test_every_image_is_pinned_by_tag(services: dict[str, Any]) -> None:
    for name, service in services.items():
        if "extends" in service:
            continue
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag, name
        assert tag not in {"latest", ""}, name
        if name in ROLES:
            assert service["build"] == "."  # corral's own image is built from this checkout
        else:
            assert re.fullmatch(r"v?\d+\.\d+[\w.-]*", tag), name
    assert services["etcd1"]["image"].startswith("quay.io/coreos/etcd:v3.")
    assert all(services[m]["image"].startswith("ghcr.io/zalando/spilo-17:") for m in MEMBERS)


def test_every_role_uses_one_url_naming_every_member(services: dict[str, Any]) -> None:
    urls = {services[role]["environment"]["CORRAL_DATABASE_URL"] for role in ROLES}
    assert len(urls) == 1
    url = urls.pop()
    assert url.startswith("postgresql://corral:")
    assert hosts(url) == list(MEMBERS)
    query = parse_qs(urlsplit(url).query)
    assert query["target_session_attrs"] == ["read-write"]
    assert query["sslmode"] == ["require"]  # Spilo rejects plain-text connections
    for role in ROLES:
        assert services[role]["environment"]["CORRAL_ACL_ENABLED"] == "true"


def test_synchronous_mode_is_on_for_every_member(services: dict[str, Any]) -> None:
    configs = {services[m]["environment"]["SPILO_CONFIGURATION"] for m in MEMBERS}
    assert len(configs) == 1
    dcs = yaml.safe_load(configs.pop())["bootstrap"]["dcs"]
    assert dcs["synchronous_mode"] is True
    assert dcs["synchronous_node_count"] >= 1
    assert dcs["postgresql"]["parameters"]["synchronous_commit"] == "on"


def test_members_form_one_cluster_on_etcd(services: dict[str, Any]) -> None:
    envs = [services[m]["environment"] for m in MEMBERS]
    assert {env["SCOPE"] for env in envs} == {"corral"}
    for member, env in zip(MEMBERS, envs, strict=True):
        named = yaml.safe_load(f"[{env['ETCD3_HOSTS']}]")  # Spilo's own parsing of the list
        assert named == [f"{e}:2379" for e in ETCD], member
        assert services[member]["depends_on"] == {e: HEALTHY for e in ETCD}
        assert services[member]["hostname"] == member  # Spilo names the Patroni member after it
        assert services[member]["volumes"] == [f"{member}:/home/postgres/pgdata"]


def test_etcd_is_one_three_member_cluster(compose: dict[str, Any], services: dict[str, Any]) -> None:
    initial = {services[e]["environment"]["ETCD_INITIAL_CLUSTER"] for e in ETCD}
    assert initial == {",".join(f"{e}=http://{e}:2380" for e in ETCD)}
    for name in ETCD:
        env = services[name]["environment"]
        assert env["ETCD_NAME"] == name
        assert env["ETCD_ADVERTISE_CLIENT_URLS"] == f"http://{name}:2379"
        assert env["ETCD_LISTEN_CLIENT_URLS"] == "http://0.0.0.0:2379"
        assert env["ETCD_INITIAL_ADVERTISE_PEER_URLS"] == f"http://{name}:2380"
        assert services[name]["volumes"] == [f"{name}:/etcd-data"] and name in compose["volumes"]


def test_healthchecks(services: dict[str, Any]) -> None:
    for name in ETCD:
        assert "endpoint health" in " ".join(services[name]["healthcheck"]["test"])
    for name in MEMBERS:
        assert "http://127.0.0.1:8008/health" in services[name]["healthcheck"]["test"]
    script = " ".join(services["dbinit"]["command"])
    for member in MEMBERS:
        assert f"http://{member}:8008/primary" in script
    assert "/v1/agent/health" in " ".join(services["server"]["healthcheck"]["test"])


def test_startup_order_uses_conditions(services: dict[str, Any]) -> None:
    cluster = {m: HEALTHY for m in MEMBERS}
    assert services["dbinit"]["depends_on"] == cluster
    assert services["migrate"]["depends_on"] == {"dbinit": DONE, **cluster}
    for one_shot in ("dbinit", "migrate"):
        assert services[one_shot]["restart"] == "no"
    for role in ("worker", "applier", "leader"):
        assert services[role]["depends_on"] == {"migrate": DONE}
    assert services["server"]["depends_on"] == {"migrate": DONE, "tls": DONE}


def test_dbinit_creates_corral_role_and_database_on_the_primary(services: dict[str, Any]) -> None:
    env = services["dbinit"]["environment"]
    assert hosts(env["ADMIN_URL"]) == list(MEMBERS) and "target_session_attrs=read-write" in env["ADMIN_URL"]
    assert env["PGPASSWORD"] == services["patroni1"]["environment"]["PGPASSWORD_SUPERUSER"]
    script = services["dbinit"]["command"][-1]
    assert "CREATE ROLE corral LOGIN" in script and "CREATE DATABASE corral OWNER corral" in script
    assert script.count("WHERE NOT EXISTS") == 2  # runs again without failing


def test_tls_is_compose_yaml_s(services: dict[str, Any]) -> None:
    assert services["tls"] == {"extends": {"file": "compose.yaml", "service": "tls"}}
    base: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert "tls" in base["services"]
    server = services["server"]
    assert server["volumes"] == ["tls:/tls:ro"] and server["ports"] == ["4646:4646"]
    assert server["environment"]["CORRAL_BIND"] == "0.0.0.0:4646"


def test_the_header_says_how_to_start_and_fail_over() -> None:
    text = (ROOT / "compose.patroni.yaml").read_text()
    assert "docker compose -f compose.patroni.yaml up" in text and "patronictl switchover" in text


def test_the_servers_share_the_link_secret_of_the_tls_one_shot(services: dict[str, Any]) -> None:
    assert services["server"]["environment"]["CORRAL_LINK_KEY_FILE"] == "/tls/link.key"
    assert services["tls"]["extends"] == {"file": "compose.yaml", "service": "tls"}
