"""/v1/evaluations, /v1/evaluations/count and /v1/evaluation/:id."""

from __future__ import annotations

import uuid
from dataclasses import replace

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.access.visibility import list_visibility, readable
from app.api.encoders import encode
from app.api.http.context import read, respond
from app.api.http.listing import Entry, Order, as_is, list_query, matches, page, predicate_arg, with_token
from app.api.http.params import MAX_BIGINT, arg, bool_arg, id_prefix_arg, namespace, uuid_value
from app.api.routes.allocs import listed
from app.store.evaluation import evals as store
from app.values.constants import EVAL_STATUSES
from app.values.errors import InvalidInput
from app.wire.evaluation import EvaluationJson

bp = Blueprint("evals", __name__)


@bp.get("/evaluations")
def list_evaluations() -> Response:
    status = arg("status") or None
    if status is not None and status not in EVAL_STATUSES:
        raise InvalidInput.of("status", f"must be one of {', '.join(EVAL_STATUSES)}, got {status!r}")
    query = list_query()
    if query.predicate is not None and (status or arg("job")):
        # Nomad's ErrIncompatibleFiltering
        raise InvalidInput.of("filter", "a filter expression cannot be used with the job or status parameters")
    where = store.EvalFilter(
        namespace=namespace(allow_wildcard=True),
        job_id=arg("job") or None,
        status=status,
        prefix=id_prefix_arg(),
    )
    if query.predicate is None and where.prefix is None:
        # Keyset pagination in SQL: the table can hold far more evaluations than one page. The
        # caller's namespaces are restricted in the same query, before its LIMIT.
        sql_page = store.Page(per_page=query.per_page, next_token=_next_token(), reverse=query.reverse)

        def fetch(session: Session) -> tuple[list[EvaluationJson], str | None]:
            visible = replace(where, readable=readable(session, query.visibility))
            rows, token = store.list_evals(session, visible, sql_page)
            return [encode.evaluation(e) for e in rows], token

    else:
        # A filter runs on every evaluation; by ID prefix Nomad walks its ID index.
        order = Order.ID if where.prefix else Order.CREATE_INDEX_ID

        def fetch(session: Session) -> tuple[list[EvaluationJson], str | None]:
            # page() skips what the caller may not read; narrowing in SQL first only saves reading it.
            rows, _ = store.list_evals(
                session, replace(where, readable=readable(session, query.visibility)), store.Page()
            )
            bodies = [(e, encode.evaluation(e)) for e in rows]
            entries = [Entry(e.namespace or store.CORE, str(e.id), e.create_index, as_is(b), b) for e, b in bodies]
            return page(entries, order, query)

    (body, token), index = read(["evaluations"], fetch)
    return with_token(respond(body, index), token)


@bp.get("/evaluations/count")
def count_evaluations() -> Response:
    """Nomad's Eval.Count: {"Count"} of the evaluations in ?namespace= (`*`: all the caller may
    read) that pass ?filter=; counted in SQL when there is no filter."""
    predicate = predicate_arg()
    visibility = list_visibility()
    where = store.EvalFilter(namespace=namespace(allow_wildcard=True))

    def fetch(session: Session) -> int:
        visible = replace(where, readable=readable(session, visibility))
        if predicate is None:
            return store.count_evals(session, visible)
        rows, _ = store.list_evals(session, visible, store.Page())
        return sum(1 for e in rows if matches(predicate, encode.evaluation(e)))

    count, index = read(["evaluations"], fetch)
    return respond({"Count": count, "Index": index}, index)


def _next_token() -> tuple[int, uuid.UUID] | None:
    raw = arg("next_token")
    if not raw:
        return None
    create_index, _, eval_id = raw.partition(".")
    try:
        token = int(create_index), uuid.UUID(eval_id)
    except ValueError:
        raise InvalidInput.of("next_token", f"is not a token this server returned: {raw!r}") from None
    if not 0 <= token[0] <= MAX_BIGINT:
        raise InvalidInput.of("next_token", f"is not a token this server returned: {raw!r}")
    return token


@bp.get("/evaluation/<eval_id>")
def get_evaluation(eval_id: str) -> Response:
    key = uuid_value(eval_id, "EvalID")
    related = bool_arg("related")

    def fetch(session: Session) -> EvaluationJson:
        evaluation = store.get_eval(session, key)
        body = encode.evaluation(evaluation)
        if related:
            body["RelatedEvals"] = [encode.evaluation_stub(e) for e in store.related_evals(session, evaluation)]
        return body

    body, index = read(["evaluations"], fetch)
    return respond(body, index)


@bp.get("/evaluation/<eval_id>/allocations")
def evaluation_allocations(eval_id: str) -> Response:
    key = uuid_value(eval_id, "EvalID")
    body, index = read(
        ["allocations", "evaluations"],
        lambda s: listed(s, store.eval_allocations(s, key)),
    )
    return respond(body, index)
