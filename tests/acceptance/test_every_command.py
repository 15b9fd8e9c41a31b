"""Every present CLI command run against a real agent (`corral agent -dev -acl-enabled`: embedded
Postgres, every role, a client running raw_exec tasks), in one ordered walk through a cluster's
life: bootstrap ACLs, write policies, roles, tokens, namespaces, pools and variables, run a
service, a periodic and a parameterized job, follow their allocations, deployments and
evaluations, drain the node, then tear it all down. Each step checks the exit code and what the
output says. `test_every_present_command_has_a_step` fails when a command is added to the click
tree (docs/cli.md's present or partial rows) without a step here."""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from app.cli import main
from app.cli.support.command_states import corral_commands, states
from tests.support.jwt_issuer import Issuer
from tests.support.processes import CORRAL, Corral, free_port, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance

WEB = """
job "web" {
  group "web" {
    count = 1
    scaling {
      min = 1
      max = 3
    }
    update {
      canary       = 1
      auto_promote = false
      min_healthy_time = "1s"
      healthy_deadline = "1m"
    }
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        # Traps SIGHUP: step "alloc signal -s SIGHUP" must not kill it, or the
        # service steps after it race the task's restart.
        args    = ["-c", "trap 'echo got HUP' HUP; echo started ${VERSION}; while :; do sleep 1; done"]
      }
      env {
        VERSION = "v1"
      }
      action "hello" {
        command = "/bin/sh"
        args    = ["-c", "echo hello from $NOMAD_TASK_NAME"]
      }
      service {
        name     = "web-svc"
        provider = "nomad"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
"""

NIGHTLY = """
job "nightly" {
  type = "batch"
  periodic {
    crons            = ["0 0 1 1 *"]
    prohibit_overlap = true
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
"""

WORK = """
job "work" {
  type = "batch"
  parameterized {
    payload = "optional"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
"""

# A batch job keeping to the scratch volume (sticky): its placement claims the volume.
STICKY = """
job "sticky" {
  type = "batch"
  group "g" {
    volume "scratch" {
      type   = "host"
      source = "scratch"
      sticky = true
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      volume_mount {
        volume      = "scratch"
        destination = "/scratch"
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
"""

POOL = 'node_pool "batch-pool" {\n  description = "batch work"\n}\n'
POLICY = 'namespace "default" {\n  policy = "read"\n}\n'
CONFIG = '{"datacenter": "dc1", "gc": {"interval": "1m"}}'


@dataclass
class Walk:
    """The agent and what earlier steps learned (tokens, IDs), for later steps' arguments."""

    base: str
    home: Path
    agent: Corral
    known: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        token = self.known.get("token", "")
        return {"CORRAL_ADDR": self.base, "CORRAL_TOKEN": token, "NOMAD_TOKEN": "", "CORRAL_NAMESPACE": ""}

    def api(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.base}{path}", headers={"X-Nomad-Token": self.known.get("token", "")}, timeout=30)


@dataclass(frozen=True)
class Step:
    """One command line (`{name}` filled from what earlier steps learned) and what it must do."""

    argv: str
    says: tuple[str, ...] = ()
    code: int = 0
    stdin: str | None = None
    learn: tuple[tuple[str, str], ...] = ()  # (name, regex with one group) read from the output
    before: Callable[[Walk], None] | None = None  # waits for the cluster state the step needs
    after: Callable[[Walk], None] | None = None  # checks what the command did beyond its output


def _settled(alloc: dict[str, Any], status: str, restarted: bool = False) -> bool:
    """The allocation has the status and, when running, so has every task (a restart in flight
    does not count). `restarted`: every task has also reported a restart (Restarts >= 1). Right
    after `job restart` the servers may still hold the states from before it, all running,
    while the client is restarting the tasks (a CI flake: `alloc restart` then found its task
    not running)."""
    if alloc["ClientStatus"] != status:
        return False
    tasks = list((alloc.get("TaskStates") or {}).values())
    if restarted and not (tasks and all(int(t.get("Restarts") or 0) >= 1 for t in tasks)):
        return False
    return status != "running" or (bool(tasks) and all(t["State"] == "running" for t in tasks))


