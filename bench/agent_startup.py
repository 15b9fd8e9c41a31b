"""How long `corral agent -dev` takes to answer /v1/agent/health, against the 30 s ceiling.

Runs the real console script several times: the first run of each data directory is cold
(initdb + migrations), later runs reuse it (warm). Prints every figure, the medians, and
the ratio of each median to the ceiling. Usage: uv run python bench/agent_startup.py [runs]
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
from pathlib import Path

import httpx

CEILING_S = 30.0
CORRAL = str(Path(sys.executable).parent / "corral")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def time_to_healthy(workdir: Path) -> float:
    port = free_port()
    env = {**os.environ, "CORRAL_BIND": f"127.0.0.1:{port}"}
    env.pop("CORRAL_DATABASE_URL", None)
    began = time.monotonic()
    agent = subprocess.Popen(
        [CORRAL, "agent", "-dev"], cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while time.monotonic() - began < 5 * CEILING_S:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/agent/health", timeout=1).status_code == 200:
                    return time.monotonic() - began
            except httpx.HTTPError:
                pass
            if agent.poll() is not None:
                raise RuntimeError(f"agent exited with {agent.returncode}")
            time.sleep(0.05)
        raise RuntimeError("agent never became healthy")
    finally:
        agent.send_signal(signal.SIGINT)
        agent.wait(60)


def main(runs: int) -> None:
    cold, warm = [], []
    for _ in range(runs):
        workdir = Path(tempfile.mkdtemp(prefix="corral-bench-"))
        try:
            cold.append(time_to_healthy(workdir))
            warm.append(time_to_healthy(workdir))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    for name, samples in (("cold (new data dir)", cold), ("warm (reused data dir)", warm)):
        median = statistics.median(samples)
        print(
            f"{name:24} median {median:5.2f} s  min {min(samples):5.2f}  max {max(samples):5.2f}  "
            f"n={len(samples)}  median/ceiling = {median / CEILING_S:.3f} (ceiling {CEILING_S:.0f} s)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
