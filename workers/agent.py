"""`corral agent -dev` and `corral agent -config`: the database (embedded Postgres unless a URL
is given), migrations, and every role as a child process, their logs merged into one stream
with a role prefix. Ctrl-C stops all of it: the client first (in dev mode it destroys its
allocations, as Nomad's dev agent does), then the other roles, then the database. Both modes
share one launcher (run_agent); a Plan says which roles each runs."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import gc
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx
import structlog

from app.db.database import Database, open_database
from app.db.schema import upgrade
from app.settings.config import Settings
from client.drivers.docker_daemon import Daemon, probe
from client.drivers.docker_daemon import endpoint as docker_endpoint
from workers.agent_signals import StopSignals
from workers.dev_token import mint_client_token

log = structlog.get_logger(__name__)
# The client kills its tasks before it exits, honouring their kill_timeout (5 s unless the job says).
CLIENT_STOP_S = 10.0
# Every other role only has to drop what it is doing; after this its process group is killed.
ROLE_STOP_S = 1.0
# gunicorn's quick shutdown: once the client is gone nothing in flight matters, and SIGTERM
# (graceful) would wait out the blocking queries parked in its threads.
STOP_SIGNAL = {"server": signal.SIGINT}
HEALTH_POLL_S = 0.1
SUPERVISE_POLL_S = 0.5
PR_SET_PDEATHSIG = 1
# What the dev server does differently (settings of workers/server.py): no access log, whose
# per-request lines drowned the rest, and a short graceful stop, so parked blocking queries
# do not hold up Ctrl-C. An operator's own CORRAL_* values win.
DEV_SERVER_ENV = {"CORRAL_HTTP_ACCESS_LOG": "false", "CORRAL_HTTP_GRACEFUL_TIMEOUT_S": "1"}
# What the client must not inherit: it talks only to the API, so a task that reads the client's
# environment (/proc/<pid>/environ) must find no database credential and no operator token.
CLIENT_WITHHELD = ("CORRAL_TOKEN", "NOMAD_TOKEN", "CORRAL_BOOTSTRAP_TOKEN")
CLIENT_WITHHELD_PREFIXES = ("PG",)


class StartRefusedError(Exception):
    """The API's bind address is unusable or taken, or another agent holds the data directory:
    the agent refuses to start anything."""


@dataclass(frozen=True)
class Role:
    name: str
    args: list[str]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Child:
    role: str
    process: subprocess.Popen[bytes]
    pump: threading.Thread = field(init=False)


def host_port(bind: str) -> tuple[str, int]:
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise StartRefusedError(f"CORRAL_BIND {bind!r} must be host:port, e.g. 127.0.0.1:4646")
    return host.strip("[]"), int(port)


def api_url(bind: str, *, tls: bool = False) -> str:
    """Where the agent's client and health probe reach the API (a wildcard bind answers on loopback)."""
    host, port = host_port(bind)
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    scheme = "https" if tls else "http"
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def check_port_free(bind: str) -> None:
    """Bind the API's address once, as gunicorn will, so a taken port stops the agent before it
    starts a database or a client that would register into whichever cluster holds the port."""
    host, port = host_port(bind)
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as err:
        raise StartRefusedError(f"CORRAL_BIND {bind!r}: cannot resolve {host!r}: {err}") from err
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        # As gunicorn does: a port in TIME_WAIT after a previous agent is free, a listener is not.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as err:
            raise StartRefusedError(
                f"port {port} ({bind}) is already in use ({err.strerror}); is another corral agent running? "
                "Stop it or set CORRAL_BIND to a free host:port"
            ) from err


def role_env(base: Mapping[str, str], database_url: str, log_format: str, *, embedded: bool) -> dict[str, str]:
    """Every role's environment. The log format is decided once by the agent: a child's stdout
    is a pipe to the agent, so left to itself it would always pick JSON. The roles reach the
    agent's embedded database through its URL like any other, and are told it is embedded."""
    return {
        **base,
        "CORRAL_DATABASE_URL": database_url,
        "CORRAL_DATABASE_EMBEDDED": "true" if embedded else "false",
        "CORRAL_LOG_FORMAT": log_format,
        "PYTHONUNBUFFERED": "1",
    }


def client_env(role_environment: Mapping[str, str], token: str | None) -> dict[str, str]:
    """The client's environment: the roles' minus every database setting, credential and the
    operator's token; with ACLs on, the introduction token the agent minted for it."""
    kept = {
        key: value
        for key, value in role_environment.items()
        if key not in CLIENT_WITHHELD
        and not key.startswith(CLIENT_WITHHELD_PREFIXES)
        and not (key.startswith("CORRAL_") and "DATABASE" in key)
    }
    if token:
        kept["CORRAL_TOKEN"] = token
    return kept


def server_roles(server_env: Mapping[str, str] | None = None) -> list[Role]:
    """The roles started with the database, before the API answers; the client comes after."""
    return [
        Role("server", ["server"], server_env or {}),
        Role("worker1", ["worker"]),
        Role("worker2", ["worker"]),
        Role("applier", ["applier"]),
        Role("leader", ["leader"]),
    ]


