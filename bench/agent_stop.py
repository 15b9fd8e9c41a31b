"""How long Ctrl-C on `corral agent -dev` takes with a running raw_exec task, and whether the
task outlives the agent. Runs the real console script against a warm data directory (one
cold start first). Usage: uv run python bench/agent_stop.py [runs]
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

CORRAL = str(Path(sys.executable).parent / "corral")
JOB = {
    "Job": {
        "ID": "sleeper",
        "TaskGroups": [
            {
                "Name": "g",
                "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "sleep", "args": ["300"]}}],
            }
        ],
    }
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(condition: Callable[[], object], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (httpx.HTTPError, IndexError, RuntimeError):
            pass  # not there yet
        time.sleep(0.1)
    raise RuntimeError("timed out")


def running(base: str) -> bool:
    """A run on a reused data directory also lists the allocations earlier runs destroyed."""
    return "running" in [a["ClientStatus"] for a in httpx.get(f"{base}/v1/job/sleeper/allocations").json()]


def task_pid() -> int:
    for proc in psutil.process_iter(["cmdline"]):
        if proc.info["cmdline"] == ["sleep", "300"]:
            return int(proc.pid)
    raise RuntimeError("task process not found")


def one_stop(workdir: Path) -> tuple[float, bool]:
    """Seconds from SIGINT to the agent's exit, and whether the task's process survived it."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_BIND"] = f"127.0.0.1:{port}"
    with (workdir / "agent.log").open("ab") as out:
        agent = subprocess.Popen([CORRAL, "agent", "-dev"], cwd=workdir, env=env, stdout=out, stderr=out)
    try:
        wait_until(lambda: httpx.get(f"{base}/v1/agent/health", timeout=1).status_code == 200)
        httpx.put(f"{base}/v1/jobs", json=JOB).raise_for_status()
        wait_until(lambda: running(base) and task_pid() > 0)
        pid = task_pid()
        began = time.monotonic()
        agent.send_signal(signal.SIGINT)
        agent.wait(120)
        took = time.monotonic() - began
        steps = [line for line in (workdir / "agent.log").read_text().splitlines() if '"stopped"' in line]
        print("  agent:", steps[-1] if steps else "no 'stopped' line")
        survived = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        if survived:
            os.kill(pid, signal.SIGKILL)
        return took, survived
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()


def main(runs: int) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="corral-bench-stop-"))
    samples, survivors = [], 0
    try:
        for _ in range(runs):
            took, survived = one_stop(workdir)
            samples.append(took)
            survivors += survived
            print(f"stop {took:5.2f} s  task survived: {survived}")
    except Exception:
        print(f"failed; the agent's output is in {workdir / 'agent.log'}")
        raise
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"Ctrl-C to exit: median {statistics.median(samples):.2f} s  min {min(samples):.2f}  "
        f"max {max(samples):.2f}  n={len(samples)}; task survived in {survivors} of {runs} runs"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
