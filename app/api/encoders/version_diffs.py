"""The `Diffs` of GET /v1/job/:id/versions?diffs=true (Nomad's Job.GetJobVersions).

Versions come newest first. Without a reference, Diffs[i] is what changed from version i+1 to
version i (the oldest version has no entry, so there is one diff fewer than versions). With
?diff_version=N or ?diff_tag=NAME, every version is compared with that one instead, and there is
a diff per version. The diff is the one `job plan` returns (app.jobspec.diff), between the
versions as Nomad serves them, and contextual as Nomad's Job.GetJobVersions makes it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from app.jobspec.canonical import canonical_job
from app.jobspec.diff import job_diff
from app.models import JobVersion
from app.values.errors import NotFound
from app.wire.job_diff import JobDiffJson


@dataclass(frozen=True)
class DiffRequest:
    """?diffs, ?diff_version and ?diff_tag; the reference is ignored without diffs, as in Nomad."""

    diffs: bool
    version: int | None = None
    tag: str | None = None


def version_diffs(versions: Sequence[JobVersion], request: DiffRequest) -> list[JobDiffJson] | None:
    """Nomad's Diffs for `versions` (newest first), or None when none were asked for."""
    if not request.diffs or not versions:
        return None
    specs = [canonical_job(v.spec) for v in versions]
    reference = _reference(versions, request)
    # app.jobspec.diff builds Nomad's JobDiff as plain dicts; its keys are JobDiffJson's.
    if reference is None:
        return [cast(JobDiffJson, job_diff(specs[i + 1], specs[i], contextual=True)) for i in range(len(specs) - 1)]
    return [cast(JobDiffJson, job_diff(specs[reference], spec, contextual=True)) for spec in specs]


def _reference(versions: Sequence[JobVersion], request: DiffRequest) -> int | None:
    """The position of the version every other is compared with, if one was named."""
    if request.tag:
        for i, row in enumerate(versions):
            if (row.version_tag or {}).get("Name") == request.tag:
                return i
        raise NotFound.of("diff_tag", f"tag {request.tag!r} not found")
    if request.version is not None:
        for i, row in enumerate(versions):
            if row.version == request.version:
                return i
        raise NotFound.of("diff_version", f"version {request.version} not found")
    return None
