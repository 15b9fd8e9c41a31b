"""What the client's own HTTP endpoint answers (the servers proxy Nomad's /v1/client/... routes
here, signed; see logs_http.py): the allocation directory (logs are read from it too), resource
usage, and restart and signal of tasks. Each handler takes the request's query and answers (status, body, type), or
raises FsError naming the field at fault. The servers validate the caller's input first; these
checks stand on their own all the same."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client import usage
from client.allocs.alloc_runner import AllocRunner
from client.drivers import StartError, signal_number
from client.endpoint import alloc_fs
from client.endpoint.alloc_fs import FsError
from client.node_meta import MetaError, NodeMeta, check
from client.tasks.task_runner import NotRunning

JSON = "application/json"
Answer = tuple[int, bytes, str]
Query = Mapping[str, str]


@dataclass(frozen=True)
class Local:
    """The client's side of the endpoint: where an allocation's directory is, its runner (None:
    not on this node, or the caller only has directories, as the log tests do), the data dir."""

    alloc_dir_of: Callable[[str], Path | None]
    runner_of: Callable[[str], AllocRunner | None]
    data_dir: Path
    node_meta: NodeMeta | None = None  # dynamic node metadata (None: not served)
    apply_meta: Callable[[Mapping[str, str | None]], None] | None = None  # saves, then registers again
    collect: Callable[[str], bool] | None = None  # destroys one terminal allocation (None: not served)
    collect_all: Callable[[], int] | None = None  # destroys every terminal allocation (None: not served)


def _json(body: Any) -> Answer:
    return 200, json.dumps(body).encode(), JSON


def _number(query: Query, name: str) -> int:
    raw = query.get(name, "0") or "0"
    if not raw.isdigit():
        raise FsError(400, name, f"must be a non-negative integer, got {raw!r}")
    return int(raw)


def _alloc_dir(local: Local, alloc_id: str) -> Path:
    found = local.alloc_dir_of(alloc_id)
    if found is None:
        raise FsError(404, "AllocID", f"allocation {alloc_id} is not on this node")
    return found


def _runner(local: Local, alloc_id: str) -> AllocRunner:
    found = local.runner_of(alloc_id)
    if found is None:
        raise FsError(404, "AllocID", f"allocation {alloc_id} is not on this node")
    return found


def fs_ls(local: Local, alloc_id: str, query: Query) -> Answer:
    return _json(alloc_fs.list_dir(_alloc_dir(local, alloc_id), query.get("path", "/")))


def fs_stat(local: Local, alloc_id: str, query: Query) -> Answer:
    return _json(alloc_fs.stat(_alloc_dir(local, alloc_id), query.get("path", "")))


def fs_readat(local: Local, alloc_id: str, query: Query) -> Answer:
    alloc_dir = _alloc_dir(local, alloc_id)
    runner = local.runner_of(alloc_id)
    tasks = list(runner.tasks) if runner is not None else [p.name for p in alloc_dir.iterdir() if p.is_dir()]
    data = alloc_fs.read_at(alloc_dir, tasks, query.get("path", ""), _number(query, "offset"), _number(query, "limit"))
    return 200, data, "application/octet-stream"


def alloc_stats(local: Local, alloc_id: str, query: Query) -> Answer:
    runner = _runner(local, alloc_id)
    pids = runner.task_pids()
    task = query.get("task", "")
    if task and task not in pids:
        raise FsError(404, "task", f"allocation {alloc_id} has no task {task!r}")
    return _json(usage.alloc_usage({task: pids[task]} if task else pids))


def alloc_checks(local: Local, alloc_id: str, query: Query) -> Answer:
    """The latest result of each Nomad service check of the allocation, by check ID."""
    return _json(_runner(local, alloc_id).check_results())


def alloc_gc(local: Local, alloc_id: str, query: Query) -> Answer:
    """Nomad's client GC of one allocation: destroyed now if it is terminal; a live one (or one
    not on this node) is an unknown allocation to the garbage collector, as in Nomad."""
    if local.collect is None or not local.collect(alloc_id):
        raise FsError(404, "AllocID", f"Unknown allocation {alloc_id!r}: not a terminal allocation on this node")
    return _json({})


def node_gc(local: Local, _: str, query: Query) -> Answer:
    """Nomad's client GC of the whole node: every terminal allocation destroyed now; answers
    how many were (those already on their way included) once they are gone or a wait is up."""
    if local.collect_all is None:
        raise FsError(404, "", "this client does not collect on request")
    return _json({"Collected": local.collect_all()})


def host_stats(local: Local, alloc_id: str, query: Query) -> Answer:
    return _json(usage.host_stats(local.data_dir))


def restart(local: Local, alloc_id: str, query: Query) -> Answer:
    runner = _runner(local, alloc_id)
    task, all_tasks = query.get("task", ""), query.get("all_tasks") == "true"
    if task and all_tasks:
        raise FsError(400, "TaskName", "task name cannot be set when restarting all tasks")
    if task and task not in runner.tasks:
        raise FsError(404, "TaskName", f"allocation {alloc_id} has no task {task!r}")
    try:
        runner.restart(task, all_tasks)
    except NotRunning as err:
        raise FsError(400, "TaskName" if task else "AllocID", str(err)) from None
    return _json({})


def signal(local: Local, alloc_id: str, query: Query) -> Answer:
    runner = _runner(local, alloc_id)
    task, name = query.get("task", ""), query.get("signal", "")
    if not name:
        raise FsError(400, "Signal", "is required")
    try:
        number = signal_number(name)
    except StartError:
        raise FsError(400, "Signal", f"{name!r} is not a signal this node knows") from None
    if task and task not in runner.tasks:
        raise FsError(404, "Task", f"allocation {alloc_id} has no task {task!r}")
    try:
        runner.signal(task, number.name, number)
    except NotRunning as err:
        raise FsError(400, "Task" if task else "AllocID", str(err)) from None
    return _json({})


def meta_read(local: Local, _: str, query: Query) -> Answer:
    """Nomad's NodeMetaResponse: the merged Meta, the dynamic entries and the static ones."""
    if local.node_meta is None:
        raise FsError(404, "", "this client keeps no node metadata")
    return _json(local.node_meta.response())


