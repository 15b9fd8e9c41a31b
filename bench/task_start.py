"""Time from placement to a running task, against `docker run` of the same image in the same run.

Starts a private Docker daemon (as the tests do: own data root and socket, a busybox image
imported from the host's busybox-static) and `corral agent -dev` pointed at it (DOCKER_HOST).
Then, N times one after the other: register a service job of one task (`sleep 3600`) with the
chosen driver and wait until its allocation runs; the figure is the task's StartedAt minus the
allocation's CreateTime (placement: the allocation exists; running: the driver started it and
the client marked it running). The peer, measured in the same run: N `docker run -d` of the same
image and command through the SDK (create + start, what the docker driver does at its core).
Prints every median and p99, corral's overhead over the peer, and their ratio.

The allocation's ModifyTime when it first shows running adds the report to the servers
("reported"). The target (issue 38) is on docker's started median: under 100 ms over the peer.

--phases runs the agent at debug level and splits each start at the client's debug events
(client/agent.py, client/tasks/task_runner.py): placement -> the client received it (the
servers' commit, the watch's wake-up and answer), -> its task starting (the allocation's
directory, plans and runner), -> the driver started it, -> running (the task's logmon up);
the median of each. Debug logging costs a little: quote the headline figures from a run without.

Usage: uv run python -m bench.task_start [--driver docker[,exec,raw_exec]] [-n 50] [--phases]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
import httpx
from docker.models.containers import Container

from bench.agent_startup import free_port
from tests.support.dockerd import Dockerd, private_dockerd

CORRAL = str(Path(sys.executable).parent / "corral")
NANOS = 1e9
NANOS_INT = 1_000_000_000
DRIVERS = ("docker", "exec", "raw_exec")
TARGET_S = 0.1  # issue 38: placement -> running within 100 ms of `docker run`


def task_of(driver: str, image: str) -> dict[str, Any]:
    if driver == "docker":
        config: dict[str, Any] = {"image": image, "command": "sleep", "args": ["3600"]}
    else:
        config = {"command": "/bin/sleep", "args": ["3600"]}
    return {"Name": "t", "Driver": driver, "Config": config, "Resources": {"CPU": 10, "MemoryMB": 16}}


def start_agent(home: Path, daemon: Dockerd, phases: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env.update({"CORRAL_BIND": f"127.0.0.1:{port}", "DOCKER_HOST": daemon.endpoint, "CORRAL_LOG_LEVEL": "warning"})
    if phases:  # the client's debug events, one JSON object a line
        env.update({"CORRAL_LOG_LEVEL": "debug", "CORRAL_LOG_FORMAT": "json"})
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


@dataclass(frozen=True)
class Start:
    """One task's start, in seconds after its placement (the allocation's CreateTime)."""

    started: float  # the task's StartedAt: the driver started it
    reported: float  # the allocation's ModifyTime when the servers first showed it running
    alloc_id: str = ""
    created_ns: int = 0  # the allocation's CreateTime


def one_start(
    http: httpx.Client, index: int, driver: str, image: str, daemon: docker.DockerClient | None = None
) -> Start:
    """One job's start. With `daemon` (docker tasks), the bench waits for the container's start
    on the daemon's event stream before it asks the API anything: a blocking query parked on
    the job's allocations is woken by the placement and read in the same API process, at the
    moment the client's own watch is answered (the peer's `docker run` has no such observer)."""
    job_id = f"start-{driver}-{index}"
    group = {"Name": "g", "Count": 1, "Tasks": [task_of(driver, image)], "EphemeralDisk": {"SizeMB": 10}}
    events = None
    if daemon is not None:  # subscribed before the job exists: its start cannot be missed
        label = f"com.hashicorp.nomad.job_id={job_id}"
        until = int(time.time()) + 120
        events = daemon.events(until=until, filters={"type": "container", "event": "start", "label": label})
    try:
        body = {"Job": {"ID": job_id, "Datacenters": ["*"], "TaskGroups": [group]}}
        http.put("/v1/jobs", json=body).raise_for_status()
        if events is not None:
            next(iter(events), None)  # the container started (or the stream's 120 s ran out)
    finally:
        if events is not None:
            events.close()
    deadline, index = time.monotonic() + 120, 0
    while time.monotonic() < deadline:
        # A blocking query: one request per change. Polling every 10 ms loaded the API and the
        # database while corral started the task (the peer's `docker run` ran unpolled).
        reply = http.get(f"/v1/job/{job_id}/allocations", params={"index": index, "wait": "30s"})
        allocs, index = reply.json(), int(reply.headers.get("X-Nomad-Index", "0"))
        if allocs and allocs[0]["ClientStatus"] == "running":
            alloc = http.get(f"/v1/allocation/{allocs[0]['ID']}").json()
            created = int(alloc["CreateTime"])
            started = rfc3339_ns(alloc["TaskStates"]["t"]["StartedAt"])
            reported = (int(alloc["ModifyTime"]) - created) / NANOS
            return Start((started - created) / NANOS, reported, str(alloc["ID"]), created)
        if allocs and allocs[0]["ClientStatus"] in ("failed", "complete", "lost"):
            raise RuntimeError(f"{job_id}: {allocs[0]['ClientStatus']}: {alloc_events(http, allocs[0]['ID'])}")
    raise RuntimeError(f"{job_id} never ran")


def rfc3339_ns(text: str) -> int:
    """Unix nanoseconds of a task state's RFC 3339 time (nanosecond digits kept)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
    return int(seconds) * NANOS_INT + int((fraction or "0").ljust(9, "0")[:9])


