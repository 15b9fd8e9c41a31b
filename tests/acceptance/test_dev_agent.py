"""`corral agent -dev` as a user runs it: embedded Postgres, migrations, the API; Ctrl-C stops it all;
a second agent on its data directory is refused."""

from __future__ import annotations

import contextlib
import os
import pty
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from tests.support.processes import (
    CORRAL,
    Corral,
    CorralFactory,
    free_port,
    postgres_running_in,
    wait_for,
    wait_healthy,
)

pytestmark = pytest.mark.acceptance

JOB = {"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}}


LATER = {"Job": {"ID": "later", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}}


def socket_url(data_dir: Path) -> str:
    return f"postgresql://postgres@/corral?host={data_dir / 'postgres'}"


# Three agents one after another, and a fourth refused: on a loaded 2-core machine that can
# outlast the suite's 300 s default.
@pytest.mark.timeout(600)
def test_dev_agent_end_to_end_ctrl_c_stops_everything_and_its_data_dir_is_reused_even_after_a_kill(
    corral: CorralFactory, workdir: Path
) -> None:
    """One data directory through three agents (a fresh one costs initdb and every migration,
    so one test walks it): the first runs work, refuses a second agent on its data directory
    and stops on Ctrl-C; the second finds that work and is killed; the third still finds it,
    with no role of the killed agent left behind. The directory is given as Nomad's -data-dir
    (relative, as typed), and CORRAL_DATA_DIR names the same one: nothing lands beside it in
    the working directory."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    in_state = ["agent", "-dev", "-data-dir", "state"]
    agent = corral(in_state, env={"CORRAL_BIND": f"127.0.0.1:{port}"})
    wait_healthy(base, agent)
    data_dir = workdir / "state"
    assert (data_dir / "postgres" / "PG_VERSION").exists()
    children = agent.descendants()
    assert children, "the agent runs its roles as child processes"

    # The roles reach the embedded database by URL, and still report it as embedded.
    assert httpx.get(f"{base}/v1/agent/self").json()["config"]["Database"]["Embedded"] is True

    registered = httpx.put(f"{base}/v1/jobs", json=JOB).json()
    assert registered["EvalID"]
    evaluation = httpx.get(f"{base}/v1/evaluation/{registered['EvalID']}").json()
    assert evaluation["TriggeredBy"] == "job-register"
    # The dev agent's own client (raw_exec and mock) runs it.
    assert wait_for(lambda: httpx.get(f"{base}/v1/evaluation/{registered['EvalID']}").json()["Status"] == "complete")

    def running() -> bool:
        allocs = httpx.get(f"{base}/v1/job/web/allocations").json()
        return [a["ClientStatus"] for a in allocs] == ["running"]

    assert wait_for(running)
    second_agent_is_refused(corral, agent, data_dir, base)
    assert written_beside(workdir) == ["state"], "the agent wrote outside its -data-dir"
    assert (data_dir / "client").is_dir()
    with psycopg.connect(socket_url(data_dir)) as conn:
        assert conn.execute("SELECT job_id, task_group, desired, queued FROM v_job_summary").fetchall() == [
            ("web", "g", 1, 0)
        ]
        assert conn.execute("SELECT status FROM nodes").fetchall() == [("ready",)]
        roles = {r[0] for r in conn.execute("SELECT application_name FROM pg_stat_activity").fetchall()}
        assert {"corral-api", "corral-worker", "corral-applier", "corral-leader"} <= roles

    batch = {
        "Job": {
            "ID": "hello",
            "Type": "batch",
            "TaskGroups": [
                {"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "true"}}]}
            ],
        }
    }
    httpx.put(f"{base}/v1/jobs", json=batch).raise_for_status()
    assert wait_for(
        lambda: [a["ClientStatus"] for a in httpx.get(f"{base}/v1/job/hello/allocations").json()] == ["complete"]
    )

    bad = httpx.put(f"{base}/v1/jobs", json={"Job": {"ID": "x", "TaskGroups": []}})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"].startswith("Job.TaskGroups")

    agent.process.send_signal(signal.SIGINT)
    assert agent.wait(60) == 0
    for child in children:
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert postgres_running_in(data_dir) == []
    assert written_beside(workdir) == ["state"], "the agent wrote outside its -data-dir"
    assert "server |" in agent.output, "role logs are merged with a role prefix"
    assert "Exception ignored" not in agent.output, agent.output

    # The same data directory again: what the again agent stored is there.
    env = {"CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_LOG_FORMAT": "auto"}
    again = corral(["agent", "-dev"], env={**env, "CORRAL_DATA_DIR": "state"})
    wait_healthy(base, again)
    # Not a terminal: every role logs JSON, one object a line.
    assert wait_for(lambda: "worker1 | {" in again.output), again.output
    assert sorted(j["ID"] for j in httpx.get(f"{base}/v1/jobs").json()) == ["hello", "web"]
    httpx.put(f"{base}/v1/jobs", json=LATER).raise_for_status()
    killed_roles = [p for p in again.descendants() if "postgres" not in " ".join(p.cmdline())]
    again.process.send_signal(signal.SIGKILL)
    again.wait(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
        p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in killed_roles
    ):
        time.sleep(0.2)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in killed_roles)

    after_kill = corral(in_state, env=env)
    wait_healthy(base, after_kill)
    assert sorted(j["ID"] for j in httpx.get(f"{base}/v1/jobs").json()) == ["hello", "later", "web"]
    after_kill.process.send_signal(signal.SIGINT)
    assert after_kill.wait(60) == 0
    assert postgres_running_in(data_dir) == []
    assert written_beside(workdir) == ["state"]


def written_beside(workdir: Path) -> list[str]:
    """What the working directory holds, but for the test's own logs of the processes it ran."""
    return sorted(p.name for p in workdir.iterdir() if not (p.name.startswith("corral-") and p.suffix == ".log"))


def second_agent_is_refused(corral: CorralFactory, first: Corral, data_dir: Path, base: str) -> None:
    """A second `corral agent -dev` on the data directory FIRST holds (its client registered, so
    every file it makes exists) is refused with exit 1 and a clear message before it touches
    anything: the lock still names the first agent, no new file, the same postmaster, nothing
    listening on the second port, and the first agent still answers."""
    lock = data_dir / "agent.lock"
    assert lock.read_text().strip() == str(first.process.pid)
    postmaster = (data_dir / "postgres" / "postmaster.pid").read_text().splitlines()[0]
    assert [p.pid for p in postgres_running_in(data_dir) if str(p.pid) == postmaster]
    files_before = sorted(p.name for p in data_dir.iterdir())

    other_port = free_port()
    second = corral(["agent", "-dev", "-data-dir", str(data_dir)], env={"CORRAL_BIND": f"127.0.0.1:{other_port}"})
    assert second.wait(60) == 1, second.output
    assert f"another corral agent (pid {first.process.pid}) is using the data directory {data_dir}" in second.output
    assert "Traceback" not in second.output
    assert lock.read_text().strip() == str(first.process.pid)
    assert sorted(p.name for p in data_dir.iterdir()) == files_before
    assert (data_dir / "postgres" / "postmaster.pid").read_text().splitlines()[0] == postmaster
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{other_port}/v1/agent/health", timeout=2)
    assert httpx.get(f"{base}/v1/agent/health", timeout=5).status_code == 200
    assert len(httpx.get(f"{base}/v1/nodes").json()) == 1


class TerminalAgent:
    """`corral agent -dev` with a terminal for stdout and stderr, as a user runs it; whatever
    it writes is collected from the terminal's other end."""

    def __init__(self, cwd: Path, port: int) -> None:
        master, replica = pty.openpty()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        env.update(CORRAL_BIND=f"127.0.0.1:{port}", CORRAL_LOG_FORMAT="auto")
        self.process = subprocess.Popen([CORRAL, "agent", "-dev"], cwd=cwd, env=env, stdout=replica, stderr=replica)
        os.close(replica)
        self._master = master
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not chunk:
                return
            self._chunks.append(chunk)

    @property
    def output(self) -> str:
        return b"".join(self._chunks).decode(errors="replace").replace("\r\n", "\n")

    def descendants(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.NoSuchProcess):
            return psutil.Process(self.process.pid).children(recursive=True)
        return []

    def close(self) -> None:
        for proc in self.descendants():
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=5)
        os.close(self._master)


