"""/v1/search (prefix) and /v1/search/fuzzy, in Nomad's request and response shapes.

Prefix: {Prefix, Context} -> {Matches: {context: [ids]}, Truncations: {context: bool}}, at most 20
IDs per context in ID order. Fuzzy: {Text, Context} -> {Matches: {context: [{ID, Scope}]}, ...}:
case-insensitive substring matches on names (jobs expand into groups, services, tasks, images,
commands and classes, scoped by namespace, job, group, task), best first (earliest match, then
shortest, then by name); evaluations and deployments match by ID prefix. Limits are Nomad's
defaults: 20 objects read per context, 100 results, a term of 2 characters or more."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response
from sqlalchemy import Select, Text, cast, func, select
from sqlalchemy.orm import Session

from app.api.http.context import read, respond
from app.api.http.params import json_body, namespace
from app.models import Allocation, Deployment, Evaluation, Job, Namespace, Node, NodePool
from app.values.errors import InvalidInput
from app.wire.api.api_search import FuzzyMatchJson, FuzzySearchJson, PrefixSearchJson
from app.wire.job import JobSpec
from app.wire.json import JsonObject

bp = Blueprint("search", __name__)
TRUNCATE_LIMIT = 20
FUZZY_LIMIT_QUERY = 20
FUZZY_LIMIT_RESULTS = 100
FUZZY_MIN_TERM = 2
# Nomad's contexts corral has objects for; the others exist in Nomad and match nothing here.
CONTEXTS = ("allocs", "deployment", "evals", "jobs", "namespaces", "node_pools", "nodes")
EMPTY_CONTEXTS = ("host_volumes", "plugins", "quotas", "recommendations", "scaling_policy", "vars", "volumes")
# Nomad's `all` covers its open-source contexts (quotas and recommendations are Enterprise).
ALL_CONTEXTS = (*CONTEXTS, "host_volumes", "plugins", "scaling_policy", "vars", "volumes")
JOB_SUB_CONTEXTS = ("groups", "services", "tasks", "images", "commands", "classes")
TABLES = ["jobs", "evaluations", "allocations", "nodes", "deployments"]
# What a job's task runs, by driver, searched as Nomad does (context, config key).
DRIVER_PARAMS = {
    "docker": ("images", "image"),
    "exec": ("commands", "command"),
    "raw_exec": ("commands", "command"),
    "java": ("classes", "class"),
}


@dataclass(frozen=True)
class SearchRequest:
    term: str
    context: str
    namespace: str | None  # None: every namespace


def _request(term_field: str) -> SearchRequest:
    body = json_body()
    term = body.get(term_field, "")
    if not isinstance(term, str):
        raise InvalidInput.of(term_field, "must be a string")
    context = body.get("Context", "")
    if not isinstance(context, str) or context not in ("all", *CONTEXTS, *EMPTY_CONTEXTS):
        raise InvalidInput.of(
            "Context", f"must be one of all, {', '.join(sorted((*CONTEXTS, *EMPTY_CONTEXTS)))}; got {context!r}"
        )
    ns = body.get("Namespace")
    if ns is not None and not isinstance(ns, str):
        raise InvalidInput.of("Namespace", "must be a string")
    chosen = (None if ns == "*" else ns) if ns else namespace(allow_wildcard=True)
    return SearchRequest(term, context, chosen)


def _contexts(context: str) -> tuple[str, ...]:
    return ALL_CONTEXTS if context == "all" else (context,)


def _in_namespace(stmt: Select[Any], column: Any, ns: str | None) -> Select[Any]:
    return stmt if ns is None else stmt.where(column == ns)


def _prefix_ids(session: Session, context: str, prefix: str, ns: str | None, limit: int) -> list[str]:
    """Up to `limit` IDs (names for namespaces and node pools) of `context` starting with `prefix`, in ID order."""
    stmt: Select[Any]
    if context == "jobs":
        stmt = _in_namespace(select(Job.id).where(Job.purged_at.is_(None)), Job.namespace, ns)
        key: Any = Job.id
    elif context == "namespaces":
        stmt, key = select(Namespace.name), Namespace.name
    elif context == "node_pools":
        stmt, key = select(NodePool.name), NodePool.name
    else:
        model: Any = {"evals": Evaluation, "allocs": Allocation, "nodes": Node, "deployment": Deployment}[context]
        key = cast(model.id, Text)
        stmt = select(key)
        if context != "nodes":
            stmt = _in_namespace(stmt, model.namespace, ns)
    stmt = stmt.where(key.startswith(prefix, autoescape=True)).order_by(key).limit(limit)
    return [str(v) for v in session.scalars(stmt)]


@bp.route("/search", methods=["PUT", "POST"])
def prefix_search() -> Response:
    req = _request("Prefix")

    def fetch(session: Session) -> PrefixSearchJson:
        matches: dict[str, list[str]] = {}
        truncations: dict[str, bool] = {}
        for context in _contexts(req.context):
            found = [] if context in EMPTY_CONTEXTS else _prefix_ids(session, context, req.term, req.namespace, 21)
            matches[context], truncations[context] = found[:TRUNCATE_LIMIT], len(found) > TRUNCATE_LIMIT
        return {"Matches": matches, "Truncations": truncations}

    body, index = read(TABLES, fetch)
    return respond({**body, "Index": index, "KnownLeader": True, "LastContact": 0}, index)


# --- fuzzy -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FuzzyMatch:
    id: str
    score: int
    scope: tuple[str, ...] = ()


@dataclass
class FuzzyResult:
    matches: dict[str, list[FuzzyMatch]] = field(default_factory=dict)
    truncations: dict[str, bool] = field(default_factory=dict)

    def add(self, context: str, match: FuzzyMatch) -> None:
        found = self.matches.setdefault(context, [])
        if len(found) >= FUZZY_LIMIT_RESULTS:
            self.truncations[context] = True
        else:
            found.append(match)


def fuzzy_score(name: str, text: str) -> int | None:
    """Where lower-case `text` starts in `name`, ignoring case; None when it does not."""
    at = name.lower().find(text)
    return None if at < 0 else at


def job_matches(spec: JobSpec, namespace_: str, job_id: str, text: str) -> Iterable[tuple[str, FuzzyMatch]]:
    """Nomad's fuzzyMatchesJob: the job's name, its groups, services, tasks and the image,
    command or class its driver runs, each scoped by the path of IDs above it."""

    def hit(context: str, name: object, *scope: str) -> Iterable[tuple[str, FuzzyMatch]]:
        if isinstance(name, str) and (score := fuzzy_score(name, text)) is not None:
            yield context, FuzzyMatch(name, score, (namespace_, *scope))

    yield from hit("jobs", spec.get("Name") or job_id, job_id)
    for group in _dicts(spec.get("TaskGroups")):
        group_name = str(group.get("Name", ""))
        yield from hit("groups", group_name, job_id)
        for service in _dicts(group.get("Services")):
            yield from hit("services", service.get("Name"), job_id, group_name)
        for task in _dicts(group.get("Tasks")):
            task_name = str(task.get("Name", ""))
            yield from hit("tasks", task_name, job_id, group_name)
            for service in _dicts(task.get("Services")):
                yield from hit("services", service.get("Name"), job_id, group_name, task_name)
            config, driver = task.get("Config"), task.get("Driver")
            if isinstance(driver, str) and driver in DRIVER_PARAMS and isinstance(config, dict):
                context, key = DRIVER_PARAMS[driver]
                yield from hit(context, config.get(key), job_id, group_name, task_name)


def _dicts(value: object) -> list[JsonObject]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _match_json(match: FuzzyMatch) -> FuzzyMatchJson:
    return {"ID": match.id, "Scope": list(match.scope)} if match.scope else {"ID": match.id}


def sort_matches(matches: Sequence[FuzzyMatch]) -> list[FuzzyMatch]:
    """Best first, as Nomad: the earliest match, then the shortest name, then by name."""
    return sorted(matches, key=lambda m: (m.score, len(m.id), m.id))


def _fuzzy_rows(session: Session, context: str, text: str, ns: str | None) -> tuple[list[Any], bool]:
    """Up to FUZZY_LIMIT_QUERY objects of `context` that may match (rows whose text contains
    the term), and whether there were more."""
    pattern = f"%{_escape_like(text)}%"
    stmt: Any
    if context == "jobs":
        stmt = select(Job.namespace, Job.id, Job.spec).where(
            Job.purged_at.is_(None), func.lower(cast(Job.spec, Text)).like(pattern, escape="\\")
        )
        stmt = _in_namespace(stmt, Job.namespace, ns).order_by(Job.namespace, Job.id)
    elif context == "nodes":
        stmt = select(Node.name, cast(Node.id, Text)).where(func.lower(Node.name).like(pattern, escape="\\"))
        stmt = stmt.order_by(Node.id)
    elif context == "allocs":
        stmt = select(Allocation.name, Allocation.namespace, cast(Allocation.id, Text))
        stmt = stmt.where(func.lower(Allocation.name).like(pattern, escape="\\"))
        stmt = _in_namespace(stmt, Allocation.namespace, ns).order_by(Allocation.id)
    elif context == "namespaces":
        stmt = select(Namespace.name).where(func.lower(Namespace.name).like(pattern, escape="\\"))
        stmt = stmt.order_by(Namespace.name)
    else:  # node_pools
        stmt = select(NodePool.name).where(func.lower(NodePool.name).like(pattern, escape="\\"))
        stmt = stmt.order_by(NodePool.name)
    rows = list(session.execute(stmt.limit(FUZZY_LIMIT_QUERY + 1)))
    return rows[:FUZZY_LIMIT_QUERY], len(rows) > FUZZY_LIMIT_QUERY


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def fuzzy(session: Session, req: SearchRequest) -> FuzzyResult:
    text = req.term.lower()
    result = FuzzyResult()
    for context in _contexts(req.context):
        if context in EMPTY_CONTEXTS:
            continue
        if context in ("evals", "deployment"):
            found = _prefix_ids(session, context, req.term, req.namespace, TRUNCATE_LIMIT + 1)
            result.matches[context] = [FuzzyMatch(i, 0) for i in found[:TRUNCATE_LIMIT]]
            result.truncations[context] = len(found) > TRUNCATE_LIMIT
            continue
        rows, limited = _fuzzy_rows(session, context, text, req.namespace)
        result.truncations[context] = limited
        for row in rows:
            for sub, match in _row_matches(context, row, text):
                result.add(sub, match)
                if limited:
                    result.truncations[sub] = True
    return result


def _row_matches(context: str, row: Any, text: str) -> Iterable[tuple[str, FuzzyMatch]]:
    if context == "jobs":
        yield from job_matches(row[2], row[0], row[1], text)
        return
    name = str(row[0])
    score = fuzzy_score(name, text)
    if score is None:
        return
    if context == "nodes":
        scope: tuple[str, ...] = (row[1],)
    elif context == "allocs":
        scope = (row[1], row[2])
    elif context == "node_pools":
        scope = (name,)
    else:
        scope = ()
    yield context, FuzzyMatch(name, score, scope)


@bp.route("/search/fuzzy", methods=["PUT", "POST"])
def fuzzy_search() -> Response:
    req = _request("Text")
    if len(req.term) < FUZZY_MIN_TERM:
        raise InvalidInput.of(
            "Text", f"fuzzy search query must be at least {FUZZY_MIN_TERM} characters, got {len(req.term)}"
        )

    def fetch(session: Session) -> FuzzySearchJson:
        result = fuzzy(session, req)
        matches = {context: [_match_json(m) for m in sort_matches(found)] for context, found in result.matches.items()}
        return {"Matches": matches, "Truncations": result.truncations}

    body, index = read(TABLES, fetch)
    return respond({**body, "Index": index, "KnownLeader": True, "LastContact": 0}, index)
