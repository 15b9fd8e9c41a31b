"""`corral operator client-state DATA_DIR`: a node agent's allocation records printed in the
layout of Nomad's `operator client-state`, read from the files the client writes."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from app.cli.operator import ALLOCS_DIR, ALLOCS_POINTER, RECORD
from client.agent import Client
from client.allocs.alloc_runner import RECORD as CLIENT_RECORD
from client.allocs.alloc_runner import AllocRunner
from client.config import ALLOCS_POINTER as CLIENT_POINTER
from client.config import ClientConfig
from client.tasks.task_runner import TaskRunner

pytestmark = pytest.mark.unit


def test_the_command_reads_where_and_what_the_client_writes() -> None:
    assert RECORD == CLIENT_RECORD
    assert ALLOCS_POINTER == CLIENT_POINTER
    assert "config.record_allocs_root()" in inspect.getsource(Client.__init__)
    assert "config.allocs_root()" in inspect.getsource(Client.__init__)
    assert f'self.data_dir / "{ALLOCS_DIR}"' in inspect.getsource(ClientConfig.allocs_root)
    persisted = inspect.getsource(AllocRunner.persist)
    for key in ("alloc", "client_status", "health", "identities", "tasks"):
        assert f'"{key}":' in persisted
    saved = inspect.getsource(TaskRunner.saved)
    for key in ("state", "handle", "artifacts_done"):
        assert f'"{key}":' in saved


def test_client_state_prints_each_allocation_and_its_tasks(tmp_path: Path) -> None:
    alloc_id = "8a1f0c7e-0000-4000-8000-000000000001"
    record = {
        "alloc": {"ID": alloc_id, "TaskGroup": "g"},
        "node": {},
        "client_status": "running",
        "tasks": {"t": {"state": {"State": "running"}, "handle": {"pid": 42}, "artifacts_done": True}},
        "health": {"healthy": True},
        "identities": {"t/default": "jwt"},
    }
    (tmp_path / "allocs" / alloc_id).mkdir(parents=True)
    (tmp_path / "allocs" / alloc_id / "alloc.json").write_text(json.dumps(record))
    (tmp_path / "allocs" / "broken").mkdir()
    (tmp_path / "allocs" / "broken" / "alloc.json").write_text("{not json")

    result = CliRunner().invoke(main, ["operator", "client-state", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    printed = json.loads(next(line for line in lines if line.startswith("{")))
    assert printed == {
        "Allocations": {
            alloc_id: {
                "Alloc": record["alloc"],
                "ClientStatus": "running",
                "DeployStatus": {"healthy": True},
                "Identities": {"t/default": "jwt"},
                "Tasks": {
                    "t": {
                        "LocalState": {"ArtifactsDone": True},
                        "RemoteState": {"State": "running"},
                        "DriverState": {"pid": 42},
                    }
                },
            }
        }
    }
    assert any(line.startswith("skipping ") and "broken" in line for line in lines)


def test_client_state_needs_a_client_data_dir(tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["operator", "client-state"])
    assert missing.exit_code == 1 and "takes one argument" in missing.output
    empty = CliRunner().invoke(main, ["operator", "client-state", str(tmp_path)])
    assert empty.exit_code == 1 and "failed to open client state" in empty.output


def test_client_state_follows_a_custom_alloc_dir_from_the_data_dir(tmp_path: Path) -> None:
    data_dir, elsewhere = tmp_path / "data", tmp_path / "scratch" / "allocs"
    data_dir.mkdir()
    custom = ClientConfig(data_dir=data_dir, alloc_dir=str(elsewhere))
    custom.record_allocs_root()
    alloc_id = "8a1f0c7e-0000-4000-8000-000000000002"
    (elsewhere / alloc_id).mkdir(parents=True)
    (elsewhere / alloc_id / "alloc.json").write_text(json.dumps({"alloc": {"ID": alloc_id}, "tasks": {}}))
    result = CliRunner().invoke(main, ["operator", "client-state", str(data_dir)])
    assert result.exit_code == 0, result.output
    assert list(json.loads(result.output)["Allocations"]) == [alloc_id]
    ClientConfig(data_dir=data_dir).record_allocs_root()  # back to the default: the pointer goes
    assert not (data_dir / ALLOCS_POINTER).exists()
    assert CliRunner().invoke(main, ["operator", "client-state", str(data_dir)]).exit_code == 1