def _alloc_of(job: str, status: str = "running", restarted: bool = False) -> Callable[[Walk], None]:
    def wait(walk: Walk) -> None:
        def found() -> bool:
            listed = walk.api(f"/v1/job/{job}/allocations").json()
            allocs = [a for a in listed if _settled(a, status, restarted)]
            if allocs:
                walk.known[f"{job}_alloc"] = sorted(allocs, key=lambda a: -int(a["CreateIndex"]))[0]["ID"]
            return bool(allocs)

        assert wait_for(found, 90), walk.agent.output

    return wait


def _deployment_of(job: str, status: str = "running") -> Callable[[Walk], None]:
    def wait(walk: Walk) -> None:
        def found() -> bool:
            latest = walk.api(f"/v1/job/{job}/deployment").json()
            if latest and latest["Status"] == status:
                walk.known["deployment"] = latest["ID"]
                return True
            return False

        assert wait_for(found, 90), walk.agent.output

    return wait


def _learn_ids(walk: Walk) -> None:
    node = walk.api("/v1/nodes").json()[0]
    walk.known["node"] = node["ID"]
    evals = walk.api("/v1/job/web/evaluations").json()
    walk.known["eval"] = evals[0]["ID"]
    policy = walk.api("/v1/scaling/policies").json()
    walk.known["policy"] = policy[0]["ID"]


def _service_id(walk: Walk) -> None:
    def found() -> bool:
        regs = walk.api("/v1/service/web-svc").json()
        if regs:
            walk.known["service"] = regs[0]["ID"]
        return bool(regs)

    assert wait_for(found, 60), walk.agent.output


def _node_ready(walk: Walk) -> None:
    def ready() -> bool:
        nodes = walk.api("/v1/nodes").json()
        return bool(nodes) and nodes[0]["Status"] == "ready"

    assert wait_for(ready, 120), walk.agent.output


def _canary_healthy(walk: Walk) -> None:
    def healthy() -> bool:
        latest = walk.api("/v1/job/web/deployment").json()
        return bool(latest) and latest["TaskGroups"]["web"]["HealthyAllocs"] >= 1

    assert wait_for(healthy, 90), walk.agent.output


def _lock_ran(walk: Walk) -> None:
    assert (walk.home / "locked.flag").exists()  # the child ran while the lock was held


def _data_volume_spec(walk: Walk) -> None:
    node = walk.api("/v1/nodes").json()[0]["ID"]
    (walk.home / "data.hcl").write_text(f'type = "host"\nname = "data"\nnode_id = "{node}"\nhost_path = "/srv/data"\n')


def _scratch_ready(walk: Walk) -> None:
    def ready() -> bool:
        return bool(walk.api(f"/v1/volume/host/{walk.known['scratch']}").json()["State"] == "ready")

    assert wait_for(ready, 90), walk.agent.output


def _sticky_done(walk: Walk) -> None:
    """The sticky job's allocation has finished: only its claim holds the volume."""

    def done() -> bool:
        allocs = walk.api("/v1/job/sticky/allocations").json()
        return bool(allocs) and all(a["ClientStatus"] in ("complete", "failed") for a in allocs)

    assert wait_for(done, 90), walk.agent.output


def _web_v2(walk: Walk) -> None:
    (walk.home / "web.nomad.hcl").write_text(WEB.replace('"v1"', '"v2"'))


def _web_v3(walk: Walk) -> None:
    (walk.home / "web.nomad.hcl").write_text(WEB.replace('"v1"', '"v3"'))