def meta_apply(local: Local, _: str, query: Query) -> Answer:
    """Apply the changes in ?meta= (a JSON object of key to string or null), save them and
    register the node again with the merged Meta; answer as meta_read."""
    if local.node_meta is None or local.apply_meta is None:
        raise FsError(404, "", "this client keeps no node metadata")
    try:
        raw = json.loads(query.get("meta", ""))
        if not isinstance(raw, dict):
            raise MetaError("must be a JSON object of key to string or null")
        changes = check(raw)
    except (ValueError, MetaError) as err:
        raise FsError(400, "Meta", str(err)) from None
    local.apply_meta(changes)
    return _json(local.node_meta.response())


ALLOC = r"([0-9a-f-]{36})"
Handler = Callable[[Local, str, Query], Answer]
ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    ("GET", re.compile(rf"^/v1/client/fs/ls/{ALLOC}$"), fs_ls),
    ("GET", re.compile(rf"^/v1/client/fs/stat/{ALLOC}$"), fs_stat),
    ("GET", re.compile(rf"^/v1/client/fs/readat/{ALLOC}$"), fs_readat),
    ("GET", re.compile(rf"^/v1/client/allocation/{ALLOC}/stats$"), alloc_stats),
    ("GET", re.compile(rf"^/v1/client/allocation/{ALLOC}/checks$"), alloc_checks),
    ("GET", re.compile(rf"^/v1/client/allocation/{ALLOC}/gc$"), alloc_gc),
    ("GET", re.compile(r"^/v1/client/stats()$"), host_stats),
    ("PUT", re.compile(r"^/v1/client/gc()$"), node_gc),
    ("PUT", re.compile(rf"^/v1/client/allocation/{ALLOC}/restart$"), restart),
    ("PUT", re.compile(rf"^/v1/client/allocation/{ALLOC}/signal$"), signal),
    ("GET", re.compile(r"^/v1/client/metadata()$"), meta_read),
    ("PUT", re.compile(r"^/v1/client/metadata()$"), meta_apply),
]


def route(method: str, path: str) -> tuple[Handler, str] | None:
    for wanted, pattern, handler in ROUTES:
        match = pattern.match(path)
        if match is not None and wanted == method:
            return handler, match.group(1)
    return None
