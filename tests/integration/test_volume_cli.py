"""`corral volume ...` and `corral plugin status` against the API: init writes Nomad's host
volume example, create/register read the specification, status lists and shows volumes in
Nomad's layout (-json too), delete removes one; the CSI paths say corral runs no CSI plugins."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import node_body

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _node(client: FlaskClient) -> str:
    node_id = str(uuid.uuid4())
    body = node_body(node_id, SecretID=str(uuid.uuid4()), Status="ready", Meta={"disk": "ssd"})
    assert client.put("/v1/node/register", json={"Node": body}).status_code == 200
    return node_id


def _volumes(client: FlaskClient) -> list[Any]:
    found = client.get("/v1/volumes?type=host").get_json()
    assert isinstance(found, list)
    return found


def test_init_writes_an_example_that_create_accepts(client: FlaskClient, tmp_path: Path) -> None:
    node_id = _node(client)
    spec = tmp_path / "volume.hcl"
    written = run("volume", "init", str(spec))
    assert written.exit_code == 0, written.output
    assert f"Example volume specification written to {spec}" in written.output
    assert run("volume", "init", str(spec)).exit_code == 1  # it exists already
    text = spec.read_text().replace('# node_id = "..."', f'node_id = "{node_id}"')
    spec.write_text(text)
    created = run("volume", "create", "-detach", str(spec))
    assert created.exit_code == 0, created.output
    (volume,) = _volumes(client)
    assert created.output.strip() == f"Created host volume scratch with ID {volume['ID']}"
    full = client.get(f"/v1/volume/host/{volume['ID']}").get_json()
    assert full["RequestedCapacityMinBytes"] == 2**30 and full["RequestedCapacityMaxBytes"] == 10 * 2**30
    assert full["Constraints"] == [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}]
    assert full["Parameters"] == {"mode": "0755"} and full["NodeID"] == node_id
    as_json = run("volume", "init", "-json", str(tmp_path / "v.json"))
    assert as_json.exit_code == 0 and json.loads((tmp_path / "v.json").read_text())["type"] == "host"
    csi = run("volume", "init", "-type", "csi", str(tmp_path / "csi.hcl"))
    assert csi.exit_code == 1 and "no CSI plugins" in csi.output


def test_register_status_and_delete(client: FlaskClient, tmp_path: Path) -> None:
    node_id = _node(client)
    spec = tmp_path / "data.hcl"
    spec.write_text(
        f'type = "host"\nname = "data"\nnode_id = "{node_id}"\nhost_path = "/srv/data"\n'
        'constraint {\n  attribute = "${meta.disk}"\n  value = "ssd"\n}\nparameters {\n  owner = "db"\n}\n'
    )
    registered = run("volume", "register", str(spec))
    assert registered.exit_code == 0, registered.output
    (volume,) = _volumes(client)
    assert registered.output.strip() == f"Registered host volume data with ID {volume['ID']}"

    listed = run("volume", "status")
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0] == "Dynamic Host Volumes"
    assert lines[1].split() == ["ID", "Name", "Namespace", "Plugin", "ID", "Node", "ID", "Node", "Pool", "State"]
    assert lines[2].split() == [volume["ID"][:8], "data", "default", node_id[:8], "default", "pending"]
    assert "No CSI volumes" in listed.output

    shown = run("volume", "status", "data")  # by name, as Nomad's prefix lookup
    assert shown.exit_code == 0, shown.output
    assert f"ID        = {volume['ID']}" in shown.output and "Host Path = /srv/data" in shown.output
    assert "Capacity  = 0 B" in shown.output and "No allocations placed" in shown.output
    as_json = run("volume", "status", "-json", volume["ID"][:6])
    assert json.loads(as_json.output)["HostPath"] == "/srv/data"
    assert run("volume", "status", "-t", "{{.State}}", volume["ID"]).output == "pending"

    deleted = run("volume", "delete", "-type", "host", volume["ID"][:8])
    assert deleted.exit_code == 0, deleted.output
    assert deleted.output.strip() == f'Successfully deleted volume "{volume["ID"]}"!'
    assert _volumes(client) == []
    empty = run("volume", "status", "-type", "host")
    assert empty.output.splitlines() == ["Dynamic Host Volumes", "No dynamic host volumes"]


def test_bad_specifications_and_csi_are_refused_with_the_reason(client: FlaskClient, tmp_path: Path) -> None:
    node_id = _node(client)
    cases = {
        'name = "a"\n': "missing the type",
        'type = "csi"\nname = "a"\n': "no CSI plugins",
        f'type = "host"\nname = "a"\nnode_id = "{node_id}"\ncapacity_min = "lots"\n': "invalid capacity_min",
        'type = "host"\nname = "a"\nsize = 3\n': "unknown setting 'size'",
        f'type = "host"\nname = "a"\nnode_id = "{node_id}"\nplugin_id = "lvm"\n': "Volume.PluginID",
    }
    for text, reason in cases.items():
        spec = tmp_path / "bad.hcl"
        spec.write_text(text)
        result = run("volume", "create", "-detach", str(spec))
        assert result.exit_code == 1 and reason in result.output, (text, result.output)
    unregistered = tmp_path / "reg.hcl"
    unregistered.write_text('type = "host"\nname = "a"\nhost_path = "/srv/a"\n')
    assert "Node ID is required" in run("volume", "register", str(unregistered)).output
    assert "no CSI plugins" in run("volume", "delete", "-type", "csi", "x").output
    plugins = run("plugin", "status")
    assert plugins.exit_code == 0 and plugins.output.splitlines() == ["Container Storage Interface", "No CSI plugins"]
    assert "no volumes" in run("volume", "status", "nothing").output
