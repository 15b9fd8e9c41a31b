"""Time from placement to a running task, against `docker run` of the same image in the same run.

Starts a private Docker daemon (as the tests do: own data root and socket, a busybox image
imported from the host's busybox-static) and `corral agent -dev` pointed at it (DOCKER_HOST).
Then, N times one after the other: register a service job of one task (`sleep 3600`) with the
chosen driver and wait until its allocation runs; the figure is the task's StartedAt minus the
allocation's CreateTime (placement: the allocation exists; running: the driver started it and
the client marked it running). The peer, measured in the same run: N `docker run -d` of the same
image and command through the SDK (create + start, what the docker driver does at its core).
Prints every median and p99, corral's overhead over the peer, and their ratio.

Usage: uv run python bench/task_start.py [--driver docker|exec|raw_exec] [-n 50]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.agent_startup import free_port
from tests.support.dockerd import Dockerd, private_dockerd

CORRAL = str(Path(sys.executable).parent / "corral")
NANOS = 1e9


def task_of(driver: str, image: str) -> dict[str, Any]:
    if driver == "docker":
        config: dict[str, Any] = {"image": image, "command": "sleep", "args": ["3600"]}
    else:
        config = {"command": "/bin/sleep", "args": ["3600"]}
    return {"Name": "t", "Driver": driver, "Config": config, "Resources": {"CPU": 10, "MemoryMB": 16}}


def start_agent(home: Path, daemon: Dockerd) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env.update({"CORRAL_BIND": f"127.0.0.1:{port}", "DOCKER_HOST": daemon.endpoint, "CORRAL_LOG_LEVEL": "warning"})
    log = (home / "agent.log").open("wb")
    agent = subprocess.Popen([CORRAL, "agent", "-dev"], cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if agent.poll() is not None:
            raise RuntimeError(f"agent exited: {(home / 'agent.log').read_text()[-2000:]}")
        try:
            nodes = httpx.get(f"{base}/v1/nodes", timeout=2).json()
            if nodes and nodes[0]["Status"] == "ready":
                return agent, base
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError("agent never became ready")


def one_start(http: httpx.Client, index: int, driver: str, image: str) -> float:
    job_id = f"start-{driver}-{index}"
    group = {"Name": "g", "Count": 1, "Tasks": [task_of(driver, image)], "EphemeralDisk": {"SizeMB": 10}}
    http.put("/v1/jobs", json={"Job": {"ID": job_id, "Datacenters": ["*"], "TaskGroups": [group]}}).raise_for_status()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        allocs = http.get(f"/v1/job/{job_id}/allocations").json()
        if allocs and allocs[0]["ClientStatus"] == "running":
            alloc = http.get(f"/v1/allocation/{allocs[0]['ID']}").json()
            started = alloc["TaskStates"]["t"]["StartedAt"]
            return (int(started) - int(alloc["CreateTime"])) / NANOS
        if allocs and allocs[0]["ClientStatus"] in ("failed", "complete", "lost"):
            raise RuntimeError(f"{job_id}: {allocs[0]['ClientStatus']}: {alloc_events(http, allocs[0]['ID'])}")
        time.sleep(0.02)
    raise RuntimeError(f"{job_id} never ran")


def alloc_events(http: httpx.Client, alloc_id: str) -> list[str]:
    states = http.get(f"/v1/allocation/{alloc_id}").json().get("TaskStates") or {}
    return [e.get("DisplayMessage", "") for s in states.values() for e in s.get("Events", [])]


def docker_runs(daemon: Dockerd, image: str, n: int) -> list[float]:
    """`docker run -d` n times; the containers keep running until all have started, as corral's
    tasks do (a daemon with 49 containers running starts the 50th more slowly)."""
    client = daemon.client()
    times, started = [], []
    try:
        for _ in range(n):
            began = time.monotonic()
            started.append(client.containers.run(image, ["sleep", "3600"], detach=True, mem_limit=16 << 20))
            times.append(time.monotonic() - began)
    finally:
        for container in started:
            container.remove(force=True)
        client.close()
    return times


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def describe(name: str, values: list[float]) -> str:
    return f"{name:<26} median {statistics.median(values) * 1000:7.1f} ms   p99 {p99(values) * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--driver", choices=["docker", "exec", "raw_exec"], default="docker")
    parser.add_argument("-n", type=int, default=50)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="corral-bench-start-"))
    with private_dockerd() as daemon:
        peer = docker_runs(daemon, daemon.image, args.n)
        agent, base = start_agent(home, daemon)
        try:
            with httpx.Client(base_url=base, timeout=30) as http:
                ours = [one_start(http, i, args.driver, daemon.image) for i in range(args.n)]
        finally:
            agent.send_signal(signal.SIGINT)  # the dev client destroys every allocation it ran
            agent.wait(120)
            shutil.rmtree(home, ignore_errors=True)
    print(f"{args.n} tasks, driver {args.driver}, one after the other")
    print(describe(f"corral ({args.driver})", ours))
    print(describe("docker run (SDK)", peer))
    overhead = statistics.median(ours) - statistics.median(peer)
    ratio = statistics.median(ours) / statistics.median(peer)
    print(f"overhead over docker run   median {overhead * 1000:7.1f} ms   ratio {ratio:.2f}x")


if __name__ == "__main__":
    main()
