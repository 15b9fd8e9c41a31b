"""bench.small_jobs --worker-cpu: the per-process CPU quota groups and the report's judgement of
what binds a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cpu_quota import PERIOD_US, CpuQuotas, Throttling
from bench.small_jobs_quota import QuotaRun, WorkerUse

pytestmark = pytest.mark.unit


def _fake_root(tmp_path: Path) -> Path:
    (tmp_path / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cgroup.procs").write_text("")
    return tmp_path


def test_each_process_gets_a_group_with_its_quota(tmp_path: Path) -> None:
    quotas = CpuQuotas(0.25, root=_fake_root(tmp_path))
    quotas.add(4242)
    group = quotas.parent / "p4242"
    assert (group / "cpu.cfs_period_us").read_text() == str(PERIOD_US)
    assert (group / "cpu.cfs_quota_us").read_text() == "25000"
    assert (group / "cgroup.procs").read_text() == "4242"
    (group / "cpu.stat").write_text("nr_periods 10\nnr_throttled 7\nthrottled_time 2500000000\n")
    assert quotas.throttling(4242) == Throttling(10, 7, 2.5)


def test_a_missing_controller_or_a_bad_quota_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PermissionError, match="cgroup v1 cpu"):
        CpuQuotas(0.25, root=tmp_path)
    with pytest.raises(ValueError, match="positive"):
        CpuQuotas(0, root=_fake_root(tmp_path))


def test_throttling_since_a_reading_and_its_share() -> None:
    later, earlier = Throttling(30, 20, 4.0), Throttling(10, 5, 1.0)
    assert later.since(earlier) == Throttling(20, 15, 3.0)
    assert later.since(earlier).share == 0.75
    assert Throttling(0, 0, 0.0).share == 0.0


def _run(worker_cores: float, share: float, applier: float, postgres: float, machine: float) -> QuotaRun:
    use = WorkerUse(worker_cores, Throttling(100, int(share * 100), 0.0))
    return QuotaRun(2, 1000, 1.0, (use, use), applier, postgres, machine, "1.0")


@pytest.mark.parametrize(
    ("run", "binds"),
    [
        (_run(0.25, 0.9, 0.3, 0.4, 1.3), "the workers' quotas"),
        (_run(0.2, 0.1, 0.95, 0.5, 1.9), "the machine"),
        (_run(0.2, 0.1, 0.9, 0.3, 1.2), "the applier"),
        (_run(0.1, 0.0, 0.2, 0.2, 0.6), "waiting"),
        (_run(0.1, 0.0, 0.1, 0.1, 1.95), "not this run's"),
    ],
)
def test_what_binds_a_run_is_named(run: QuotaRun, binds: str) -> None:
    assert binds in run.binding(0.25, cores=2)
