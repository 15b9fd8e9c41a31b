"""`corral var` and `corral operator root keyring` against real server processes: put (create
only unless -force or -check-index), get in each format, list, lock around a child, purge,
init, and key rotation."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import Cluster
from tests.support.processes import CORRAL, CorralFactory

pytestmark = pytest.mark.acceptance


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir)
    yield running
    running.close()


def run(cluster: Cluster, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": cluster.base}
    return subprocess.run([CORRAL, *args], env=env, capture_output=True, text=True, timeout=60, check=False, cwd=cwd)


def test_var_commands_against_a_real_server(cluster: Cluster, workdir: Path) -> None:
    made = run(cluster, "var", "put", "-out", "none", "nomad/jobs/web", "greeting=hello", "count=2")
    assert made.returncode == 0 and made.stdout.startswith('Created variable "nomad/jobs/web" with modify index'), made
    again = run(cluster, "var", "put", "nomad/jobs/web", "greeting=hi")
    assert again.returncode == 1 and "Check-and-Set conflict" in again.stderr, again
    forced = run(cluster, "var", "put", "-force", "-out", "json", "nomad/jobs/web", "greeting=hi")
    assert forced.returncode == 0 and json.loads(forced.stdout)["Items"] == {"greeting": "hi"}, forced
    index = json.loads(forced.stdout)["ModifyIndex"]
    assert run(cluster, "var", "put", "-check-index", str(index), "nomad/jobs/web", "greeting=hey").returncode == 0

    assert run(cluster, "var", "get", "-item", "greeting", "nomad/jobs/web").stdout == "hey"
    table = run(cluster, "var", "get", "-out", "table", "nomad/jobs/web").stdout
    assert "Path" in table and "nomad/jobs/web" in table and "greeting = hey" in table, table
    hcl = run(cluster, "var", "get", "-out", "hcl", "nomad/jobs/web").stdout
    assert 'path         = "nomad/jobs/web"' in hcl and 'greeting = "hey"' in hcl, hcl
    templated = run(cluster, "var", "get", "-out", "go-template", "-template", "{{.Items.greeting}}!", "nomad/jobs/web")
    assert templated.stdout.strip() == "hey!", templated
    assert "Variable not found" in run(cluster, "var", "get", "nope").stderr

    assert run(cluster, "var", "init", "-quiet", cwd=workdir).returncode == 0
    from_spec = run(cluster, "var", "put", "-out", "none", "app/config", f"@{workdir / 'spec.nv.hcl'}")
    assert from_spec.returncode == 0, from_spec
    assert run(cluster, "var", "get", "-item", "key1", "app/config").stdout == "value 1"

    listed = run(cluster, "var", "list", "-out", "table").stdout
    assert "nomad/jobs/web" in listed and "app/config" in listed and "Last Updated" in listed, listed
    terse = run(cluster, "var", "list", "-out", "terse", "-per-page", "1")
    assert terse.stdout.splitlines() == ["app/config"] and "Next page token: default.nomad/jobs/web" in terse.stderr

    held = run(cluster, "var", "lock", "locks/job", "echo child-ran; exit 3")
    assert held.returncode == 3 and "child-ran" in held.stdout, held
    assert "Lock" not in json.loads(run(cluster, "var", "get", "-out", "json", "locks/job").stdout)

    assert run(cluster, "var", "purge", "-check-index", "1", "nomad/jobs/web").returncode == 1
    purged = run(cluster, "var", "purge", "nomad/jobs/web")
    assert purged.returncode == 0 and purged.stdout.strip() == 'Successfully purged variable "nomad/jobs/web"!'
    assert run(cluster, "var", "list", "-out", "terse", "nomad/").stdout.strip() == ""

    before = run(cluster, "operator", "root", "keyring", "list", "-verbose").stdout
    rotated = run(cluster, "operator", "root", "keyring", "rotate", "-full")
    assert rotated.returncode == 0 and "active" in rotated.stdout, rotated
    after = run(cluster, "operator", "root", "keyring", "list").stdout
    assert after.count("inactive") == 1 and len(after.splitlines()) == len(before.splitlines()) + 1, (before, after)
    assert run(cluster, "var", "get", "-item", "key1", "app/config").stdout == "value 1"
