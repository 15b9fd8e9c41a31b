"""IDs typed as printed: every command that takes an evaluation, allocation, node or deployment
ID takes a unique prefix; an ambiguous one is answered as Nomad answers it ("Prefix matched
multiple ..." and the matches in the kind's list layout, exit 1)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_node

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _renamed(pg: Conn, table: str, old: str, new: str) -> str:
    pg.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (new, old))
    return new


def _two_evals(client: FlaskClient, pg: Conn) -> tuple[str, str]:
    first = register(client, minimal_job("a"))["EvalID"]
    second = register(client, minimal_job("b"))["EvalID"]
    return (
        _renamed(pg, "evaluations", first, "abcd1234-0000-4000-8000-000000000001"),
        _renamed(pg, "evaluations", second, "abcd1234-1111-4000-8000-000000000002"),
    )


def test_an_ambiguous_evaluation_prefix_lists_the_matches(client: FlaskClient, pg: Conn) -> None:
    _two_evals(client, pg)
    ambiguous = run("eval", "status", "abcd1234")
    assert ambiguous.exit_code == 1
    lines = ambiguous.output.splitlines()
    assert lines[0] == "Error: Prefix matched multiple evaluations" and lines[1] == ""
    assert lines[2].split()[:3] == ["ID", "Priority", "Triggered"]
    assert sorted(line.split()[0] for line in lines[3:]) == ["abcd1234", "abcd1234"]


def test_a_unique_prefix_resolves_and_unknown_or_short_ones_are_refused(client: FlaskClient, pg: Conn) -> None:
    first, _ = _two_evals(client, pg)
    shown = run("eval", "status", "-verbose", "abcd1234-0")
    assert shown.exit_code == 0, shown.output
    assert f"ID                 = {first}" in shown.output
    unknown = run("eval", "status", "ffff")
    assert unknown.exit_code == 1 and 'No evaluation(s) with prefix or id "ffff" found' in unknown.output
    short = run("eval", "status", "a")
    assert short.exit_code == 1 and "Identifier must contain at least two characters." in short.output
    not_hex = run("eval", "status", "zz-top")
    assert not_hex.exit_code == 1 and 'No evaluation(s) with prefix or id "zz-top" found' in not_hex.output


def test_node_drain_takes_a_prefix(client: FlaskClient, pg: Conn) -> None:
    node = insert_node(pg)
    drained = run("node", "drain", "-enable", "-detach", "-yes", node[:8])
    assert drained.exit_code == 0, drained.output
    assert drained.output.startswith(f"Node {node} drain enabled")
    assert client.get(f"/v1/node/{node}").get_json()["DrainStrategy"] is not None
    other = _renamed(pg, "nodes", insert_node(pg, name="n2"), node[:8] + "-0000-4000-8000-000000000000")
    ambiguous = run("node", "drain", "-disable", "-yes", node[:8])
    assert ambiguous.exit_code == 1 and "Prefix matched multiple nodes" in ambiguous.output
    assert "n1" in ambiguous.output and "n2" in ambiguous.output and other != node


def test_alloc_commands_take_a_prefix_and_list_ambiguous_matches(client: FlaskClient, pg: Conn) -> None:
    eval_id = register(client, minimal_job())["EvalID"]
    node = insert_node(pg)
    first = _renamed(pg, "allocations", insert_allocation(pg, node, eval_id), "beef0000-0000-4000-8000-000000000001")
    _renamed(pg, "allocations", insert_allocation(pg, node, eval_id), "beef0000-1111-4000-8000-000000000002")
    ambiguous = run("alloc", "status", "beef")
    assert ambiguous.exit_code == 1
    assert "Prefix matched multiple allocations\n\nID" in ambiguous.output
    assert ambiguous.output.count("beef0000") == 2
    shown = run("alloc", "status", "beef0000-0")
    assert shown.exit_code == 0, shown.output
    assert first[:8] in shown.output
