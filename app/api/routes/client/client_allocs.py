"""Nomad's client allocation routes, proxied to the client that runs the allocation
(app/api/http/client_proxy.py): resource usage (/stats), service check results (/checks, also
under /v1/allocation/:id/checks), GC of one terminal allocation (/gc), restart of tasks in place
and signals to them; and a client host's own usage (/v1/client/stats)."""

from __future__ import annotations

import signal

from flask import Blueprint, Response
from pydantic import BaseModel, ConfigDict, Field

from app.api.http.client_proxy import (
    Relayed,
    Unreachable,
    forward,
    relay_failure,
    relay_json,
    target_of_alloc,
    target_of_node,
)
from app.api.http.context import respond
from app.api.http.params import arg, optional_json_body, uuid_value
from app.api.http.validation import validate
from app.api.routes.client.local_client import local_node_id
from app.values.errors import InvalidInput

bp = Blueprint("client_allocs", __name__)
NAME_LIMIT = 128


def _unreachable(err: Unreachable) -> Response:
    return err.response


bp.register_error_handler(Unreachable, _unreachable)


@bp.get("/client/allocation/<alloc_id>/stats")
def alloc_stats(alloc_id: str) -> Response:
    """Nomad's AllocResourceUsage, measured by the client from the tasks' processes."""
    key = uuid_value(alloc_id, "AllocID")
    task = arg("task") or ""
    query = {"task": task} if task else {}
    target = target_of_alloc(key)
    return relay_json(forward(target, "GET", f"/v1/client/allocation/{key}/stats", query), target)


@bp.get("/client/allocation/<alloc_id>/checks")
@bp.get("/allocation/<alloc_id>/checks")
def alloc_checks(alloc_id: str) -> Response:
    """Nomad's AllocChecks: the latest result of each of the allocation's Nomad service checks,
    run by its client (a map of check ID to result). Nomad serves it under both paths."""
    key = uuid_value(alloc_id, "AllocID")
    target = target_of_alloc(key)
    return relay_json(forward(target, "GET", f"/v1/client/allocation/{key}/checks", {}), target)


@bp.get("/client/allocation/<alloc_id>/gc")
def alloc_gc(alloc_id: str) -> Response:
    """Nomad's client GC of one allocation: its client destroys it now if it is terminal (its
    directory and what its tasks left); a live allocation is refused (404) and keeps running."""
    key = uuid_value(alloc_id, "AllocID")
    target = target_of_alloc(key)
    return relay_json(forward(target, "GET", f"/v1/client/allocation/{key}/gc", {}), target)


@bp.get("/client/stats")
def host_stats() -> Response:
    """Nomad's HostStats of the client on node `node_id`; without it, of the local client, as
    Nomad's agent serves its own (local_client.py says which client is local to a server)."""
    raw = arg("node_id")
    node_id = uuid_value(raw, "node_id") if raw else local_node_id()
    target = target_of_node(node_id)
    return relay_json(forward(target, "GET", "/v1/client/stats", {}), target)


class _RestartBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    TaskName: str = Field(default="", max_length=NAME_LIMIT)
    AllTasks: bool = False


@bp.route("/client/allocation/<alloc_id>/restart", methods=["PUT", "POST"])
def restart(alloc_id: str) -> Response:
    """Restart the named task in place (or every running one): a 'Restart Signaled' event and
    one more Restarts in its TaskState, outside the restart policy."""
    key = uuid_value(alloc_id, "AllocID")
    body = validate(_RestartBody, optional_json_body(), "")
    if body.TaskName and body.AllTasks:
        raise InvalidInput.of("TaskName", "cannot be set when restarting all tasks (AllTasks)")
    query = {"task": body.TaskName, "all_tasks": "true" if body.AllTasks else "false"}
    return _acted(forward(target_of_alloc(key), "PUT", f"/v1/client/allocation/{key}/restart", query))


class _SignalBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    Task: str = Field(default="", max_length=NAME_LIMIT)
    Signal: str = Field(max_length=NAME_LIMIT)


def signal_name(value: str) -> str:
    """`SIGUSR1` or `usr1` as the signal's name; InvalidInput naming Signal for anything else."""
    wanted = value.upper() if value.upper().startswith("SIG") else f"SIG{value.upper()}"
    try:
        return signal.Signals[wanted].name
    except KeyError:
        raise InvalidInput.of("Signal", f"{value!r} is not a known signal") from None


@bp.route("/client/allocation/<alloc_id>/signal", methods=["PUT", "POST"])
def signal_task(alloc_id: str) -> Response:
    """Send a signal to the named task (or every running one): a 'Signaling' event."""
    key = uuid_value(alloc_id, "AllocID")
    body = validate(_SignalBody, optional_json_body(), "")
    query = {"task": body.Task, "signal": signal_name(body.Signal)}
    return _acted(forward(target_of_alloc(key), "PUT", f"/v1/client/allocation/{key}/signal", query))


def _acted(answer: Relayed) -> Response:
    if answer.status != 200:
        return relay_failure(answer)
    return respond({"Index": 0}, 0)  # Nomad's GenericResponse: the client's act writes no state