STEPS: list[Step] = [
    Step("version", ("Corral v",)),
    Step(
        "acl bootstrap",
        ("Accessor ID", "Secret ID", "Type         = management"),
        learn=(("token", r"Secret ID\s+=\s+(\S+)"),),
    ),
    Step("acl token self", ("Name         = Bootstrap Token", "Type         = management")),
    Step("agent-info", ("schema_revision", "leader        = true")),
    Step("server members", ("alive",)),
    Step("acl policy apply -description readers readers readers.hcl", ('Successfully wrote "readers" ACL policy!',)),
    Step("acl policy list", ("readers",)),
    Step("acl policy info readers", ('policy = "read"',)),
    Step("acl policy self", ("This is a management token",)),
    Step(
        "acl auth-method create -name corp -type jwt -token-locality local -max-token-ttl 1h -default "
        "-config @jwt.json",
        ("Type", "JWT"),
    ),
    Step("acl auth-method list", ("corp",)),
    Step("acl auth-method info corp", ("1h0m0s",)),
    Step("acl auth-method update -max-token-ttl 2h corp", ("2h0m0s",)),
    Step(
        "acl binding-rule create -auth-method corp -selector 'value.team == \"eng\"' -bind-type policy "
        "-bind-name readers",
        ("Bind Type",),
        learn=(("rule", r"(?m)^ID\s+=\s+(\S+)"),),
    ),
    Step("acl binding-rule list", ("corp",)),
    Step("acl binding-rule info {rule}", ("readers",)),
    Step("acl binding-rule update -description engineers {rule}", ("engineers",)),
    Step("login -method corp -login-token {jwt}", ("Successfully logged in via JWT and corp", "readers")),
    Step("acl binding-rule delete {rule}", ("ACL binding rule", "successfully deleted")),
    Step("acl auth-method delete corp", ("ACL auth method corp successfully deleted",)),
    Step("acl role create -name=ops -policy=readers", ("Name         = ops",), learn=(("role", r"ID\s+=\s+(\S+)"),)),
    Step("acl role list", ("ops",)),
    Step("acl role info {role}", ("Name         = ops",)),
    Step("acl role update -description=operators {role}", ("Description  = operators",)),
    Step(
        "acl token create -name=reader -policy=readers",
        ("Name         = reader",),
        learn=(("accessor", r"Accessor ID\s+=\s+(\S+)"),),
    ),
    Step("acl token list", ("reader",)),
    Step("acl token info {accessor}", ("Name         = reader",)),
    Step("acl token update -name=reader2 {accessor}", ("Name         = reader2",)),
    Step("acl token delete {accessor}", ("deleted",)),
    Step("acl role delete {role}", ("deleted",)),
    Step("namespace apply -description team team-a", ('Successfully applied namespace "team-a"!',)),
    Step("namespace list", ("team-a",)),
    Step("namespace inspect team-a", ('"Name": "team-a"',)),
    Step("namespace status team-a", ("Name        = team-a",)),
    Step("node pool apply pool.hcl", ('Successfully applied node pool "batch-pool"!',)),
    Step("node pool list", ("batch-pool",)),
    Step("node pool info batch-pool", ("Name        = batch-pool",)),
    Step("node pool nodes default", ("ready",), before=_node_ready),
    Step("node pool jobs default", ("No jobs",)),
    Step("node pool init -quiet", ()),
    Step("volume init scratch.hcl", ("Example volume specification written to scratch.hcl",)),
    Step(
        "volume create -detach scratch.hcl",
        ("Created host volume scratch with ID",),
        learn=(("scratch", r"with ID (\S+)"),),
    ),
    Step(
        "volume register data.hcl",
        ("Registered host volume data with ID",),
        before=_data_volume_spec,
        learn=(("data", r"with ID (\S+)"),),
    ),
    Step("job run sticky.nomad.hcl", ('finished with status "complete"',), before=_scratch_ready),
    Step(
        "volume claim list -job sticky",
        ("Volume Name", "sticky", "scratch"),
        learn=(("claim", r"(?m)^(\S{8})\s+default\s+sticky"),),
    ),
    Step("volume delete -type host {scratch}", ("is claimed by sticky volume claims",), code=1, before=_sticky_done),
    Step("volume claim delete -y {claim}", ("successfully deleted",)),
    Step("volume claim list", ("No task group host volume claims found",)),
    Step("job stop -purge -yes sticky", ("Evaluation",)),
    Step("volume status", ("Dynamic Host Volumes", "scratch", "data")),
    Step("volume status {data}", ("Host Path = /srv/data",)),
    Step("volume delete -type host {data}", ("Successfully deleted volume",)),
    Step("volume delete -type host {scratch}", ("Successfully deleted volume",)),
    Step("plugin status", ("No CSI plugins",)),
    Step("config validate client.json", ("Configuration is valid!",)),
    Step("job init -force", ("Example job file written to example.nomad.hcl",)),
    Step("init -force short.nomad.hcl", ("Example job file written to short.nomad.hcl",)),
    Step("fmt web.nomad.hcl", ("web.nomad.hcl",)),
    Step("fmt -check web.nomad.hcl"),
    Step("job validate web.nomad.hcl", ("Job validation successful",)),
    Step("validate web.nomad.hcl", ("Job validation successful",)),
    Step("job plan web.nomad.hcl", ('+ Job: "web"',), code=1),
    Step("plan web.nomad.hcl", ('+ Job: "web"',), code=1),
    Step("job run web.nomad.hcl", ('finished with status "complete"',)),
    Step("run nightly.nomad.hcl", ("Job registration successful\nApproximate next launch time: ",)),
    Step("job run work.nomad.hcl", ("Job registration successful\n",)),
    Step("job status", ("web", "nightly", "work")),
    Step("status web", ("ID            = web",), before=_alloc_of("web")),
    Step("job status -short web", ("Status        = running",)),
    Step("job allocs web", ("running",)),
    Step("job inspect web", ('"ID": "web"',)),
    Step("inspect -hcl web", ('job "web"',)),
    Step("job history web", ("Version     = 0",)),
    Step("job tag apply -name=golden web", ('Job version 0 tagged with name "golden"',)),
    Step("job tag unset -name=golden web", ('Tag "golden" removed from job "web"',)),
    Step("alloc status {web_alloc}", ("Client Status", "running")),
    Step("alloc logs {web_alloc} web", ("started v1",)),
    Step("logs {web_alloc} web", ("started v1",)),
    Step("alloc fs {web_alloc} alloc/logs", ("web.stdout.0",)),
    Step("fs {web_alloc} alloc/logs", ("web.stdout.0",)),
    Step("alloc exec -task web {web_alloc} echo hi", ("hi",)),
    Step("exec -task web {web_alloc} echo there", ("there",)),
    Step("alloc checks {web_alloc}", ()),
    Step("action -job web -group web -task web -i=false hello", ("hello from web",)),
    Step("job action -job web -alloc {web_alloc} -i=false hello", ("hello from web",)),
    Step("ui -show-url web", ("URL for web UI: ", "/ui/job/web?namespace=default")),
    Step("ui -authenticate -show-url web", ("URL for web UI: ", "/ui/job/web?namespace=default&ott=")),
    Step("alloc signal -s SIGHUP {web_alloc} web", ()),
    Step("service list", ("web-svc",), before=_service_id),
    Step("service info web-svc", ("Job ID", "web ")),
    Step("scaling policy list", ("web",), before=_learn_ids),
    Step("scaling policy info {policy}", ("Max     = 3", "Target  = Namespace:default,Job:web,Group:web")),
    Step("eval list", ("web",)),
    Step("eval status {eval}", ("Status", "complete")),
    Step("node status", ("ready",)),
    Step("node status {node}", ("Status", "ready")),
    Step("node meta apply -node-id {node} rack=r1", ()),
    Step("node meta read -node-id {node}", ("rack", "r1")),
    Step("node eligibility -disable {node}", ("ineligible",)),
    Step("node eligibility -enable {node}", ("eligible",)),
    Step("job scaling-events web", ()),
    Step("job eval web", ("finished with status",)),
    Step("job restart -yes web", ("restart",)),
    Step("alloc restart {web_alloc} web", (), before=_alloc_of("web", restarted=True)),
    Step("job periodic force nightly", ('Evaluation triggered by job "nightly/periodic-', 'with status "complete"')),
    Step("job dispatch work", ("Dispatched Job ID",)),
    Step("job run web.nomad.hcl", ("Deployment",), before=_web_v2),
    Step("job deployments web", ("running",), before=_deployment_of("web")),
    Step("deployment list", ("web",)),
    Step("deployment status {deployment}", ("Deployment",)),
    Step("deployment pause {deployment}", ("paused",)),
    Step("deployment resume {deployment}", ("resumed",)),
    Step("deployment promote {deployment}", ("promot",), before=_canary_healthy),
    Step("job promote web", (), code=1),
    Step("job run -detach web.nomad.hcl", ("Evaluation ID",), before=_web_v3),
    Step("deployment fail {deployment}", ("fail",), before=_deployment_of("web")),
    Step("job scale web web 2", ("Evaluation",), before=_deployment_of("web", "failed")),
    Step("job revert web 0", ("Evaluation",)),
    Step("var put app/config db=prod", ('"Path": "app/config"', '"db": "prod"')),
    Step("var get app/config", ("db",)),
    Step("var list", ("app/config",)),
    Step("var lock app/lock /usr/bin/touch locked.flag", after=_lock_ran),
    Step("var purge app/config", ("Successfully purged variable",)),
    Step("var init -out hcl var.hcl", ("Example variable specification written to var.hcl",)),
    Step("operator api /v1/jobs", ('"ID":',)),
    Step("operator scheduler get-config", ("Scheduler Algorithm",)),
    Step("operator scheduler set-config -memory-oversubscription=true", ("Scheduler configuration updated!",)),
    Step("operator root keyring list", ("active",)),
    Step("operator root keyring rotate", ("active",)),
    Step("operator root keyring rotate -full", ("active",)),
    Step("operator root keyring list -verbose", ("inactive",), learn=(("old_key", r"(?m)^(\S+)\s+inactive"),)),
    Step("operator root keyring remove -force {old_key}", ("Removed encryption key",)),
    Step("operator metrics", ("Gauges",)),
    Step("system reconcile summaries", ()),
    Step("operator client-state .corral/client", ('"Allocations"',)),
    Step("tls ca create", ("nomad-agent-ca.pem",)),
    Step("tls ca info nomad-agent-ca.pem", ("Serial Number",)),
    Step("tls cert create -server", ("global-server-nomad.pem",)),
    Step("tls cert info global-server-nomad.pem", ("Serial Number",)),
    Step("operator debug -duration 2s -interval 1s -output debug", ("Created debug archive",)),
    Step("debug -duration 1s -interval 1s -output debug-alias", ("Created debug archive",)),
    Step("system gc", ()),
    Step("alloc stop -no-shutdown-delay {web_alloc}", ("finished with status",), before=_alloc_of("web")),
    Step("service delete web-svc {service}", ("Successfully deleted service registration",), before=_service_id),
    Step("node drain -enable -yes -deadline 5s {node}", ("drain",)),
    Step("node drain -disable -yes {node}", ("drain",)),
    Step("operator scheduler set-config -pause-eval-broker=true", ("Scheduler configuration updated!",)),
    Step("job eval -detach -verbose web", ("Created eval ID",), learn=(("pending", r'Created eval ID: "(\S+)"'),)),
    Step("eval delete -yes {pending}", ("Successfully deleted 1 evaluation",)),
    Step("operator scheduler set-config -pause-eval-broker=false", ("Scheduler configuration updated!",)),
    Step("job stop -yes -global -no-shutdown-delay work", ("Evaluation",)),
    Step("stop -yes nightly", ("Evaluation",)),
    Step("start nightly", ("Job start successful",)),
    Step("job stop -yes nightly", ("Evaluation",)),
    Step("job stop -detach web", ("Evaluation ID",)),
    Step("job start web", ("Evaluation",)),
    Step("job stop -purge -detach web", ("Evaluation ID",)),
    Step("node pool delete batch-pool", ('Successfully deleted node pool "batch-pool"!',)),
    Step("namespace delete team-a", ('Successfully deleted namespace "team-a"!',)),
    Step("acl policy delete readers", ('Successfully deleted "readers" ACL policy!',)),
]


