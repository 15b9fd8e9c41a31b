"""`corral agent -config nomad.d/` as a Nomad operator runs it: server and client enabled in two
HCL files, the embedded database in the file's data_dir, a raw_exec job to running, the node
carrying the file's class and meta, and Ctrl-C stopping every role and the database. Nomad's
-alloc-dir, -network-interface and -plugin-dir flags join the files: the allocation's directory
is under -alloc-dir, the node advertises the interface's address, -plugin-dir is warned about."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import psutil
import pytest

from client.network.interfaces import interface_address
from tests.support.processes import CorralFactory, free_port, postgres_running_in, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance

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


def write_config(folder: Path, data_dir: Path, port: int) -> None:
    folder.mkdir()
    (folder / "10-base.hcl").write_text(
        f'data_dir  = "{data_dir}"\nbind_addr = "127.0.0.1"\nports {{\n  http = {port}\n}}\n'
        "server {\n  enabled          = true\n  bootstrap_expect = 1\n}\n"
    )
    (folder / "20-client.hcl").write_text(
        'client {\n  enabled    = true\n  node_class = "edge"\n  meta {\n    rack = "r1"\n  }\n}\n'
        'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n'
    )


def test_agent_config_runs_server_and_client_from_hcl_and_ctrl_c_stops_every_child(
    corral: CorralFactory, workdir: Path
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data_dir = workdir / "data"
    write_config(workdir / "nomad.d", data_dir, port)
    allocs = workdir / "allocs"
    loopback = next(n for n, found in psutil.net_if_addrs().items() if any(a.address == "127.0.0.1" for a in found))
    flags = ["-alloc-dir", str(allocs), "-network-interface", loopback, "-plugin-dir", "/opt/nomad/plugins"]
    agent = corral(["agent", "-config", "nomad.d", *flags])  # relative to the work directory, as typed
    wait_healthy(base, agent)
    assert (data_dir / "postgres" / "PG_VERSION").exists()  # the embedded database in data_dir
    assert "server.bootstrap_expect has no meaning in corral; ignored" in agent.output
    assert "==> WARNING: command-line flags: plugin_dir has no meaning in corral; ignored" in agent.output

    def ready_node() -> str | None:
        nodes = httpx.get(f"{base}/v1/nodes").json()
        return str(nodes[0]["ID"]) if nodes and nodes[0]["Status"] == "ready" else None

    assert wait_for(lambda: ready_node() is not None, 120), agent.output
    registered = httpx.get(f"{base}/v1/node/{ready_node()}").json()
    assert registered["NodeClass"] == "edge"
    assert registered["Meta"]["rack"] == "r1"
    assert registered["Drivers"]["raw_exec"]["Detected"] is True
    assert registered["Attributes"]["unique.network.ip-address"] == interface_address(loopback) == "127.0.0.1"
    assert registered["NodeResources"]["Networks"][0]["Device"] == loopback

    httpx.put(f"{base}/v1/jobs", json=SLEEPER).raise_for_status()

    def statuses() -> list[str]:
        return [a["ClientStatus"] for a in httpx.get(f"{base}/v1/job/sleeper/allocations").json()]

    assert wait_for(lambda: statuses() == ["running"], 120), (statuses(), agent.output)
    [alloc_id] = [a["ID"] for a in httpx.get(f"{base}/v1/job/sleeper/allocations").json()]
    assert (allocs / alloc_id / "t").is_dir() and not (data_dir / "client" / "allocs" / alloc_id).exists()
    config = httpx.get(f"{base}/v1/agent/self").json()["config"]
    assert config["Client"]["Enabled"] is True and config["Client"]["NodeClass"] == "edge"
    assert config["Files"] == [str((workdir / "nomad.d").resolve())] and config["DataDir"] == str(data_dir)

    # A production client leaves its tasks running when it stops, as Nomad's does: the job is
    # stopped first, so every process the agent started is a role (or the database).
    httpx.delete(f"{base}/v1/job/sleeper").raise_for_status()
    assert wait_for(lambda: statuses() == ["complete"], 60), statuses()
    children = agent.descendants()
    assert {"server", "worker", "applier", "leader", "client"} <= {
        part for p in children for part in p.cmdline() if part in ("server", "worker", "applier", "leader", "client")
    }
    agent.process.send_signal(signal.SIGINT)
    assert agent.wait(60) == 0, agent.output
    for child in children:
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, child
    assert postgres_running_in(data_dir) == []
    assert "client |" in agent.output and "Traceback" not in agent.output
