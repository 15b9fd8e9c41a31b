"""Revision 0023 rewrites task states and drains stored before it in Nomad's JSON form: integer
nanoseconds (or null) become RFC 3339 times, a nested DrainSpec becomes Nomad's flat
DrainStrategy, and the result decodes into Nomad's API structs. The revision's statements run
here on rows written in the old form (the revision itself runs in test_schema.py)."""

from __future__ import annotations

import importlib
import json

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support.api import minimal_job, register
from tests.support.nomad_json import problems
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
T0_NS = 1_700_000_000_123_456_000
T0 = "2023-11-14T22:13:20.123456Z"
ZERO = "0001-01-01T00:00:00Z"
revision = importlib.import_module("migrations.versions.0023_nomad_json_times")


def migrate(pg: Conn) -> None:
    for statement in (revision.TIME_FUNCTION, revision.TASK_STATES, revision.DRAINS, revision.LAST_DRAINS):
        pg.execute(statement)


def test_old_times_and_nested_drain_spec_are_rewritten(client: FlaskClient, pg: Conn) -> None:
    node_id = insert_node(pg)
    old_drain = {"DrainSpec": {"Deadline": 60, "IgnoreSystemJobs": True}, "ForceDeadline": 0, "StartedAt": T0_NS}
    old_last = {"Status": "draining", "StartedAt": T0_NS, "UpdatedAt": T0_NS, "Meta": {}}
    pg.execute("UPDATE nodes SET drain_strategy = %s, last_drain = %s", (json.dumps(old_drain), json.dumps(old_last)))
    alloc_id = insert_allocation(pg, node_id, register(client, minimal_job("web"))["EvalID"])
    old_states = {"t": {"State": "dead", "Failed": False, "Restarts": 0, "StartedAt": T0_NS, "FinishedAt": None}}
    pg.execute("UPDATE allocations SET task_states = %s WHERE id = %s", (json.dumps(old_states), alloc_id))
    assert problems(old_states, "map[string]*TaskState", "TaskStates") != []  # the old form does not decode
    migrate(pg)
    row = pg.execute("SELECT drain_strategy, last_drain FROM nodes").fetchone()
    assert row is not None
    drain, last = row
    assert isinstance(last, dict)
    assert drain == {"Deadline": 60, "IgnoreSystemJobs": True, "ForceDeadline": ZERO, "StartedAt": T0}
    assert problems(drain, "DrainStrategy", "DrainStrategy") == []
    assert last["StartedAt"] == last["UpdatedAt"] == T0 and last["AccessorID"] == ""
    assert problems(last, "DrainMetadata", "LastDrain") == []
    row = pg.execute("SELECT task_states FROM allocations").fetchone()
    assert row is not None
    (states,) = row
    assert isinstance(states, dict)
    assert states["t"] == {**old_states["t"], "StartedAt": T0, "FinishedAt": ZERO, "LastRestart": ZERO}
    assert problems(states, "map[string]*TaskState", "TaskStates") == []
    migrate(pg)  # a second run changes nothing
    assert pg.execute("SELECT task_states FROM allocations").fetchone() == (states,)
    assert pg.execute("SELECT drain_strategy FROM nodes").fetchone() == (drain,)