def dev_roles(base: Mapping[str, str]) -> list[Role]:
    """The server roles with the dev server's settings, where the operator set none."""
    return server_roles({key: value for key, value in DEV_SERVER_ENV.items() if key not in base})


def config_plan(
    server_enabled: bool,
    client_values: Mapping[str, object] | None,
    client_file: Path,
    client_extra_env: Mapping[str, str],
    client_token: str | None,
) -> Plan:
    """`corral agent -config`: the server roles when the server is enabled, and a client that
    reads the client block's translation from `client_file` (written, 0600, only once the agent
    holds its data directory)."""

    def client() -> Role:
        client_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(client_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(client_values, out, indent=2)
        return Role("client", ["client", "-config", str(client_file)])

    roles = tuple(server_roles()) if server_enabled else ()
    return Plan(roles, client if client_values is not None else None, client_extra_env, client_token)


def dev_client_role(settings: Settings, docker: bool = False) -> Role:
    """One client with raw_exec, exec and mock, so a quick-start job is placed, runs and
    completes, and docker when the host's daemon answers; in dev mode it destroys its
    allocations when it stops. exec is reported healthy only where it can work (root, cgroups)."""
    args = ["client", "--dev", "--server", api_url(settings.bind), "--data-dir", str(settings.data_dir / "client")]
    drivers = ["--driver", "raw_exec", "--driver", "exec", "--driver", "mock"]
    return Role("client", [*args, *drivers, *(["--driver", "docker"] if docker else [])])


def docker_line(daemon: Daemon) -> str:
    """The start-up line on the docker driver."""
    if daemon.healthy:
        return f"docker driver available: Docker {daemon.version} at {docker_endpoint()}"
    return f"docker driver not available (no Docker daemon answers: {daemon.error})"


def _die_with_parent() -> None:
    """Children get SIGTERM if the agent dies, even by kill -9, so none outlive it."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _pump(role: str, stream: IO[bytes], out: IO[str], lock: threading.Lock) -> None:
    prefix = f"{role:>7} | "
    for raw in iter(stream.readline, b""):
        with lock:
            out.write(prefix + raw.decode(errors="replace"))
            out.flush()


def _spawn(role: Role, env: Mapping[str, str], lock: threading.Lock) -> Child:
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *role.args],
        env={**env, **role.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent,
        # Ctrl-C reaches the agent only; it stops children in order. Each role is its own
        # process group, so a role that will not stop is killed with everything it forked.
        start_new_session=True,
    )
    child = Child(role.name, process)
    assert process.stdout is not None
    child.pump = threading.Thread(
        target=_pump, args=(role.name, process.stdout, sys.stderr, lock), name=f"pump-{role.name}", daemon=True
    )
    child.pump.start()
    return child


LOCK_FILE = "agent.lock"


def lock_data_dir(data_dir: Path) -> int:
    """Hold an exclusive lock on DATA_DIR/agent.lock for the agent's life (the descriptor it
    returns; the kernel drops the lock when the process ends, however it ends). A second agent
    on the same directory would share the embedded database and the client's identity, and its
    client would kill the first one's tasks when it stops: it is refused before it touches
    anything (the lock file is opened without truncation; only the holder writes its pid)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        if err.errno not in (errno.EWOULDBLOCK, errno.EACCES):
            raise StartRefusedError(f"cannot lock the data directory {data_dir}: {err.strerror}") from err
        raise StartRefusedError(
            f"another corral agent (pid {holder}) is using the data directory {data_dir.resolve()} "
            f"(it holds {path}); stop it, or give this one its own CORRAL_DATA_DIR"
        ) from err
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


@dataclass(frozen=True)
class Plan:
    """What an agent runs. `server_roles`: started on the database before the API answers (none:
    no database, no API, as a client-only agent). `client`: the client's role, made once the API
    answers (None: no client). `client_extra_env`: added to the client's environment;
    `client_token`: its token when no ACL token is minted for it (a client-only agent passes the
    operator's node token on)."""

    server_roles: tuple[Role, ...]
    client: Callable[[], Role] | None
    client_extra_env: Mapping[str, str] = field(default_factory=dict)
    client_token: str | None = None


def dev_plan(settings: Settings) -> Plan:
    def client() -> Role:
        daemon = probe(docker_endpoint())
        log.info(docker_line(daemon))
        return dev_client_role(settings, daemon.healthy)

    return Plan(tuple(dev_roles(os.environ)), client)


def run_dev_agent(settings: Settings) -> int:
    return run_agent(settings, dev_plan(settings))


def run_agent(settings: Settings, plan: Plan) -> int:
    if plan.server_roles:
        check_port_free(settings.bind)  # first: it touches nothing, not even the data directory
    lock = lock_data_dir(Path(settings.data_dir))
    try:
        return _run_locked(settings, plan)
    finally:
        os.close(lock)


