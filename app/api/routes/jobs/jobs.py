"""/v1/jobs and /v1/job/:id — register, stop/purge, read, versions, evaluations, allocations, summary."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flask import Blueprint, Response, request
from sqlalchemy.orm import Session

from app.api.encoders import encode, job_encode
from app.api.encoders.version_diffs import DiffRequest, version_diffs
from app.api.http.context import read, respond, state, write
from app.api.http.listing import Entry, Order, filtered, list_query, merged, page, predicate_arg, with_token
from app.api.http.params import arg, bool_arg, integer_arg, json_body, namespace, prefix_arg
from app.api.routes.allocs import listed
from app.api.routes.jobs.evaluate import refuse_unknown_subroute
from app.jobspec import JobSpecError, normalize_job, parse_hcl
from app.jobspec.warnings import format_warnings, job_warnings
from app.models import Job
from app.store.evaluation.evals import EvalFilter, Page, list_evals
from app.store.job import job_reads as reads
from app.store.job import jobs as store
from app.store.job.job_reads import JobListed
from app.store.job.job_submissions import Submission, save_submission
from app.values.errors import FieldProblem, InvalidInput
from app.wire.api.api_allocs import AllocationListedJson
from app.wire.evaluation import EvaluationJson
from app.wire.job import JobListStubJson, JobSpec, JobSummaryJson
from app.wire.json import JsonObject

bp = Blueprint("jobs", __name__)
JOB_TABLES = ["jobs", "allocations", "evaluations"]


@bp.get("/jobs")
def list_jobs() -> Response:
    ns, prefix, query = namespace(allow_wildcard=True), prefix_arg(), list_query()

    def fetch(session: Session) -> tuple[list[JobListStubJson], str | None]:
        summaries = reads.task_group_summaries(session, ns)
        children = reads.children_summaries(session, ns)
        statuses = reads.derived_statuses(session, ns)
        entries = []
        for job in _listed_jobs(session, ns, prefix, filtered=query.predicate is not None):
            key = (job.namespace, job.id)
            status = statuses.get(key, job.status)
            summary = job_encode.job_summary(job, summaries.get(key, {}), children.get(key) or reads.no_children())
            stub = job_encode.job_stub(job, summary, status)
            entries.append(Entry(job.namespace, job.id, job.create_index, _job_view(job, status, stub), stub))
        return page(entries, Order.NAMESPACE_ID, query)

    (body, token), index = read(JOB_TABLES, fetch)
    return with_token(respond(body, index), token)


def _listed_jobs(session: Session, ns: str | None, prefix: str | None, *, filtered: bool) -> Sequence[Job | JobListed]:
    """The jobs to list: a filter sees each whole job, so then as ORM rows with their
    specifications; without one, only the part of them the stubs show (reading every job's
    whole specification was most of a big list's time)."""
    if filtered:
        return reads.list_jobs(session, ns, prefix)
    return reads.list_job_stubs(session, ns, prefix)


def _job_view(job: Job | JobListed, status: str, stub: Mapping[str, object]) -> Callable[[], Mapping[str, object]]:
    """What a filter on /v1/jobs sees: the full job, as Nomad evaluates it, and the stub's keys.
    Jobs listed without their specifications are listed without a filter: nothing asks."""
    if isinstance(job, JobListed):
        return lambda: stub
    return lambda: merged(job_encode.job(job, status), stub)


@bp.route("/jobs", methods=["PUT", "POST"])
def register() -> Response:
    return _register(url_job_id=None)


@bp.route("/job/<path:job_id>", methods=["PUT", "POST"])
def update(job_id: str) -> Response:
    refuse_unknown_subroute(job_id, request.method)
    return _register(url_job_id=job_id)


def _register(url_job_id: str | None) -> Response:
    body = json_body()
    spec = normalized_job(body)
    if url_job_id is not None and spec["ID"] != url_job_id:
        raise InvalidInput.of("Job.ID", f"{spec['ID']!r} does not match the job ID in the URL ({url_job_id!r})")
    options = _register_options(body)
    submission, warnings = _submission(body.get("Submission"), state().settings.job_max_source_size)

    def registered(session: Session) -> store.WriteResult:
        result = store.register_job(session, spec, options)
        if submission is not None:
            save_submission(session, spec["Namespace"], spec["ID"], submission)
        return result

    result = write(registered)
    return respond(
        {
            "EvalID": encode.ident(result.eval_id),
            "EvalCreateIndex": result.eval_create_index,
            "JobModifyIndex": result.job_modify_index,
            "Warnings": format_warnings(job_warnings(spec) + ([warnings] if warnings else [])),
            "Index": result.index,
            "LastContact": 0,
            "KnownLeader": True,
        },
        result.index,
    )


def normalized_job(body: JsonObject) -> JobSpec:
    job = body.get("Job")
    if not isinstance(job, dict):
        raise InvalidInput.of("Job", "is required and must be a JSON object")
    if not job.get("Namespace"):
        job = {**job, "Namespace": namespace(allow_wildcard=False)}
    try:
        return normalize_job(job)
    except JobSpecError as err:
        raise InvalidInput([FieldProblem(e.field, e.message) for e in err.errors]) from err


def _submission(submission: Any, limit: int) -> tuple[Submission | None, str]:
    """Nomad's job source (the HCL or JSON the job was written in, with its variables), checked
    and measured; kept with the version it makes (app/store/job/job_submissions.py). Over
    job_max_source_size it is discarded with a warning and the job still registers, as Nomad does."""
    if submission is None:
        return None, ""
    if not isinstance(submission, dict):
        raise InvalidInput.of("Submission", "must be a JSON object")
    problems = [
        FieldProblem(f"Submission.{name}", "must be a string")
        for name in ("Source", "Format", "Variables")
        if not isinstance(submission.get(name) or "", str)
    ]
    flags = submission.get("VariableFlags") or {}
    if not isinstance(flags, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in flags.items()):
        problems.append(FieldProblem("Submission.VariableFlags", "must be an object of strings"))
    if problems:
        raise InvalidInput(problems)
    size = sum(len(str(submission.get(name) or "").encode()) for name in ("Source", "Variables"))
    size += sum(len(k.encode()) + len(v.encode()) for k, v in flags.items())
    if size > limit:
        return None, (
            f"Submission: the job source is {size} bytes, over job_max_source_size ({limit} bytes); "
            "it was discarded and the job registered without it"
        )
    source = Submission(
        source=submission.get("Source") or "",
        format=submission.get("Format") or "",
        variable_flags=dict(flags),
        variables=submission.get("Variables") or "",
    )
    return source, ""


def _register_options(body: JsonObject) -> store.RegisterOptions:
    problems = []
    enforce = body.get("EnforceIndex", False)
    if not isinstance(enforce, bool):
        problems.append(FieldProblem("EnforceIndex", "must be a boolean"))
        enforce = False
    modify_index = body.get("JobModifyIndex", 0)
    if isinstance(modify_index, bool) or not isinstance(modify_index, int) or modify_index < 0:
        problems.append(FieldProblem("JobModifyIndex", "must be a non-negative integer"))
        modify_index = 0
    priority = body.get("EvalPriority", 0) or None
    if priority is not None and (
        isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 100
    ):
        problems.append(FieldProblem("EvalPriority", "must be an integer between 1 and 100"))
        priority = None
    preserve = body.get("PreserveCounts", False)
    if not isinstance(preserve, bool):
        problems.append(FieldProblem("PreserveCounts", "must be a boolean"))
        preserve = False
    if problems:
        raise InvalidInput(problems)
    return store.RegisterOptions(
        enforce_index=enforce,
        job_modify_index=modify_index,
        eval_priority=priority,
        preserve_counts=preserve,
        max_versions=state().settings.job_max_versions,
    )


@bp.route("/jobs/parse", methods=["PUT", "POST"])
def parse() -> Response:
    body = json_body()
    hcl = body.get("JobHCL")
    if not isinstance(hcl, str) or not hcl.strip():
        raise InvalidInput.of("JobHCL", "is required and must be a non-empty string")
    variables = body.get("Variables", "")
    if not isinstance(variables, str):
        raise InvalidInput.of("Variables", "must be a string (the contents of a variable file)")
    try:
        # file() stays off: the server must not read its own files for a caller.
        job = parse_hcl(hcl, var_files=[("Variables", variables)] if variables.strip() else ())
        normalized = normalize_job(job) if body.get("Canonicalize") else None
    except JobSpecError as err:
        raise InvalidInput([FieldProblem(e.field, e.message) for e in err.errors]) from err
    return respond(job if normalized is None else normalized, 0)


@bp.get("/job/<path:job_id>")
def get_job(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    refuse_unknown_subroute(job_id, "GET")

    def fetch(session: Session) -> dict[str, Any]:
        job = reads.get_job(session, ns, job_id)
        return job_encode.job(job, reads.derived_status(session, job))

    # Allocations and evaluations too: the status is derived from them.
    body, index = read(JOB_TABLES, fetch)
    return respond(body, index)


@bp.delete("/job/<path:job_id>")
def deregister(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    refuse_unknown_subroute(job_id, "DELETE")
    purge = bool_arg("purge")
    bool_arg("global")  # validated only: corral's cluster is one region, so every stop is global
    no_shutdown_delay = bool_arg("no_shutdown_delay")
    eval_priority = integer_arg("eval_priority", minimum=1)
    if eval_priority is not None and eval_priority > 100:
        raise InvalidInput.of("eval_priority", f"must be between 1 and 100, got {eval_priority}")
    keep = state().settings.job_max_versions
    result = write(
        lambda s: store.deregister_job(
            s,
            ns,
            job_id,
            purge=purge,
            eval_priority=eval_priority,
            max_versions=keep,
            no_shutdown_delay=no_shutdown_delay,
        )
    )
    return respond(
        {
            "EvalID": encode.ident(result.eval_id),
            "EvalCreateIndex": result.eval_create_index,
            "JobModifyIndex": result.job_modify_index,
            "Index": result.index,
        },
        result.index,
    )


@bp.get("/job/<path:job_id>/versions")
def versions(job_id: str) -> Response:
    """Nomad's JobVersionsResponse; ?diffs=true adds the Diffs (app/api/encoders/version_diffs.py)."""
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    diffs = DiffRequest(bool_arg("diffs"), integer_arg("diff_version"), arg("diff_tag") or None)

    def fetch(session: Session) -> dict[str, Any]:
        job = reads.get_job(session, ns, job_id)
        status = reads.derived_status(session, job)
        rows = reads.job_versions(session, job)
        versions = [job_encode.job_version(v, job, status) for v in rows]
        return {"Versions": versions, "Diffs": version_diffs(rows, diffs)}

    body, index = read(JOB_TABLES, fetch)
    return respond(body, index)


@bp.get("/job/<path:job_id>/evaluations")
def evaluations(job_id: str) -> Response:
    """All of them; ?filter= applies (Nomad's route takes none: an extension), per_page does not."""
    ns, predicate = namespace(allow_wildcard=False), predicate_arg()

    def fetch(session: Session) -> list[EvaluationJson]:
        assert ns is not None
        reads.get_job(session, ns, job_id)
        rows, _ = list_evals(session, EvalFilter(namespace=ns, job_id=job_id), Page())
        return filtered(predicate, [encode.evaluation(e) for e in rows], lambda e: e)

    body, index = read(["evaluations"], fetch)
    return respond(body, index)


@bp.get("/job/<path:job_id>/allocations")
def allocations(job_id: str) -> Response:
    """All of them; ?filter= applies (Nomad's route takes none: an extension), per_page does not."""
    ns, predicate = namespace(allow_wildcard=False), predicate_arg()
    include_all = bool_arg("all")

    def fetch(session: Session) -> list[AllocationListedJson]:
        assert ns is not None
        job = reads.get_job(session, ns, job_id)
        rows = reads.job_allocations(session, job)
        if not include_all:
            # Without ?all, Nomad leaves out allocations of an earlier incarnation of the job.
            rows = [a for a in rows if a.create_index >= job.create_index]
        return filtered(predicate, listed(session, rows), lambda a: a)

    body, index = read(["allocations", "jobs"], fetch)
    return respond(body, index)


@bp.get("/job/<path:job_id>/summary")
def summary(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)

    def fetch(session: Session) -> JobSummaryJson:
        assert ns is not None
        job = reads.get_job(session, ns, job_id)
        groups = reads.task_group_summaries(session, ns, job_id).get((ns, job_id), {})
        return job_encode.job_summary(job, groups, reads.children_summary(session, job))

    body, index = read(JOB_TABLES, fetch)
    return respond(body, index)