SLEEPER = {
    "Job": {
        "ID": "sleeper",
        "TaskGroups": [
            {
                "Name": "g",
                "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "sleep", "args": ["3600"]}}],
            }
        ],
    }
}
LISTENING = "API listening on http://"


def sleeping_task(agent: TerminalAgent) -> psutil.Process | None:
    return next((p for p in agent.descendants() if p.cmdline() == ["sleep", "3600"]), None)


def alive(proc: psutil.Process) -> bool:
    return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE


def test_dev_agent_on_a_terminal_announces_the_api_refuses_a_taken_port_and_ctrl_c_kills_its_tasks(
    corral: CorralFactory, workdir: Path
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    agent = TerminalAgent(workdir, port)
    try:
        # "API listening" appears only once the health check passes: output read first, then
        # the API asked, so a line already written must be matched by a healthy API.
        def announced_and_healthy() -> bool:
            if agent.process.poll() is not None:
                pytest.fail(f"the agent exited early:\n{agent.output}")
            announced = LISTENING in agent.output
            try:
                healthy = httpx.get(f"{base}/v1/agent/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                healthy = False
            assert healthy or not announced, f"announced before the API answered:\n{agent.output}"
            return announced and healthy

        assert wait_for(announced_and_healthy, timeout=120), agent.output
        output = agent.output
        assert output.count(LISTENING) == 1
        assert f"{LISTENING}127.0.0.1:{port}" in output
        assert f"web UI at {base}/ui/" in output
        # The client starts once the API answers, so it never registers elsewhere.
        assert " client | " not in output.split(LISTENING)[0]
        # On a terminal every role logs for a human, not JSON (their stdout is a pipe to the agent).
        role_lines = [line for line in output.splitlines() if line.startswith((" leader | ", "worker1 | "))]
        assert role_lines and not any(line.split(" | ", 1)[1].startswith("{") for line in role_lines)

        # A second agent on the same port refuses to start: no database, no client in our cluster.
        assert wait_for(lambda: len(httpx.get(f"{base}/v1/nodes").json()) == 1), agent.output
        second_dir = workdir / "second"
        second_dir.mkdir()
        second = corral(["agent", "-dev"], env={"CORRAL_BIND": f"127.0.0.1:{port}"}, cwd=second_dir)
        assert second.wait(60) != 0
        assert f"port {port}" in second.output and "in use" in second.output
        assert "Traceback" not in second.output
        assert not (second_dir / ".corral").exists()
        assert len(httpx.get(f"{base}/v1/nodes").json()) == 1

        httpx.put(f"{base}/v1/jobs", json=SLEEPER).raise_for_status()
        assert wait_for(lambda: sleeping_task(agent) is not None), agent.output
        task = sleeping_task(agent)
        assert task is not None
        roles = agent.descendants()

        began = time.monotonic()
        agent.process.send_signal(signal.SIGINT)
        assert agent.process.wait(60) == 0
        took = time.monotonic() - began
        # Nomad's dev agent destroys its allocations: the task does not outlive the agent.
        assert not alive(task), f"the raw_exec task survived Ctrl-C:\n{agent.output}"
        assert not any(alive(p) for p in roles)
        assert postgres_running_in(workdir / ".corral") == []
        # A liveness bound, not the target: the figure (under 2 s) is measured by bench/agent_stop.py.
        assert took < 10, f"Ctrl-C took {took:.1f} s"
    finally:
        agent.close()


def test_dev_agent_with_acls_registers_its_client_at_once_which_holds_no_database_url_or_operator_token(
    corral: CorralFactory, workdir: Path
) -> None:
    """Nomad's `agent -dev -acl-enabled` works without a restart; the client (whose environment a
    raw_exec task can read in /proc) gets only a short-lived node:write token, never the database
    URL or the token the operator started the agent with."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    operator_token = "0f4e0a57-6c8d-4c3b-9a1e-5d2f7c9b8a11"
    agent = corral(
        ["agent", "-dev", "-acl-enabled"], env={"CORRAL_BIND": f"127.0.0.1:{port}", "NOMAD_TOKEN": operator_token}
    )
    wait_healthy(base, agent)
    assert httpx.get(f"{base}/v1/jobs").status_code == 403, "ACLs are on"
    management = httpx.post(f"{base}/v1/acl/bootstrap").json()["SecretID"]
    headers = {"X-Nomad-Token": management}

    def ready() -> bool:
        nodes = httpx.get(f"{base}/v1/nodes", headers=headers).json()
        return [n["Status"] for n in nodes] == ["ready"]

    assert wait_for(ready), agent.output
    client = next(p for p in agent.descendants() if "client" in p.cmdline())
    environ = client.environ()
    assert not [key for key in environ if "DATABASE" in key or key.startswith("PG")], sorted(environ)
    assert operator_token not in environ.values()
    assert "NOMAD_TOKEN" not in environ
    minted = environ["CORRAL_TOKEN"]
    # The minted token may register nodes and nothing else.
    assert httpx.get(f"{base}/v1/jobs", headers={"X-Nomad-Token": minted}).status_code == 403
    self_token = httpx.get(f"{base}/v1/acl/token/self", headers={"X-Nomad-Token": minted}).json()
    assert self_token["Type"] == "client" and self_token["ExpirationTime"]
    agent.process.send_signal(signal.SIGINT)
    assert agent.wait(60) == 0