def alloc_events(http: httpx.Client, alloc_id: str) -> list[str]:
    states = http.get(f"/v1/allocation/{alloc_id}").json().get("TaskStates") or {}
    return [e.get("DisplayMessage", "") for s in states.values() for e in s.get("Events", [])]


class Peer:
    """`docker run -d` of the same image and command through the SDK, one at a time between
    corral's starts (so both see the same load); the containers keep running until the end,
    as corral's tasks do (a daemon with 49 containers running starts the 50th more slowly)."""

    def __init__(self, daemon: Dockerd, image: str) -> None:
        self.client, self.image = daemon.client(), image
        self.started: list[Container] = []

    def run(self) -> float:
        began = time.monotonic()
        self.started.append(self.client.containers.run(self.image, ["sleep", "3600"], detach=True, mem_limit=16 << 20))
        return time.monotonic() - began

    def close(self) -> None:
        for container in self.started:
            container.remove(force=True)
        self.client.close()


# The client's debug events of a start (bench docstring), in order, and the phase each one ends.
PHASE_EVENTS = (
    ("allocation received", "placed -> received"),
    ("task starting", "received -> task starting"),
    ("task driver started", "task starting -> driver started"),
    ("task running", "driver started -> running"),
)


def event_times(log_text: str) -> dict[tuple[str, str], int]:
    """(alloc id, event) -> Unix nanoseconds of the first such client debug event in the agent's
    log (its lines: `<role> | <JSON>`)."""
    found: dict[tuple[str, str], int] = {}
    wanted = {event for event, _ in PHASE_EVENTS}
    for line in log_text.splitlines():
        role, _, rest = line.partition(" | ")
        if role.strip() != "client" or not rest.startswith("{"):
            continue
        try:
            entry = json.loads(rest)
        except ValueError:
            continue
        event, alloc_id = entry.get("event"), entry.get("alloc_id")
        if event in wanted and isinstance(alloc_id, str) and (alloc_id, event) not in found:
            stamp = datetime.fromisoformat(str(entry["timestamp"]))
            found[(alloc_id, event)] = round(stamp.timestamp() * 1_000_000) * 1000  # microseconds logged
    return found


def phases_of(starts: list[Start], times: dict[tuple[str, str], int]) -> dict[str, list[float]]:
    """Each phase's seconds per start (a start missing an event is left out of that phase)."""
    out: dict[str, list[float]] = {name: [] for _, name in PHASE_EVENTS}
    for start in starts:
        previous = start.created_ns
        for event, name in PHASE_EVENTS:
            at = times.get((start.alloc_id, event))
            if at is None:
                break
            out[name].append((at - previous) / NANOS)
            previous = at
    return out


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def describe(name: str, values: list[float]) -> str:
    return f"{name:<40} median {statistics.median(values) * 1000:7.1f} ms   p99 {p99(values) * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--driver", default="docker", help="one or more of docker, exec, raw_exec (comma-separated), measured in turn"
    )
    parser.add_argument("-n", type=int, default=50)
    parser.add_argument("--phases", action="store_true", help="the agent at debug level; each phase's median")
    parser.add_argument(
        "--api-wait", action="store_true", help="docker: wait by blocking query from the start (the bench before 11-29)"
    )
    args = parser.parse_args()
    drivers = [name.strip() for name in args.driver.split(",") if name.strip()]
    unknown = [name for name in drivers if name not in DRIVERS]
    if unknown or not drivers:
        parser.error(f"--driver: unknown driver(s) {unknown}; choose from {', '.join(DRIVERS)}")
    home = Path(tempfile.mkdtemp(prefix="corral-bench-start-"))
    ours: dict[str, list[Start]] = {}
    peer: list[float] = []
    # A bridge of its own and no iptables: no lock shared with the tests' daemons (nothing here
    # publishes a port), and the peer runs on the same daemon.
    with private_dockerd(bridge=False) as daemon:
        agent, base = start_agent(home, daemon, args.phases)
        peer_runs = Peer(daemon, daemon.image)
        try:
            with httpx.Client(base_url=base, timeout=60) as http:
                for i in range(args.n):
                    peer.append(peer_runs.run())
                    for driver in drivers:
                        watched = peer_runs.client if driver == "docker" and not args.api_wait else None
                        ours.setdefault(driver, []).append(one_start(http, i, driver, daemon.image, watched))
        finally:
            peer_runs.close()
            agent.send_signal(signal.SIGINT)  # the dev client destroys every allocation it ran
            agent.wait(120)
            log_text = (home / "agent.log").read_text(errors="replace") if args.phases else ""
            shutil.rmtree(home, ignore_errors=True)
    print(f"{args.n} tasks per driver, one after the other; load average {os.getloadavg()[0]:.1f}")
    print(describe("docker run (SDK)", peer))
    for driver, starts in ours.items():
        print(describe(f"corral {driver}: started", [s.started for s in starts]))
        print(describe(f"corral {driver}: reported", [s.reported for s in starts]))
    if args.phases:
        times = event_times(log_text)
        for driver, starts in ours.items():
            for name, values in phases_of(starts, times).items():
                if values:
                    print(describe(f"{driver}: {name}", values))
    for driver, starts in ours.items():
        started = statistics.median(s.started for s in starts)
        overhead = started - statistics.median(peer)
        ratio = started / statistics.median(peer)
        verdict = "met" if overhead < TARGET_S else "NOT MET"
        line = f"{driver:<9} overhead over docker run: median {overhead * 1000:7.1f} ms, ratio {ratio:.2f}x"
        print(line + (f"   target < {TARGET_S * 1000:.0f} ms: {verdict}" if driver == "docker" else ""))


if __name__ == "__main__":
    main()
