"""DELETE /v1/evaluations (Nomad's Eval.Delete, a management token): by `EvalIDs` or by a
`Filter` over the evaluations, only while the eval broker is paused. See app/store/evaluation/eval_delete.py."""

from __future__ import annotations

import uuid

from flask import Blueprint, Response

from app.api.encoders import encode
from app.api.http.context import respond, write
from app.api.http.listing import matches
from app.api.http.params import json_body
from app.bexpr import FilterError, compile_filter
from app.models import Evaluation
from app.store.evaluation import eval_delete as store
from app.values.errors import InvalidInput

bp = Blueprint("eval_delete", __name__)
MAX_IDS = 7281  # Nomad's MaxUUIDsPerWriteRequest


@bp.delete("/evaluations")
def delete_evaluations() -> Response:
    body = json_body()
    ids, text = body.get("EvalIDs") or [], body.get("Filter") or ""
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InvalidInput.of("EvalIDs", "must be a list of evaluation IDs")
    names = [str(i) for i in ids]
    if not isinstance(text, str):
        raise InvalidInput.of("Filter", "must be a string")
    if text and ids:
        raise InvalidInput.of("EvalIDs", "evals cannot be deleted by both ID and filter")
    if not text and not ids:
        raise InvalidInput.of("EvalIDs", "evals must be deleted by either ID or filter")
    if len(ids) > MAX_IDS:
        raise InvalidInput.of("EvalIDs", f"request includes {len(ids)} evaluation IDs, must be {MAX_IDS} or fewer")
    if text:
        try:
            predicate = compile_filter(text)
        except FilterError as err:
            raise InvalidInput.of("Filter", f"invalid filter expression: {err.message}") from None

        def chosen(e: Evaluation) -> bool:
            return matches(predicate, encode.evaluation(e))

        result = write(lambda s: store.delete_by_filter(s, chosen))
    else:
        keys = [_uuid(i) for i in names]
        result = write(lambda s: store.delete_by_id(s, keys))
    return respond({"Count": result.count, "Index": result.index}, result.index)


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidInput.of("EvalIDs", f"{value!r} is not an evaluation ID (a UUID)") from None