def _covered(argv: str, commands: set[str]) -> str:
    """The leaf command a step's command line runs (the longest run of leading words that is one)."""
    words = argv.split()
    for n in range(len(words), 0, -1):
        if " ".join(words[:n]) in commands:
            return " ".join(words[:n])
    raise AssertionError(f"no command in {argv!r}")


def test_every_present_command_has_a_step() -> None:
    present = {name for name, state, _ in states(main) if state in ("present", "partial")}
    walked = {_covered(step.argv, corral_commands(main)) for step in STEPS}
    walked |= {"agent", "monitor"}  # the module's agent itself; `monitor` streams: test_monitor
    assert present - walked == set(), "add a step for each new command"


@pytest.fixture(scope="module")
def walk() -> Iterator[Walk]:
    home = Path(tempfile.mkdtemp(prefix="corral-every-command-"))
    for name, text in {
        "web.nomad.hcl": WEB,
        "nightly.nomad.hcl": NIGHTLY,
        "work.nomad.hcl": WORK,
        "sticky.nomad.hcl": STICKY,
        "pool.hcl": POOL,
        "readers.hcl": POLICY,
        "client.json": CONFIG,
    }.items():
        (home / name).write_text(text)
    issuer = Issuer()  # the identity provider `login` presents a token of
    (home / "jwt.json").write_text(
        json.dumps({"JWTValidationPubKeys": [issuer.public_pem], "ClaimMappings": {"team": "team"}})
    )
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORRAL_", "NOMAD_"))}
    env.update({"CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_LOG_FORMAT": "console"})
    agent = Corral(["agent", "-dev", "-acl-enabled"], home, env)
    cwd = Path.cwd()
    try:
        wait_healthy(f"http://127.0.0.1:{port}", agent)
        os.chdir(home)  # job init, var init and operator debug write where the user stands
        yield Walk(f"http://127.0.0.1:{port}", home, agent, {"jwt": issuer.sign({"team": "eng"}, lifetime_s=3600)})
    finally:
        os.chdir(cwd)
        agent.process.send_signal(signal.SIGINT)
        try:
            agent.wait(60)
        finally:
            agent.kill_all()
            shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("step", STEPS, ids=[f"{i:03d} {s.argv}" for i, s in enumerate(STEPS)])
