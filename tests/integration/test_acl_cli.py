"""`corral acl ...` and `corral namespace ...` against an ACL-enabled API; every command sends
CORRAL_TOKEN (or NOMAD_TOKEN) as X-Nomad-Token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.acl_cli import acl_enabled_api, field

pytestmark = pytest.mark.integration


@pytest.fixture
def api(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FlaskClient]:
    yield from acl_enabled_api(database_url, monkeypatch)


def run(*args: str, token: str = "", env_name: str = "CORRAL_TOKEN", stdin: str | None = None) -> Result:
    env = {env_name: token} if token else {}
    return CliRunner().invoke(main, list(args), env=env, input=stdin)


def test_acl_commands_end_to_end(api: FlaskClient, tmp_path: Path) -> None:
    boot = run("acl", "bootstrap")
    assert boot.exit_code == 0, boot.output
    root = field(boot.output, "Secret ID")
    assert field(boot.output, "Type") == "management"
    assert "already done" in run("acl", "bootstrap").output
    rules = tmp_path / "readers.hcl"
    rules.write_text('namespace "default" { policy = "read" }\n')
    applied = run("acl", "policy", "apply", "-description", "read default", "readers", str(rules), token=root)
    assert applied.exit_code == 0 and 'Successfully wrote "readers" ACL policy!' in applied.output
    assert "read default" in run("acl", "policy", "list", token=root).output
    info = run("acl", "policy", "info", "readers", token=root)
    assert 'policy = "read"' in info.output
    assert run("acl", "policy", "apply", "bad", "-", token=root, stdin="node {").exit_code != 0
    created = run("acl", "token", "create", "-name", "alice", "-policy", "readers", "-ttl", "2h", token=root)
    assert created.exit_code == 0, created.output
    alice, accessor = field(created.output, "Secret ID"), field(created.output, "Accessor ID")
    assert field(created.output, "Policies") == "readers" and field(created.output, "Expiry Time") != "<none>"
    assert accessor in run("acl", "token", "list", token=root).output
    assert "<hidden" in run("acl", "token", "info", accessor, token=root).output
    me = run("acl", "token", "self", token=alice, env_name="NOMAD_TOKEN")
    assert me.exit_code == 0 and field(me.output, "Accessor ID") == accessor
    denied = run("acl", "token", "list", token=alice)
    assert denied.exit_code != 0 and "Permission denied" in denied.output
    renamed = run("acl", "token", "update", "-name", "bob", accessor, token=root)
    assert renamed.exit_code == 0 and field(renamed.output, "Name") == "bob"
    assert field(renamed.output, "Policies") == "readers"
    assert "successfully deleted" in run("acl", "token", "delete", accessor, token=root).output
    assert "Successfully deleted" in run("acl", "policy", "delete", "readers", token=root).output
    anonymous = run("operator", "scheduler", "get-config")
    assert anonymous.exit_code != 0 and "403" in anonymous.output and "Permission denied" in anonymous.output


def test_namespace_commands(api: FlaskClient) -> None:
    root = field(run("acl", "bootstrap").output, "Secret ID")
    applied = run("namespace", "apply", "-description", "team A", "-meta", "owner=a", "team-a", token=root)
    assert applied.exit_code == 0, applied.output
    assert run("namespace", "apply", "-meta", "broken", "team-a", token=root).exit_code != 0
    listed = run("namespace", "list", token=root).output
    assert "team-a" in listed and "default" in listed
    status = run("namespace", "status", "team-a", token=root).output
    assert "team A" in status and "owner = a" in status
    kept = run("namespace", "apply", "team-a", token=root)
    assert kept.exit_code == 0 and "team A" in run("namespace", "status", "team-a", token=root).output
    assert run("namespace", "list").exit_code != 0 or "team-a" not in run("namespace", "list").output
    assert run("namespace", "delete", "team-a", token=root).exit_code == 0
    assert run("namespace", "delete", "default", token=root).exit_code != 0
