"""/v1/agent/schedulers and /v1/agent/schedulers/config: Nomad's scheduler workers.

A Nomad server runs its scheduling workers in its own process; corral's run in `corral worker`
processes (the dev agent starts one), which publish each scheduling loop to the database
(app/store/scheduler_workers.py). Every API server answers with the cluster's loops heard from
recently, under its own name as ServerID. The worker count and types are each process's start
options, so the configuration is read here and changed by starting or stopping workers."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.http.context import read, respond
from app.api.routes.cluster.status import REGION, server_address
from app.models import SchedulerWorker
from app.store import scheduler_workers as store
from app.values.errors import DoneElsewhere
from app.wire.api.api_schedulers import SchedulerWorkerConfigJson, SchedulerWorkerJson, SchedulerWorkersJson

bp = Blueprint("schedulers", __name__)
CONFIG_INSTEAD = (
    "corral's scheduling workers are `corral worker` processes: start more (or stop some) to change "
    "their number, with `--num-schedulers` (CORRAL_NUM_SCHEDULERS) loops each and `--schedulers` naming "
    "the evaluation types they serve"
)


def _server_id() -> str:
    return f"{server_address().rpartition(':')[0]}.{REGION}"


def _worker(row: SchedulerWorker) -> SchedulerWorkerJson:
    return {
        "ID": row.id,
        "EnabledSchedulers": list(row.enabled_schedulers),
        "Started": row.started_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "Status": row.status,
        "WorkloadStatus": row.workload_status,
    }


def _live(session: Session) -> list[SchedulerWorker]:
    return list(store.live(session, datetime.now(UTC)))


@bp.get("/agent/schedulers")
def schedulers() -> Response:
    rows, index = read(["_global"], _live)
    body: SchedulerWorkersJson = {"ServerID": _server_id(), "Schedulers": [_worker(r) for r in rows]}
    return respond(body, index)


@bp.get("/agent/schedulers/config")
def get_config() -> Response:
    """The cluster's live loops counted, and the types any of them serves (in Nomad's order)."""
    rows, index = read(["_global"], _live)
    enabled = {name for row in rows for name in row.enabled_schedulers}
    order = ["service", "batch", "system", "sysbatch", "_core"]
    body: SchedulerWorkerConfigJson = {
        "ServerID": _server_id(),
        "NumSchedulers": len(rows),
        "EnabledSchedulers": [name for name in order if name in enabled] + sorted(enabled - set(order)),
    }
    return respond(body, index)


@bp.route("/agent/schedulers/config", methods=["PUT", "POST"])
def set_config() -> Response:
    raise DoneElsewhere.of("NumSchedulers", CONFIG_INSTEAD)
