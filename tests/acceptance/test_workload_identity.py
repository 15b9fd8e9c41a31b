"""Workload identity end to end, ACLs on: a raw_exec task with `identity { env = true, file =
true }` gets its JWT as NOMAD_TOKEN and in secrets/nomad_token, reads its own job's variable
through the API with it, and is refused another job's. The token verifies against
/.well-known/jwks.json."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from tests.support.cluster import Cluster, job
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance

SCRIPT = """
import os, pathlib, urllib.error, urllib.request
def get(path):
    request = urllib.request.Request(os.environ["ADDR"] + path, headers={"X-Nomad-Token": os.environ["NOMAD_TOKEN"]})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return f"{answer.status} {answer.read().decode()}"
    except urllib.error.HTTPError as err:
        return f"{err.code} {err.read().decode()}"
pathlib.Path("local/other").write_text(get("/v1/var/nomad/jobs/db"))
pathlib.Path("local/file").write_text(pathlib.Path("secrets/nomad_token").read_text())
pathlib.Path("local/own").write_text(get("/v1/var/nomad/jobs/web"))
"""


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir, {"CORRAL_ACL_ENABLED": "true"})
    yield running
    running.close()


def test_a_task_reads_its_own_variables_with_its_identity_and_no_others(cluster: Cluster) -> None:
    http = cluster.http
    root = {"X-Nomad-Token": http.post("/v1/acl/bootstrap").json()["SecretID"]}
    for path, items in (("nomad/jobs/web", {"greeting": "hello"}), ("nomad/jobs/db", {"password": "p"})):
        assert http.put(f"/v1/var/{path}", json={"Items": items}, headers=root).status_code == 200
    intro_policy = {"Rules": 'node { policy = "write" }'}
    assert http.put("/v1/acl/policy/intro", json=intro_policy, headers=root).status_code == 200
    intro = http.put("/v1/acl/token", json={"Type": "client", "Policies": ["intro"]}, headers=root).json()["SecretID"]
    cluster.client("c1", env={"CORRAL_TOKEN": intro})
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": sys.executable, "args": ["-c", SCRIPT]},
        "Env": {"ADDR": cluster.base},
        "Identity": {"Env": True, "File": True},
        "Resources": {"CPU": 10, "MemoryMB": 64},
    }
    assert http.put("/v1/jobs", json={"Job": job("web", [task], kind="batch")}, headers=root).status_code == 200
    local = cluster.workdir / "c1"
    assert wait_for(lambda: any(local.glob(".corral-client/allocs/*/t/local/own")), 180), list(local.rglob("*"))[:50]
    task_dir = next(local.glob(".corral-client/allocs/*/t"))
    own, other = (task_dir / "local" / "own").read_text(), (task_dir / "local" / "other").read_text()
    assert own.startswith("200 ") and '"greeting":"hello"' in own.replace(" ", ""), own
    assert other.startswith("403 "), other
    token = (task_dir / "local" / "file").read_text()
    assert oct((task_dir / "secrets" / "nomad_token").stat().st_mode & 0o777) == "0o600"
    keys = {k["kid"]: k for k in http.get("/.well-known/jwks.json").json()["keys"]}
    kid = jwt.get_unverified_header(token)["kid"]
    public = jwt.algorithms.RSAAlgorithm.from_jwk(keys[kid])
    assert isinstance(public, RSAPublicKey)  # a JWKS publishes public keys only
    claims = jwt.decode(token, public, algorithms=["RS256"], audience="nomadproject.io")
    assert (claims["nomad_namespace"], claims["nomad_job_id"], claims["nomad_task"]) == ("default", "web", "t")
    assert claims["nomad_allocation_id"] == task_dir.parent.name
    assert claims["sub"] == "global:default:web:g:t:default"
