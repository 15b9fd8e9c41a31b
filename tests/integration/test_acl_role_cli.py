"""`corral acl role ...` and the token commands' -role-id/-role-name, against an ACL-enabled API
(Nomad's flags, output layout and exit codes)."""

from __future__ import annotations

import json
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


def run(*args: str, token: str = "") -> Result:
    return CliRunner().invoke(main, list(args), env={"CORRAL_TOKEN": token} if token else {})


def test_acl_role_commands_end_to_end(api: FlaskClient, tmp_path: Path) -> None:
    root = field(run("acl", "bootstrap").output, "Secret ID")
    rules = tmp_path / "p.hcl"
    for name, text in (("readers", 'namespace "default" { policy = "read" }'), ("nodes", 'node { policy = "read" }')):
        rules.write_text(text)
        assert run("acl", "policy", "apply", name, str(rules), token=root).exit_code == 0
    assert run("acl", "role", "list", token=root).output.strip() == "No ACL roles found"
    missing = run("acl", "role", "create", "-policy", "readers", token=root)
    assert missing.exit_code != 0 and "ACL role name must be specified using the -name flag" in missing.output
    created = run(
        "acl", "role", "create", "-name", "ops", "-description", "operators", "-policy", "readers", token=root
    )
    assert created.exit_code == 0, created.output
    role_id = field(created.output, "ID")
    assert field(created.output, "Name") == "ops" and field(created.output, "Policies") == "readers"
    assert [line.split("=")[0].strip() for line in created.output.splitlines()] == [
        "ID",
        "Name",
        "Description",
        "Policies",
        "Create Index",
        "Modify Index",
    ]
    listed = run("acl", "role", "list", token=root).output.splitlines()
    assert listed[0].split() == ["ID", "Name", "Description", "Policies"]
    assert listed[1].split() == [role_id, "ops", "operators", "readers"]
    as_json = json.loads(run("acl", "role", "list", "-json", token=root).output)
    assert as_json[0]["ID"] == role_id
    assert run("acl", "role", "info", "-t", "{{.Name}}", role_id, token=root).output == "ops"
    assert field(run("acl", "role", "info", "-by-name", "ops", token=root).output, "ID") == role_id
    merged = run("acl", "role", "update", "-policy", "nodes", role_id, token=root)
    assert merged.exit_code == 0 and field(merged.output, "Policies") == "nodes,readers"
    assert field(merged.output, "Description") == "operators"
    nothing = run("acl", "role", "update", role_id, token=root)
    assert nothing.exit_code != 0 and "Please provide at least one flag" in nothing.output
    replaced = run("acl", "role", "update", "-no-merge", "-name", "ops2", "-policy", "nodes", role_id, token=root)
    assert replaced.exit_code == 0 and field(replaced.output, "Policies") == "nodes"
    assert field(replaced.output, "Name") == "ops2" and field(replaced.output, "Description") == ""
    made = run("acl", "token", "create", "-name", "t", "-role-name", "ops2", token=root)
    assert made.exit_code == 0, made.output
    assert field(made.output, "Roles") == "ops2" and field(made.output, "Policies") == "<none>"
    holder = field(made.output, "Secret ID")
    assert run("node", "status", token=holder).exit_code == 0  # node:read through the role
    assert run("acl", "role", "delete", role_id, token=holder).exit_code != 0
    deleted = run("acl", "role", "delete", role_id, token=root)
    assert deleted.exit_code == 0 and f"ACL role {role_id} successfully deleted" in deleted.output
    gone = run("acl", "role", "info", role_id, token=root)
    assert gone.exit_code != 0 and "ACL role not found" in gone.output
    assert run("node", "status", token=holder).exit_code != 0
