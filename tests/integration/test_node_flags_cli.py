"""`node status -self`, `node drain -self|-yes|-monitor` and `job plan -diff`, against the API
in-process."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_node

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, env=env)


def _draining(client: FlaskClient, node: str) -> bool:
    return client.get(f"/v1/node/{node}").get_json()["DrainStrategy"] is not None


def test_self_names_the_node_of_this_machines_node_agent(client: FlaskClient, pg: Conn, tmp_path: Path) -> None:
    node = insert_node(pg, name="here")
    insert_node(pg, name="elsewhere")
    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "client.json").write_text(json.dumps({"node_id": node}))
    env = {"CORRAL_DATA_DIR": str(tmp_path)}
    shown = run("node", "status", "-self", env=env)
    assert shown.exit_code == 0, shown.output
    assert f"ID          = {node}" in shown.output and "Name        = here" in shown.output
    drained = run("node", "drain", "-self", "-enable", "-detach", env=env)
    assert drained.exit_code == 0, drained.output
    assert _draining(client, node)
    nowhere = run("node", "status", "-self", env={"CORRAL_DATA_DIR": str(tmp_path / "none")})
    assert nowhere.exit_code == 1 and "Error determining local node" in nowhere.output


def test_a_prefix_asks_for_confirmation_unless_yes(client: FlaskClient, pg: Conn) -> None:
    node = insert_node(pg)
    declined = run("node", "drain", "-enable", "-detach", node[:8], input="n\n")
    assert declined.exit_code == 0, declined.output
    assert f'Are you sure you want to enable drain mode for node "{node}"? [y/N]' in declined.output
    assert declined.output.rstrip().endswith("Canceling drain toggle") and not _draining(client, node)
    vague = run("node", "drain", "-enable", "-detach", node[:8], input="yes\n")
    assert vague.exit_code == 1 and "an exact 'y' is required" in vague.output and not _draining(client, node)
    accepted = run("node", "drain", "-enable", "-detach", node[:8], input="y\n")
    assert accepted.exit_code == 0 and _draining(client, node)
    full = run("node", "drain", "-disable", "-detach", node)
    assert full.exit_code == 0 and "Are you sure" not in full.output and not _draining(client, node)


def test_monitor_follows_the_drain_until_it_ends_and_changes_nothing(
    client: FlaskClient, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = insert_node(pg)
    idle = run("node", "drain", "-monitor", node)
    assert idle.exit_code == 0, idle.output
    assert f'No drain strategy set for node "{node}"' in idle.output and not _draining(client, node)
    both = run("node", "drain", "-monitor", "-enable", node)
    assert both.exit_code == 2 and "cannot be used with" in both.output

    eval_id = register(client, minimal_job())["EvalID"]
    alloc = insert_allocation(pg, node, eval_id)
    assert run("node", "drain", "-enable", "-detach", "-yes", node).exit_code == 0
    pg.execute("UPDATE allocations SET desired_transition = '{\"Migrate\": true}' WHERE id = %s", (alloc,))
    steps: list[Any] = []

    def drain_ends(_: float) -> None:  # the leader's drainer, one step per poll
        steps.append(1)
        if len(steps) == 1:
            stopped = "UPDATE allocations SET desired_status = 'stop', client_status = 'complete' WHERE id = %s"
            pg.execute(stopped, (alloc,))
        else:
            pg.execute("UPDATE nodes SET drain_strategy = NULL WHERE id = %s", (node,))

    monkeypatch.setattr(time, "sleep", drain_ends)
    watched = run("node", "drain", "-monitor", node)
    assert watched.exit_code == 0, watched.output
    lines = watched.output.splitlines()
    assert lines[0].endswith(f'Monitoring node "{node}": Ctrl-C to detach monitoring')
    assert lines[1].endswith(f'Alloc "{alloc}" marked for migration')
    assert lines[2].endswith(f'Alloc "{alloc}" status complete')
    assert lines[3].endswith(f'Drain complete for node "{node}"')


def test_plan_diff_false_leaves_the_diff_out(client: FlaskClient, tmp_path: Path) -> None:
    register(client, minimal_job())
    spec = tmp_path / "web.json"
    spec.write_text(json.dumps({"Job": minimal_job(Priority=60)}))
    full = run("plan", str(spec))
    assert full.exit_code == 1, full.output
    assert full.output.startswith('+/- Job: "web"')
    for flag in ("-diff=false", "-no-diff"):
        bare = run("job", "plan", flag, str(spec))
        assert bare.exit_code == 1, bare.output
        assert bare.output.startswith("Scheduler dry-run:")
    assert run("job", "plan", "-diff", "-verbose", str(spec)).output == full.output