def test_step(walk: Walk, step: Step) -> None:
    if step.before is not None:
        step.before(walk)
    argv = shlex.split(step.argv.format(**walk.known))
    result = CliRunner().invoke(main, argv, input=step.stdin, env=walk.env(), catch_exceptions=False)
    output = result.output
    assert "Traceback" not in output
    assert result.exit_code == step.code, f"exit {result.exit_code}, wanted {step.code}:\n{output}"
    for expected in step.says:
        assert expected in output, f"{expected!r} not in:\n{output}"
    for name, pattern in step.learn:
        found = re.search(pattern, output)
        assert found, f"{pattern!r} not in:\n{output}"
        walk.known[name] = found.group(1)
    if step.after is not None:
        step.after(walk)


def test_monitor_streams_the_agents_log_until_stopped(walk: Walk) -> None:
    """`monitor` follows the server's log: an anonymous request it refuses logs "permission
    denied", which the monitor prints; the monitor runs until interrupted, as Nomad's."""
    env = {**os.environ, **walk.env()}
    monitor = subprocess.Popen(
        [CORRAL, "monitor", "-log-level", "warn"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert monitor.stdout is not None
        for line in monitor.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []

    def denied_logged() -> bool:
        httpx.get(f"{walk.base}/v1/jobs", timeout=30)  # no token: refused, and logged
        while not lines.empty():
            seen.append(lines.get())
        return any("permission denied" in line for line in seen)

    try:
        assert wait_for(denied_logged, 60), "".join(seen)
        assert monitor.poll() is None  # still following
    finally:
        monitor.send_signal(signal.SIGINT)
        monitor.wait(30)
