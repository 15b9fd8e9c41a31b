"""The chaos soak's jobs: every other one without deployments, so that scaling (refused while a
deployment is active, as Nomad refuses it) is exercised too."""

from __future__ import annotations

import pytest

from app.jobspec import normalize_job
from bench.chaos import job_body

pytestmark = pytest.mark.unit


def test_odd_jobs_have_no_deployments_and_even_ones_keep_the_default() -> None:
    odd = normalize_job(job_body("chaos-00007", 2, "v0")["Job"])
    even = normalize_job(job_body("chaos-00008", 2, "v0")["Job"])
    assert odd["TaskGroups"][0]["Update"]["MaxParallel"] == 0
    assert even["TaskGroups"][0]["Update"]["MaxParallel"] == 1
