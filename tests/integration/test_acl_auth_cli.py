"""`corral acl auth-method ...`, `acl binding-rule ...`, `login` and `acl policy self` against an
ACL-enabled API (Nomad's flags, output layout and exit codes)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.acl_cli import acl_enabled_api, field
from tests.support.jwt_issuer import Issuer

pytestmark = pytest.mark.integration


@pytest.fixture
def api(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FlaskClient]:
    yield from acl_enabled_api(database_url, monkeypatch)


def run(*args: str, token: str = "") -> Result:
    return CliRunner().invoke(main, list(args), env={"CORRAL_TOKEN": token} if token else {})


def test_auth_method_and_binding_rule_commands_then_login(api: FlaskClient, tmp_path: Path) -> None:
    issuer = Issuer()
    root = field(run("acl", "bootstrap").output, "Secret ID")
    rules = tmp_path / "p.hcl"
    rules.write_text('namespace "default" { policy = "read" }')
    assert run("acl", "policy", "apply", "eng", str(rules), token=root).exit_code == 0
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"JWTValidationPubKeys": [issuer.public_pem], "ClaimMappings": {"team": "team"}}))
    assert run("acl", "auth-method", "list", token=root).output.strip() == "No ACL auth methods found"
    no_ttl = run("acl", "auth-method", "create", "-name", "corp", "-type", "jwt", "-token-locality", "local")
    assert no_ttl.exit_code != 0 and "Max token TTL must be set" in no_ttl.output
    create = ["acl", "auth-method", "create", "-name", "corp", "-type", "jwt", "-token-locality", "local"]
    made = run(*create, "-max-token-ttl", "1h", "-default", "-config", f"@{config}", token=root)
    assert made.exit_code == 0, made.output
    assert field(made.output, "Type") == "JWT" and field(made.output, "Max Token TTL") == "1h0m0s"
    assert field(made.output, "Default") == "true" and field(made.output, "Claim mappings") == "{team: team}"
    listed = run("acl", "auth-method", "list", token=root).output.splitlines()
    assert listed[0].split() == ["Name", "Type", "Default"] and listed[1].split() == ["corp", "JWT", "true"]
    updated = run("acl", "auth-method", "update", "-max-token-ttl", "2h", "corp", token=root)
    assert updated.exit_code == 0 and field(updated.output, "Max Token TTL") == "2h0m0s"
    as_json = json.loads(run("acl", "auth-method", "info", "-json", "corp", token=root).output)
    assert as_json["Name"] == "corp" and as_json["Config"]["ClaimMappings"] == {"team": "team"}

    rule_args = ["-auth-method", "corp", "-selector", 'value.team == "eng"', "-bind-type", "policy"]
    rule = run("acl", "binding-rule", "create", *rule_args, "-bind-name", "${value.team}", token=root)
    assert rule.exit_code == 0, rule.output
    rule_id = field(rule.output, "ID")
    assert field(rule.output, "Selector") == '"value.team == \\"eng\\""'
    assert rule_id in run("acl", "binding-rule", "list", token=root).output
    changed = run("acl", "binding-rule", "update", "-description", "engineers", rule_id, token=root)
    assert field(changed.output, "Description") == "engineers" and field(changed.output, "Bind Type") == "policy"
    nothing = run("acl", "binding-rule", "update", rule_id, token=root)
    assert nothing.exit_code != 0 and "Please provide at least one update" in nothing.output

    logged = run("login", "-login-token", issuer.sign({"team": "eng"}))  # the default method: corp
    assert logged.exit_code == 0, logged.output
    assert logged.output.startswith("Successfully logged in via JWT and corp\n")
    secret = field(logged.output, "Secret ID")
    assert field(logged.output, "Name") == "JWT-corp" and field(logged.output, "Policies") == "eng"
    own = run("acl", "policy", "self", token=secret).output.splitlines()
    assert own[0].split() == ["Name", "Job", "ID", "Group", "Name", "Task", "Name"] and own[1].split()[0] == "eng"
    assert "This is a management token" in run("acl", "policy", "self", token=root).output
    refused = run("login", "-method", "corp", "-login-token", Issuer().sign({"team": "eng"}))
    assert refused.exit_code != 0 and "unable to validate provided token" in refused.output
    assert run("login", "-method", "nope", "-login-token", "x").exit_code != 0

    assert run("acl", "binding-rule", "delete", rule_id, token=root).output.strip() == (
        f"ACL binding rule {rule_id} successfully deleted"
    )
    assert run("acl", "auth-method", "delete", "corp", token=root).output.strip() == (
        "ACL auth method corp successfully deleted"
    )
    assert run("login", "-login-token", "x").exit_code != 0  # no default method any more
