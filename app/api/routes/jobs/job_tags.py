"""PUT|POST|DELETE /v1/job/:id/versions/:name/tag (Nomad 1.9's version tags): apply the tag
`name` to a version (body: Nomad's TagVersionRequest `{Version, Latest, Description}`), or remove
it. See app/store/job/job_tags.py."""

from __future__ import annotations

from flask import Blueprint, Response

from app.api.http.context import respond, write
from app.api.http.params import namespace, optional_json_body, path_value
from app.store.job import job_tags as store
from app.values.errors import FieldProblem, InvalidInput
from app.wire.json import JsonObject

bp = Blueprint("job_tags", __name__)


@bp.route("/job/<path:job_id>/versions/<name>/tag", methods=["PUT", "POST"])
def apply(job_id: str, name: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    tag_name = path_value(name, "name")
    store.check_tag_name(tag_name)
    version, description = _request(optional_json_body())
    result = write(lambda s: store.apply_tag(s, ns, job_id, tag_name, version, description))
    # Nomad's JobTagResponse.
    return respond({**result.tag, "Index": result.index}, result.index)


@bp.delete("/job/<path:job_id>/versions/<name>/tag")
def unset(job_id: str, name: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    tag_name = path_value(name, "name")
    index = write(lambda s: store.unset_tag(s, ns, job_id, tag_name))
    return respond({"Name": "", "Description": "", "TaggedTime": 0, "Index": index}, index)


def _request(body: JsonObject) -> tuple[int | None, str]:
    """The version to tag (None: the latest) and the description. Nomad's Version 0 without
    Latest means version 0; Latest with a Version other than 0 is refused."""
    version, latest, description = body.get("Version", 0), body.get("Latest", False), body.get("Description", "")
    problems = []
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        problems.append(FieldProblem("Version", "must be a non-negative integer"))
    if not isinstance(latest, bool):
        problems.append(FieldProblem("Latest", "must be a boolean"))
    if not isinstance(description, str):
        problems.append(FieldProblem("Description", "must be a string"))
    if problems:
        raise InvalidInput(problems)
    assert isinstance(version, int) and isinstance(description, str)  # checked above
    if latest and version > 0:
        raise InvalidInput.of("Version", f"must be zero when tagging latest, got: {version}")
    return (None if latest else version), description
