"""A short run of the chaos soak (bench/chaos.py): real roles on a Postgres of its own, kill -9,
SIGSTOP, pg_terminate_backend and Postgres restarts under a load of job writes and drains; every
invariant must hold during the run and after it settles (issue 23)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.acceptance, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[2]


def test_a_short_chaos_soak_keeps_every_invariant() -> None:
    args = ["--duration", "45", "--seed", "23", "--pg-restart-every", "20", "--workers", "2"]
    args += ["--clients", "2", "--fleet-nodes", "0", "--settle-timeout", "150"]
    run = subprocess.run(
        [sys.executable, "-m", "bench.chaos", *args], cwd=ROOT, capture_output=True, text=True, timeout=840
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    assert re.search(r"^\d+ passed, 0 failed$", run.stdout, re.M), out[-6000:]
    restarts = re.search(r"postgres immediate restart\s+(\d+)", run.stdout)
    assert restarts and int(restarts.group(1)) >= 1, out[-6000:]
    acked = re.search(r"acknowledged writes: (\d+)", run.stdout)
    assert acked and int(acked.group(1)) > 0, out[-6000:]
    # Roles killed with -9 leave their handles on the server behind; the soak stops it anyway.
    pgdata = re.search(r"embedded postgres ready\s+pgdata=(\S+)", out)
    assert pgdata, out[-6000:]
    assert not [p.pid for p in psutil.process_iter(["cmdline"]) if pgdata.group(1) in " ".join(p.info["cmdline"] or [])]
    # Nor does any role: each ran in a folder of the soak's working directory (a gunicorn worker
    # of a server the supervisor restarted while the soak closed the roles once outlived it).
    work = re.search(r"^(.*/corral-chaos-[^/]+)/", pgdata.group(1))
    assert work, pgdata.group(1)
    assert not [p.pid for p in psutil.process_iter(["cwd"]) if (p.info["cwd"] or "").startswith(work.group(1) + "/")]