def _run_locked(settings: Settings, plan: Plan) -> int:
    children: list[Child] = []
    postmaster: list[int] = []
    signals = StopSignals(lambda: _force_stop(children, postmaster))
    stop = signals.stop
    database: Database | None = None
    try:
        database = open_database(settings) if plan.server_roles else None
        if database is not None and database.embedded is not None and database.embedded.pid is not None:
            postmaster.append(database.embedded.pid)
        lock = threading.Lock()
        token = plan.client_token
        if database is None:
            env = role_env(os.environ, "", settings.log_format, embedded=False)
        else:
            upgrade(database.url)
            if stop.is_set():
                return 0
            gc.freeze()  # as the roles do: the interpreter's last collection skips start-up's objects
            env = role_env(os.environ, database.url, settings.log_format, embedded=database.embedded is not None)
            children.extend(_spawn(role, env, lock) for role in plan.server_roles)
            url = api_url(settings.bind, tls=settings.tls_cert_file is not None)
            if not await_api(lambda: _healthy(url, settings), lambda: _exited(children), stop):
                return 0 if stop.is_set() else 1
            log.info(f"API listening on {url}; web UI at {url}/ui/")
            token = mint_client_token(database.url) if settings.acl_enabled else None
        if plan.client is not None:
            client = {**client_env(env, token), **plan.client_extra_env}
            children.append(_spawn(plan.client(), client, lock))
        return _supervise(children, stop)
    finally:
        client_s, roles_s = _stop_children(children)
        began = time.monotonic()
        if database is not None:
            database.close()
        signals.close()
        if children:
            database_s = round(time.monotonic() - began, 2)
            log.info("stopped", client_s=client_s, roles_s=roles_s, database_s=database_s)


def _force_stop(children: list[Child], postmaster: list[int]) -> None:
    """A second Ctrl-C or SIGTERM: every role's process group killed, the embedded database told
    to stop immediately (SIGQUIT: it recovers from its log at the next start), the agent gone.
    Runs on the signal watcher's thread, so it neither logs through the (possibly stuck) stderr
    buffer nor waits for anything."""
    for child in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)
    for pid in postmaster:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGQUIT)
    with contextlib.suppress(OSError):
        os.write(2, b"==> second interrupt: roles killed, the embedded database stopped immediately\n")
    os._exit(1)


def _healthy(url: str, settings: Settings) -> bool:
    verify = _probe_tls(settings) if url.startswith("https:") else True
    try:
        return httpx.get(f"{url}/v1/agent/health", timeout=2, verify=verify).status_code == 200
    except httpx.HTTPError:
        return False


def _probe_tls(settings: Settings) -> ssl.SSLContext:
    """The health probe reaches the agent's own API on loopback: over HTTPS it checks health,
    not the certificate (which names the servers' public names), and presents the servers' own
    certificate where the API requires one of its callers."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if settings.tls_verify_client and settings.tls_cert_file and settings.tls_key_file:
        context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    return context


def _exited(children: list[Child]) -> Child | None:
    return next((child for child in children if child.process.poll() is not None), None)


def await_api(
    healthy: Callable[[], bool],
    exited: Callable[[], Child | None],
    stop: threading.Event,
    poll_s: float = HEALTH_POLL_S,
) -> bool:
    """Wait until the API answers its health check; False on Ctrl-C or when a role dies first."""
    while not stop.is_set():
        dead = exited()
        if dead is not None:
            log.error("role exited before the API answered; stopping the agent", role=dead.role)
            return False
        if healthy():
            return True
        stop.wait(poll_s)
    return False


def _supervise(children: list[Child], stop: threading.Event) -> int:
    while not stop.wait(SUPERVISE_POLL_S):
        dead = _exited(children)
        if dead is not None:
            log.error("role exited; stopping the agent", role=dead.role, exit_code=dead.process.returncode)
            return 1
    log.info("stopping")
    return 0


def _stop_children(children: list[Child]) -> tuple[float, float]:
    """The client and the roles behind the API first: the client destroys its tasks while the
    API still takes its last updates. The API once the client is gone. Returns the seconds
    each step took."""
    began = time.monotonic()
    client = [c for c in children if c.role == "client"]
    server = [c for c in children if c.role == "server"]
    others = [c for c in children if c not in client and c not in server]
    _signal(client + others)
    _reap(client, began + CLIENT_STOP_S)
    client_stopped = time.monotonic()
    _signal(server)
    _reap(others + server, client_stopped + ROLE_STOP_S)
    return round(client_stopped - began, 2), round(time.monotonic() - client_stopped, 2)


def _signal(children: list[Child]) -> None:
    for child in children:
        if child.process.poll() is None:
            child.process.send_signal(STOP_SIGNAL.get(child.role, signal.SIGTERM))


def _reap(children: list[Child], deadline: float) -> None:
    for child in children:
        try:
            child.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("role did not stop in time; killing it", role=child.role)
        # Also whatever the role forked (gunicorn's workers) and left behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)
        child.process.wait()
    for child in children:
        child.pump.join(timeout=1)
