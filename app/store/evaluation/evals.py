"""Evaluation rows: creation alongside state changes, and reads for the API."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import Select, Text, cast, func, or_, select, tuple_
from sqlalchemy.orm import Session

from app.models import Allocation, Evaluation, Job, Node
from app.values.errors import NotFound
from app.values.ids import new_id

T = TypeVar("T")
CORE = "-"  # the namespace lists show for core (GC) evaluations, which have none


@dataclass(frozen=True)
class EvalRequest:
    """What a state change asks the schedulers to look at."""

    namespace: str
    job_id: str
    job_type: str
    priority: int
    triggered_by: str
    job_modify_index: int
    node_id: uuid.UUID | None = None
    node_modify_index: int | None = None
    status: str = "pending"
    deployment_id: uuid.UUID | None = None


def insert_eval(session: Session, request: EvalRequest, index: int) -> Evaluation:
    """Add a pending evaluation in the caller's transaction (invariant 5: together with the
    state change that implies it)."""
    evaluation = Evaluation(
        id=new_id(),
        namespace=request.namespace,
        job_id=request.job_id,
        priority=request.priority,
        type=request.job_type,
        triggered_by=request.triggered_by,
        job_modify_index=request.job_modify_index,
        node_id=request.node_id,
        node_modify_index=request.node_modify_index,
        deployment_id=request.deployment_id,
        status=request.status,
        create_index=index,
        modify_index=index,
    )
    session.add(evaluation)
    return evaluation


def insert_node_eval(
    session: Session, namespace: str, job_id: str, trigger: str, node: Node, index: int
) -> Evaluation | None:
    """An evaluation a node event asks of one job (alloc-failure, reconnect,
    max-disconnect-timeout), or None when the job is gone. Key-share: the job GC locks jobs
    before its re-check, so a job it is deleting is seen gone here instead of failing the
    caller's transaction on the foreign key."""
    job = session.get(Job, (namespace, job_id), with_for_update={"key_share": True})
    if job is None or job.purged_at is not None:
        return None
    request = EvalRequest(
        namespace=namespace,
        job_id=job_id,
        job_type=job.type,
        priority=job.priority,
        triggered_by=trigger,
        job_modify_index=job.job_modify_index,
        node_id=node.id,
        node_modify_index=node.modify_index,
    )
    return insert_eval(session, request, index)


@dataclass(frozen=True)
class EvalFilter:
    namespace: str | None = None
    job_id: str | None = None
    status: str | None = None
    prefix: str | None = None
    # The namespaces the caller may list (app.api.access.visibility.readable); "-" admits core
    # evaluations. None: every namespace (ACLs off, a management token).
    readable: frozenset[str] | None = None


@dataclass(frozen=True)
class Page:
    per_page: int | None = None
    next_token: tuple[int, uuid.UUID] | None = None
    reverse: bool = False


def list_evals(session: Session, where: EvalFilter, page: Page) -> tuple[Sequence[Evaluation], str | None]:
    """Evaluations by create index (keyset pagination), and the token for the next page."""
    return paginate(session, _narrowed(select(Evaluation), where), page)


def count_evals(session: Session, where: EvalFilter) -> int:
    """How many evaluations `where` admits, counted in SQL (Nomad's Eval.Count without a filter)."""
    stmt = _narrowed(select(func.count()).select_from(Evaluation), where)
    return int(session.scalar(stmt) or 0)


def _narrowed(stmt: Select[T], where: EvalFilter) -> Select[T]:
    if where.namespace is not None:
        # Core (GC) evaluations belong to no namespace; they show in every namespace's list.
        stmt = stmt.where(or_(Evaluation.namespace == where.namespace, Evaluation.namespace.is_(None)))
    if where.job_id is not None:
        stmt = stmt.where(Evaluation.job_id == where.job_id)
    if where.status is not None:
        stmt = stmt.where(Evaluation.status == where.status)
    if where.prefix:
        stmt = stmt.where(cast(Evaluation.id, Text).startswith(where.prefix.lower()))
    if where.readable is not None:
        # Before the LIMIT: the next page's token must name an evaluation the caller may read.
        visible = Evaluation.namespace.in_(where.readable)
        stmt = stmt.where(or_(visible, Evaluation.namespace.is_(None)) if CORE in where.readable else visible)
    return stmt


def paginate(session: Session, stmt: Select[Evaluation], page: Page) -> tuple[Sequence[Evaluation], str | None]:
    """Keyset pagination on (create_index, id); the token names the first row of the next page."""
    key = (Evaluation.create_index, Evaluation.id)
    if page.next_token is not None:
        row, token = tuple_(*key), tuple_(*page.next_token)
        stmt = stmt.where(row <= token if page.reverse else row >= token)
    order = [k.desc() for k in key] if page.reverse else list(key)
    stmt = stmt.order_by(*order)
    if page.per_page:
        stmt = stmt.limit(page.per_page + 1)
    rows = session.scalars(stmt).all()
    if page.per_page and len(rows) > page.per_page:
        nxt = rows[page.per_page]
        return rows[: page.per_page], f"{nxt.create_index}.{nxt.id}"
    return rows, None


def get_eval(session: Session, eval_id: uuid.UUID) -> Evaluation:
    evaluation = session.get(Evaluation, eval_id)
    if evaluation is None:
        raise NotFound.of("EvalID", f"evaluation {eval_id} not found")
    return evaluation


def related_evals(session: Session, evaluation: Evaluation) -> Sequence[Evaluation]:
    """The chain through previous/next/blocked links, as Nomad's ?related=true returns it."""
    seen: dict[uuid.UUID, Evaluation] = {evaluation.id: evaluation}
    frontier = [evaluation]
    while frontier:
        links = {
            link
            for e in frontier
            for link in (e.previous_eval, e.next_eval, e.blocked_eval)
            if link is not None and link not in seen
        }
        referrers = session.scalars(
            select(Evaluation).where(
                Evaluation.previous_eval.in_([e.id for e in frontier])
                | Evaluation.next_eval.in_([e.id for e in frontier])
                | Evaluation.blocked_eval.in_([e.id for e in frontier])
            )
        ).all()
        found = list(session.scalars(select(Evaluation).where(Evaluation.id.in_(links))).all()) if links else []
        frontier = [e for e in [*found, *referrers] if e.id not in seen]
        seen.update((e.id, e) for e in frontier)
    del seen[evaluation.id]
    return sorted(seen.values(), key=lambda e: e.create_index)


def eval_allocations(session: Session, eval_id: uuid.UUID) -> Sequence[Allocation]:
    get_eval(session, eval_id)
    return session.scalars(
        select(Allocation).where(Allocation.eval_id == eval_id).order_by(Allocation.create_index)
    ).all()
