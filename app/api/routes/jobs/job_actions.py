"""Nomad 1.7's job actions: GET /v1/job/:id/actions lists the `action` blocks of the job's tasks
(Nomad's JobAction: Name, Command, Args, TaskName, TaskGroupName); GET /v1/job/:id/action
?action=&allocID=&task=&tty= runs one in a running allocation of the job, as `alloc exec` runs a
command (a WebSocket carrying Nomad's exec frames, relayed to the client by
app/api/routes/client/client_exec.py): the command is the action's, never the caller's."""

from __future__ import annotations

from typing import TypedDict

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.http.context import read, respond, state
from app.api.http.params import arg, namespace, uuid_value
from app.api.routes.client.client_exec import ExecRequest, parse_tty, serve_exec
from app.models import JobVersion
from app.store import allocs as alloc_store
from app.store.job.job_reads import get_job
from app.values.errors import InvalidInput, NotFound
from app.wire.job import JobSpec, TaskSpec

bp = Blueprint("job_actions", __name__)


class JobActionJson(TypedDict):
    """Nomad's JobAction."""

    Name: str
    Command: str
    Args: list[str]
    TaskName: str
    TaskGroupName: str


def actions_of(spec: JobSpec) -> list[JobActionJson]:
    """Every action of every task, in the job's order."""
    return [
        {
            "Name": str(action.get("Name") or ""),
            "Command": str(action.get("Command") or ""),
            "Args": list(action.get("Args") or []),
            "TaskName": str(task.get("Name") or ""),
            "TaskGroupName": str(group.get("Name") or ""),
        }
        for group in spec.get("TaskGroups") or []
        for task in group.get("Tasks") or []
        for action in task.get("Actions") or []
    ]


def _namespace() -> str:
    chosen = namespace(allow_wildcard=False)
    assert chosen is not None  # allow_wildcard=False: always one namespace
    return chosen


@bp.get("/job/<path:job_id>/actions")
def list_actions(job_id: str) -> Response:
    ns = _namespace()
    found, index = read(["jobs"], lambda session: actions_of(get_job(session, ns, job_id).spec))
    return respond(found, index)


def _task_of(spec: JobSpec, group: str, task: str, action: str) -> tuple[TaskSpec, list[str]]:
    """The task that runs ACTION in GROUP (TASK, or the only one that has it) and its command."""
    tasks = [t for g in spec.get("TaskGroups") or [] if g.get("Name") == group for t in g.get("Tasks") or []]
    having = [
        (t, [str(a.get("Command") or ""), *(a.get("Args") or [])])
        for t in tasks
        for a in t.get("Actions") or []
        if a.get("Name") == action and (not task or t.get("Name") == task)
    ]
    if not having:
        where = f"task {task!r}" if task else f"group {group!r}"
        raise NotFound.of("action", f"action {action!r} not found in {where} of the allocation's job version")
    if len(having) > 1:
        raise InvalidInput.of("task", f"several tasks have action {action!r}: name one")
    return having[0]


def action_request(job_id: str) -> ExecRequest:
    action, task, tty = arg("action") or "", arg("task") or "", parse_tty(arg("tty"))
    if not action:
        raise InvalidInput.of("action", "is required: the name of one of the job's actions")
    raw_alloc = arg("allocID")
    if not raw_alloc:
        raise InvalidInput.of("allocID", "is required: the allocation to run the action in")
    alloc_id, ns = uuid_value(raw_alloc, "allocID"), _namespace()

    def load(session: Session) -> tuple[TaskSpec, list[str]]:
        alloc = alloc_store.get_allocation(session, alloc_id)
        if alloc.namespace != ns or alloc.job_id != job_id:
            raise NotFound.of("allocID", f"allocation {alloc_id} is not one of job {job_id!r} in namespace {ns!r}")
        version = session.get(JobVersion, (alloc.namespace, alloc.job_id, alloc.job_version))
        return _task_of(version.spec if version is not None else {}, alloc.task_group, task, action)

    with state().reads() as session, session.begin():
        found, command = load(session)
    if not command[0]:
        raise InvalidInput.of("action", f"action {action!r} has no command")
    return ExecRequest(alloc_id, ns, str(found.get("Name")), str(found.get("Driver") or ""), command, tty)


# Two rules, one view, as for alloc exec: a WebSocket request and a plain GET (refused with a 400
# naming Upgrade, after the input checks).
@bp.get("/job/<path:job_id>/action", websocket=True)
@bp.get("/job/<path:job_id>/action")
def run_action(job_id: str) -> Response:
    return serve_exec(action_request(job_id))
