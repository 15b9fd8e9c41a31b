"""A task's state in Nomad's TaskState form: RFC 3339 times, the zero time for "never", and
states saved by older clients (integer nanoseconds) brought to that form."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from client.tasks import task_state
from tests.support.nomad_json import problems

pytestmark = pytest.mark.unit
T0_NS = 1_700_000_000_123_456_789


def test_rfc3339_keeps_nanoseconds_in_utc() -> None:
    assert task_state.rfc3339(T0_NS) == "2023-11-14T22:13:20.123456789Z"
    assert task_state.rfc3339(1_700_000_000 * 1_000_000_000) == "2023-11-14T22:13:20.000000000Z"
    parsed = datetime.fromisoformat(task_state.rfc3339(T0_NS))
    assert parsed.tzinfo is not None and parsed.astimezone(UTC).microsecond == 123456


def test_seconds_reads_back_and_zero_is_never() -> None:
    assert task_state.seconds(task_state.rfc3339(T0_NS)) == pytest.approx(1_700_000_000.123456)
    assert task_state.seconds(task_state.ZERO_TIME) == 0 and task_state.seconds(None) == 0
    assert not task_state.started(task_state.new_state())


def test_new_state_decodes_into_nomads_task_state() -> None:
    state = task_state.new_state()
    assert problems(state, "TaskState", "TaskState") == []
    assert state["LastRestart"] == state["StartedAt"] == state["FinishedAt"] == "0001-01-01T00:00:00Z"


def test_states_saved_by_older_clients_are_upgraded() -> None:
    old = {"State": "dead", "Failed": False, "Restarts": 1, "StartedAt": T0_NS, "FinishedAt": None, "Events": []}
    state = task_state.upgraded(old)
    assert state["StartedAt"] == task_state.rfc3339(T0_NS)
    assert state["FinishedAt"] == state["LastRestart"] == task_state.ZERO_TIME
    assert problems(state, "TaskState", "TaskState") == []
    assert task_state.upgraded(state) == state
