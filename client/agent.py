"""The client's main loops: register, heartbeat with the servers' TTL, watch the node's
allocations (blocking query), run them, report their status in batches, and collect garbage."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import structlog

from app.settings.client_tls import client_tls
from app.wire.api.api_nodes import AllocUpdateJson, ClientAllocJson
from client.allocs import disconnect
from client.allocs.alloc_runner import TERMINAL, AllocRunner
from client.allocs.gc import GarbageCollector, measure
from client.api import IdentityRefused, NodeGone, ServerApi
from client.config import ClientConfig
from client.drivers import Docker, DriverOptions, ExecSettings, UserPolicy, available
from client.drivers import attributes as driver_attributes
from client.drivers import fingerprint as driver_fingerprint
from client.endpoint.logs_http import serve
from client.fingerprint import fingerprint, host_network
from client.host_volumes import HostVolumeManager
from client.isolation.chroot import DEFAULT_CHROOT_ENV
from client.metrics import AllocFacts, ClientCollector, NodeFacts
from client.network.bridge import sweep as sweep_networks
from client.node_meta import NodeMeta
from client.tasks.identities import requests as identity_requests
from client.templating.http_source import HttpSource
from client.usage import host_stats
from workers.loops import Backoff, Streak, guarded

log = structlog.get_logger(__name__)
RETRY_S = 1.0
IDENTITY = "client.json"
# The watch loop's longest honest round: a blocking query (30 s wait, its jitter and the HTTP
# timeout's slack) plus placing what it returned. Silent for longer, it is wedged.
WATCH_STALL_S = 180.0
# How long GET /v1/client/allocation/:id/gc waits for the destroy: under the servers' 10 s read limit.
COLLECT_WAIT_S = 5.0
# How long a new allocation's first report waits while it is still pending (the servers hold
# pending already): sent at once, it made the API write it and answer the client's own watch
# again while the driver started the task on the same cores. A status change (running,
# failed) is sent at once as ever, carrying the task states and events held meanwhile.
FIRST_REPORT_HOLD_S = 1.0


def exec_settings(config: ClientConfig) -> ExecSettings:
    """What the drivers take from the client's configuration."""
    users = UserPolicy(frozenset(config.user_denylist), frozenset(config.user_checked_drivers))
    return ExecSettings(dict(config.chroot_env or DEFAULT_CHROOT_ENV), config.cgroup_parent, users)


class Client:
    def __init__(self, config: ClientConfig, stop: threading.Event) -> None:
        self.config, self.stop = config, stop
        self.api = ServerApi(config.server)
        self.drivers = available(
            config.drivers,
            DriverOptions(
                config.docker_endpoint,
                config.docker_volumes_enabled,
                exec_settings(config),
                docker_infra_image=config.docker_infra_image,
            ),
        )
        self.driver_health: dict[str, Any] | None = None  # the drivers' last fingerprint
        self.runners: dict[str, AllocRunner] = {}
        self.destroyed: set[str] = set()
        self.lock = threading.RLock()
        self.dirty: dict[str, AllocUpdateJson] = {}
        # Each allocation's ClientStatus as last queued: a change of it (pending -> running, a
        # terminal status) wakes the sync loop at once instead of waiting for its next tick.
        self.statuses: dict[str, str] = {}
        # New allocations whose pending report waits (FIRST_REPORT_HOLD_S): id -> monotonic deadline.
        self.held: dict[str, float] = {}
        self.sync_wake = threading.Event()
        self.synced = False
        self.last_contact: float | None = None  # monotonic time the servers last answered a heartbeat
        self.force_gc_index = 0
        self.node_meta = NodeMeta(config.data_dir, config.meta)
        self.volumes = HostVolumeManager(config.volumes_root())
        self.allocs_dir = config.allocs_root()
        # Made for the client's user only; an alloc_dir the operator made keeps the mode they chose.
        self.allocs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        config.data_dir.mkdir(parents=True, exist_ok=True)
        config.data_dir.chmod(0o700)  # node secret, task logs and state: the client's user only
        config.record_allocs_root()
        self.gc = GarbageCollector(config.gc, self._runner_list, self._destroy, lambda: measure(self.allocs_dir))
        self.http_addr = ""
        self.threads: dict[str, threading.Thread] = {}
        self.watch_progress = time.monotonic()
        self.watch_stall_s = WATCH_STALL_S
        self._unhealthy_reason: str | None = None
        self.registered: dict[str, Any] | None = None  # the Node body the servers last accepted
        self._saved_link_key = ""
        self._identity_lock = threading.Lock()
        # The Nomad service registrations the servers hold for each allocation, as last sent:
        # empty after a restart, so everything running is registered again (upserts by ID).
        self.services_sent: dict[str, list[dict[str, Any]]] = {}
        # One pool for every template watcher's blocking query (each holds a connection).
        self._template_http = httpx.Client(
            base_url=config.server.rstrip("/"),
            verify=client_tls(),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=20),
        )

    def template_source(self, alloc: dict[str, Any], identity: str = "") -> HttpSource:
        """Where an allocation's templates read variables and services: as the task's workload
        identity (its implicit access to nomad/jobs/<job>/... and to services, as Nomad's
        template hook reads), or as the node when the task has none."""
        namespace = str(alloc.get("Namespace") or "default")
        token = (lambda: identity) if identity else (lambda: self.api.secret)
        return HttpSource(self.config.server, token, namespace, client=self._template_http)

    # -- identity and registration -------------------------------------------------------

    def _load_identity(self) -> None:
        path = self.config.data_dir / IDENTITY
        saved: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            saved = json.loads(path.read_text())
        self.api.node_id = uuid.UUID(saved["node_id"]) if "node_id" in saved else uuid.uuid4()
        self.api.secret = saved.get("secret") or str(uuid.uuid4())
        self.api.link_key = str(saved.get("link_key") or "")  # until the servers answer again
        self.force_gc_index = int(saved.get("force_gc_index", 0))
        self._save_identity()

    def _save_identity(self) -> None:
        with self._identity_lock:  # the heartbeat and a forced GC may save at once
            self._write_identity()

    def _write_identity(self) -> None:
        path = self.config.data_dir / IDENTITY
        body = {
            "node_id": str(self.api.node_id),
            "secret": self.api.secret,
            "link_key": self.api.link_key,
            "force_gc_index": self.force_gc_index,
        }
        self._saved_link_key = self.api.link_key
        temporary = path.with_suffix(".tmp")
        temporary.unlink(missing_ok=True)
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(json.dumps(body))
        path.with_suffix(".tmp").replace(path)

    def _keep_link_key(self) -> None:
        """Save the link key when the servers handed a new one (first registration, a rotated
        link secret), so a restarted client answers the servers before it registers again."""
        if self.api.link_key != self._saved_link_key:
            self._save_identity()

    def fingerprint_drivers(self) -> dict[str, Any]:
        self.driver_health = driver_fingerprint(self.drivers)
        return self.driver_health

    def node_body(self) -> dict[str, Any]:
        config, found = self.config, fingerprint(self.config)
        drivers = self.driver_health if self.driver_health is not None else self.fingerprint_drivers()
        attributes = {**found.attributes, **driver_attributes(drivers)}
        return {
            "ID": str(self.api.node_id),
            "SecretID": self.api.secret,
            "Name": config.name or socket.gethostname(),
            "Datacenter": config.datacenter,
            "NodeClass": config.node_class,
            "NodePool": config.node_pool,
            # Initializing until the servers have our allocations' state; once they have it, a
            # registration that only updates the node (metadata, a driver's health) stays ready,
            # as a Nomad client's does, rather than taking the node out of service until the
            # next heartbeat.
            "Status": "ready" if self.synced else "initializing",
            "Attributes": attributes,
            "Meta": self.node_meta.merged(),  # the configuration's, under what `node meta apply` set
            "Drivers": drivers,
            "HostVolumes": {
                **{volume.name: volume.fingerprint() for volume in config.host_volumes},
                **self.volumes.fingerprint(),  # dynamic ones, with their IDs
            },
            "NodeResources": {
                "Cpu": {
                    "CpuShares": found.cpu_mhz,
                    "TotalCpuCores": int(found.attributes["cpu.numcores"]),
                    "ReservableCpuCores": list(found.cores),
                },
                "Memory": {"MemoryMB": found.memory_mb},
                "Disk": {"DiskMB": found.disk_mb},
                "Networks": [host_network(found)],
            },
            "ReservedResources": {
                "Cpu": {"CpuShares": config.reserved_cpu},
                "Memory": {"MemoryMB": config.reserved_memory_mb},
                "Disk": {"DiskMB": config.reserved_disk_mb},
                "Networks": {"ReservedHostPorts": config.reserved_ports},
            },
            "HTTPAddr": self.http_addr,
        }

    def register(self) -> float:
        """Register (again) until the servers answer, backing off while they are away (one
        log line per outage); returns the heartbeat TTL."""
        backoff, streak = Backoff(cap=10.0), Streak("registration with the servers", server=self.config.server)
        while not self.stop.is_set():
            try:
                body = self.node_body()
                ttl = self.api.register(body)
            except (httpx.HTTPError, ValueError, KeyError, TypeError) as err:  # away, or a garbled answer
                streak.failed(err)
                self.stop.wait(backoff.next())
                continue
            streak.succeeded()
            self.last_contact = time.monotonic()
            self.registered = body
            self._keep_link_key()
            log.info("node registered", node_id=str(self.api.node_id), ttl_s=round(ttl, 2))
            return ttl
        return RETRY_S

    def apply_meta(self, changes: Mapping[str, str | None]) -> None:
        """`node meta apply`: save the changes, then register again so the servers (and the
        scheduler's constraints) see the merged Meta. A failed registration raises; the changes
        are kept and go out with the next registration."""
        self.node_meta.apply(changes)
        body = self.node_body()
        self.api.register(body)
        self.registered = body
        log.info("node metadata applied", keys=sorted(changes))

    def metrics(self) -> ClientCollector:
        """Nomad's client gauges over this agent's state, read at each scrape of its /v1/metrics."""
        return ClientCollector(
            lambda: None if self.registered is None else NodeFacts.of(self.registered),
            lambda: [AllocFacts.of(r.alloc, r.client_status, r.stopping, r.terminal) for r in self._runner_list()],
            lambda: host_stats(self.config.data_dir),
        )

    # -- run -----------------------------------------------------------------------------

    def run(self) -> None:
        server = serve(
            self.config.http_bind,
            self._alloc_dir,
            lambda: self.api.link_key,
            self._runner,
            self.config.data_dir,
            self.node_meta,
            self.apply_meta,
            self.collect_alloc,
            self.collect_all,
        )
        host, port = server.server_address[:2]
        self.http_addr = f"{host!s}:{port}"
        self._load_identity()
        self._restore()
        try:
            ttl = self.register()
            self.start_loops(ttl)
            self.stop.wait()
            if self.config.dev_mode:
                self._destroy_all()
            self._flush()  # otherwise tasks keep running, as Nomad's do: a restarted client re-attaches
        finally:
            server.shutdown()
            self.api.close()
            self._template_http.close()

    def start_loops(self, ttl: float) -> None:
        # Daemons: a blocking query in flight must not hold up shutdown.
        self.watch_progress = time.monotonic()
        self.threads = {
            "watch": threading.Thread(target=self._watch_loop, name="watch", daemon=True),
            "sync": threading.Thread(target=self._sync_loop, name="sync", daemon=True),
            "gc": threading.Thread(target=self._gc_loop, name="gc", daemon=True),
            "heartbeat": threading.Thread(target=self._heartbeat_loop, args=(ttl,), name="heartbeat", daemon=True),
            "drivers": threading.Thread(target=self._driver_loop, name="drivers", daemon=True),
            "volumes": threading.Thread(target=self._volume_loop, name="volumes", daemon=True),
        }
        for thread in self.threads.values():
            thread.start()

    def unhealthy(self) -> str | None:
        """Why this client cannot run its allocations right now (None: it can). While it cannot,
        it does not heartbeat: the servers then mark the node down and place its work elsewhere,
        as Nomad's do for a client whose allocation watcher is dead."""
        for name in ("watch", "sync", "gc"):
            thread = self.threads.get(name)
            if thread is not None and not thread.is_alive():
                return f"the {name} loop is dead"
        stalled = time.monotonic() - self.watch_progress
        if stalled > self.watch_stall_s:
            return f"the allocation watch has made no progress for {stalled:.0f}s (limit {self.watch_stall_s:g}s)"
        return None

    def _destroy_all(self) -> None:
        """Dev mode's shutdown (Nomad's too): kill every allocation's tasks, in parallel so the
        slowest kill_timeout bounds the stop, and remove their directories."""
        runners = self._runner_list()
        destroyers = [threading.Thread(target=self._destroy, args=(r,), name=f"destroy-{r.id}") for r in runners]
        for thread in destroyers:
            thread.start()
        for thread in destroyers:
            thread.join()
        if runners:
            log.info("dev mode: destroyed allocations on shutdown", count=len(runners))

    def _restore(self) -> None:
        """Re-attach to the allocations a previous run of this client left on disk."""
        for alloc_dir in sorted(self.allocs_dir.iterdir()):
            runner = AllocRunner.restore(
                alloc_dir,
                self.drivers,
                self._on_change,
                self.template_source,
                self.config.artifact_file_roots,
                self.config.bridge(),
            )
            if runner is None:
                log.warning("discarding an unreadable allocation directory", path=str(alloc_dir))
                continue
            self.runners[runner.id] = runner
            runner.start()
        if self.runners:
            log.info("restored allocations", count=len(self.runners))
        for driver in self.drivers.values():
            if isinstance(driver, Docker) and (removed := driver.sweep(self.allocs_dir, set(self.runners))):
                log.info("removed containers of allocations this client no longer runs", count=removed)
        if swept := sweep_networks(self.config.bridge(), self.allocs_dir, set(self.runners)):
            log.info("released network namespaces of allocations this client no longer runs", netns=swept)

    def _alloc_dir(self, alloc_id: str) -> Path | None:
        with self.lock:
            runner = self.runners.get(alloc_id)
        return runner.dir if runner is not None else None

    def _runner(self, alloc_id: str) -> AllocRunner | None:
        with self.lock:
            return self.runners.get(alloc_id)

    def _runner_list(self) -> list[AllocRunner]:
        with self.lock:
            return list(self.runners.values())

    # -- status reporting ----------------------------------------------------------------

    def _on_change(self, runner: AllocRunner) -> None:
        with self.lock:
            body = runner.update()
            self.dirty[runner.id] = body
            status = body["ClientStatus"]
            moved = self.statuses.get(runner.id) != status
            self.statuses[runner.id] = status
        if moved:
            # The servers (deployments, `job run`'s monitor, rescheduling) wait on status
            # changes; events and health details ride the next batch.
            self.sync_wake.set()
        if runner.terminal:
            self.gc.wake.set()  # Nomad's trigger: an allocation turned terminal

    def _flush(self) -> bool:
        with self.lock:
            batch = {alloc_id: body for alloc_id, body in self.dirty.items() if not self._holds(alloc_id, body)}
        if not batch:
            return True
        try:
            self.api.update_allocations(list(batch.values()))
        except (httpx.HTTPError, NodeGone) as err:
            log.warning("allocation updates not delivered; will retry", error=str(err), count=len(batch))
            return False
        with self.lock:
            for alloc_id, sent in batch.items():
                if self.dirty.get(alloc_id) is sent:
                    del self.dirty[alloc_id]
        return True

    def _holds(self, alloc_id: str, body: AllocUpdateJson) -> bool:
        """Whether a new allocation's report waits: still pending, within its hold (under self.lock)."""
        deadline = self.held.get(alloc_id)
        if deadline is None:
            return False
        if body.get("ClientStatus") == "pending" and time.monotonic() < deadline:
            return True
        del self.held[alloc_id]
        return False

    def _sync_loop(self) -> None:
        """Send the queued allocation updates every sync_interval_s (Nomad's batching), and at
        once when an allocation's client status changed."""

        def step() -> None:
            self._judge_health()
            self._flush()
            self._sync_services()
            self.sync_wake.wait(self.config.sync_interval_s)
            self.sync_wake.clear()

        self.sync_wake.wait(self.config.sync_interval_s)
        self.sync_wake.clear()
        guarded("client sync", step, self.stop)

    def _sync_services(self) -> bool:
        """Send the registrations that changed since the last round: an allocation that runs
        registers its Nomad services, one that stops (or was collected) deregisters them."""
        wanted = {r.id: r.service_registrations() for r in self._runner_list() if r.has_services()}
        changed = {alloc_id: regs for alloc_id, regs in wanted.items() if self.services_sent.get(alloc_id) != regs}
        changed |= {alloc_id: [] for alloc_id in self.services_sent if alloc_id not in wanted}
        if not changed or self.api.node_id is None:
            return True
        try:
            self.api.sync_services(changed)
        except (httpx.HTTPError, NodeGone) as err:
            log.warning("service registrations not delivered; will retry", error=str(err), count=len(changed))
            return False
        for alloc_id, regs in changed.items():
            if regs or alloc_id in wanted:
                self.services_sent[alloc_id] = regs
            else:
                self.services_sent.pop(alloc_id, None)
        return True

    def _judge_health(self) -> None:
        now = time.time()
        for runner in self._runner_list():
            if runner.judge_health(now):
                body = runner.update()
                log.info("deployment health decided", alloc_id=runner.id, health=body.get("DeploymentStatus"))
                with self.lock:
                    self.dirty[runner.id] = body

    def _resync(self) -> bool:
        """Re-send every allocation's state: the servers keep the node initializing until then."""
        with self.lock:
            for runner in self.runners.values():
                self.dirty[runner.id] = runner.update()
        self.synced = self._flush()
        return self.synced

    # -- driver health -------------------------------------------------------------------

    def _driver_loop(self) -> None:
        """Fingerprint the drivers again now and then; when one's health changed (a docker
        daemon stopped or came back) send the node again, so the servers place accordingly."""

        def step() -> float:
            before = self.driver_health
            after = self.fingerprint_drivers()
            if before is not None and health_of(before) != health_of(after):
                log.info("driver health changed; updating the node", drivers=health_of(after))
                self.register()
            return self.config.driver_fingerprint_interval_s

        self.stop.wait(self.config.driver_fingerprint_interval_s)
        guarded("client driver fingerprint", step, self.stop)

    # -- dynamic host volumes ------------------------------------------------------------

    def _volume_loop(self) -> None:
        """Blocking queries on the node's dynamic host volumes: make or find each one's
        directory, and register the node again when what it reports changed (the servers then
        mark the volumes ready)."""
        index = 0
        backoff, streak = Backoff(cap=10.0), Streak("watching host volumes", node_id=str(self.api.node_id))

        def step() -> float | None:
            nonlocal index
            try:
                listed, latest = self.api.host_volumes(index)
            except (httpx.HTTPError, NodeGone, ValueError) as err:
                streak.failed(err)
                return backoff.next()
            streak.succeeded()
            backoff.reset()
            if self.volumes.sync(listed):
                log.info("host volumes changed; updating the node", volumes=sorted(self.volumes.found))
                self.register()
            index = latest if latest >= index else 0
            return None

        guarded("client host volume watch", step, self.stop)

    # -- heartbeats ----------------------------------------------------------------------

    def _heartbeat_loop(self, ttl: float) -> None:
        streak = Streak("heartbeat", node_id=str(self.api.node_id))

        def step() -> float:
            return self._heartbeat(streak) or ttl

        guarded("client heartbeat", step, self.stop)

    def _heartbeat(self, streak: Streak | None = None) -> float | None:
        """One heartbeat; returns the TTL to wait, or None to retry soon."""
        reason = self.unhealthy()
        if reason != self._unhealthy_reason:
            if reason:
                log.error("not heartbeating: this client cannot run its allocations", reason=reason)
            else:
                log.info("heartbeating again: the client's loops are healthy")
            self._unhealthy_reason = reason
        if reason:
            return RETRY_S
        # Until the servers have our allocations' state we say "initializing", never "ready".
        # Still beat: a node the servers marked down or disconnected refuses allocation
        # reports until a heartbeat brings it back (Nomad's rule), so a failed re-send must
        # not stop the heartbeat that unblocks it.
        ready = self.synced or self._resync()
        try:
            beat = self.api.heartbeat("ready" if ready else "initializing")
        except NodeGone:
            log.warning("the servers no longer know this node; registering again")
            self.synced = False  # a new node: initializing until its allocations' state is re-sent
            self.register()
            return 0.01
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as err:
            if streak is not None:
                streak.failed(err)
            self._stop_disconnected(time.monotonic())
            return RETRY_S
        if streak is not None:
            streak.succeeded()
        self.last_contact = time.monotonic()
        self._keep_link_key()
        if not ready:
            return RETRY_S  # re-send on the next beat, soon
        if beat.status == "initializing":
            self.synced = False  # we were marked down meanwhile: re-send, then say ready
            return 0.01
        if beat.force_gc_index > self.force_gc_index:
            self.force_gc_index = beat.force_gc_index
            threading.Thread(target=self._forced_gc, name="forced-gc", daemon=True).start()
        return beat.ttl_s

    def _stop_disconnected(self, now: float) -> None:
        """Nomad's heartbeat stop: kill what asked to be stopped this long out of contact."""
        for runner in self._runner_list():
            if not runner.terminal and not runner.stopping and disconnect.due(runner.alloc, self.last_contact, now):
                log.warning("stopping allocation: no contact with the servers", alloc_id=runner.id)
                runner.stop()

    # -- allocations ---------------------------------------------------------------------

    def _watch_loop(self) -> None:
        """Blocking queries on the node's allocations, each answer reconciled. Nothing ends
        this loop but the stop: an answer it could not act on in full is asked for again (the
        index does not move past it) after a backoff."""
        index = 0
        backoff, streak = Backoff(cap=10.0), Streak("watching allocations", node_id=str(self.api.node_id))

        def step() -> float | None:
            nonlocal index
            self.watch_progress = time.monotonic()
            try:
                allocs, latest = self.api.node_allocations(index)
                self.watch_progress = time.monotonic()
                self._reconcile(allocs)
            except (httpx.HTTPError, NodeGone, ValueError) as err:
                streak.failed(err)
                return backoff.next()
            finally:  # anything else: the guard logs it, backs off, and the next round asks again
                self.watch_progress = time.monotonic()
            streak.succeeded()
            backoff.reset()
            index = latest if latest >= index else 0
            return None

        guarded("client allocation watch", step, self.stop)

    def _reconcile(self, allocs: list[ClientAllocJson]) -> None:
        """Act on every allocation listed; one that fails (the servers away while it is fetched,
        its directory collected under it) does not stop the others. The first failure is
        raised at the end so the caller asks again."""
        listed = set()
        failure: Exception | None = None
        for alloc in allocs:
            alloc_id = str(alloc["ID"])
            listed.add(alloc_id)
            try:
                self._reconcile_one(alloc_id, alloc)
            except Exception as err:
                failure = failure or err
                log.warning("allocation not reconciled; will retry", alloc_id=alloc_id, error=repr(err))
        for runner in self._runner_list():
            if runner.id not in listed and runner.terminal:
                self.gc.destroy(runner, "collected by the servers")  # nothing left to keep it for
        if failure is not None:
            raise failure

    def _reconcile_one(self, alloc_id: str, alloc: ClientAllocJson) -> None:
        with self.lock:
            runner = self.runners.get(alloc_id)
        wanted = alloc["DesiredStatus"] == "run" and alloc["ClientStatus"] != "lost"
        if runner is None:
            if wanted and alloc["ClientStatus"] not in TERMINAL and alloc_id not in self.destroyed:
                self._place(alloc_id, self._whole(alloc_id, alloc))
        elif not wanted and not runner.terminal and not runner.stopping:
            log.info("stopping allocation", alloc_id=alloc_id, desired=alloc["DesiredStatus"])
            runner.stop(no_shutdown_delay=bool(alloc["DesiredTransition"].get("NoShutdownDelay")))
        elif wanted and _moved_deployment(runner, alloc):
            full = self._whole(alloc_id, alloc)
            if full is not None:
                runner.join_deployment(full)

    def _whole(self, alloc_id: str, alloc: ClientAllocJson) -> dict[str, object] | None:
        """The whole allocation: from the watch's answer when the servers sent it (they do for
        every one they changed since the previous answer), else fetched (None: it is gone)."""
        whole = alloc["Allocation"]
        if whole is not None:
            return dict(whole)
        return self.api.allocation(alloc_id)

    def _place(self, alloc_id: str, full: dict[str, object] | None) -> None:
        if full is None or self.stop.is_set():
            return  # stopping: a dev client's destroy pass may already be over
        if len(self.runners) + 1 > self.config.gc.max_allocs:
            self.gc.collect(incoming=1)  # Nomad's trigger: a placement would exceed gc_max_allocs
        # Each step of a start at debug level, with the allocation: bench.task_start --phases
        # times the steps from them (received, task starting, driver started, running).
        log.debug("allocation received", alloc_id=alloc_id)
        tokens, refused = self._identities(full)
        runner = AllocRunner(
            full,
            self.allocs_dir / alloc_id,
            self.drivers,
            self._on_change,
            # The node as the servers last accepted it (Nomad's client keeps its node in memory):
            # fingerprinting the host again for every placement costs its start milliseconds.
            node=self.registered or self.node_body(),
            template_source=self.template_source,
            identities=tokens,
            identity_error=refused,
            artifact_roots=self.config.artifact_file_roots,
            bridge=self.config.bridge(),
        )
        with self.lock:
            self.runners[alloc_id] = runner
            # The servers' status for it: the runner's first report (pending) is no change to
            # wake the sync loop for, and it waits a little (FIRST_REPORT_HOLD_S).
            self.statuses[alloc_id] = str(full.get("ClientStatus") or "")
            self.held[alloc_id] = time.monotonic() + FIRST_REPORT_HOLD_S
        log.info("running allocation", alloc_id=alloc_id, name=full.get("Name"))
        runner.start()

    def _identities(self, alloc: dict[str, Any]) -> tuple[dict[str, dict[str, str]], str]:
        """The tasks' workload identities, signed by the servers before the tasks start; what
        refused them ('' when signed, or when no task uses one)."""
        wanted = identity_requests(alloc)
        if not wanted:
            return {}, ""
        try:
            return self.api.sign_identities(wanted), ""
        except IdentityRefused as err:
            return {}, str(err)

    # -- garbage collection --------------------------------------------------------------

    def _destroy(self, runner: AllocRunner) -> None:
        runner.destroy()
        for driver in self.drivers.values():
            if isinstance(driver, Docker):  # containers its tasks left (a kill the daemon missed)
                driver.destroy_alloc(runner.id)
        with self.lock:
            self.runners.pop(runner.id, None)
            self.statuses.pop(runner.id, None)
            self.held.pop(runner.id, None)
            self.destroyed.add(runner.id)
            gone = runner.update()
            gone["Destroyed"] = True
            self.dirty[runner.id] = gone

    def _gc_loop(self) -> None:
        def step() -> None:
            self.gc.wake.wait(self.config.gc.interval_s)
            self.gc.wake.clear()
            if not self.stop.is_set():
                self.gc.collect()

        guarded("client garbage collection", step, self.stop)

    def collect_alloc(self, alloc_id: str) -> bool:
        """Destroy one terminal allocation now (GET /v1/client/allocation/:id/gc), waiting a
        little for the destroy so that the caller sees it done; False if it is not here or live."""
        runner = self._runner(alloc_id)
        if runner is None or not runner.terminal:
            return False
        done = self.gc.destroyer.submit(runner, "garbage collection requested")
        if done is not None:
            done.wait(COLLECT_WAIT_S)
        return True

    def collect_all(self) -> int:
        """Destroy every terminal allocation now (PUT /v1/client/gc, forwarded by the servers),
        waiting a little for them to be gone; how many there were."""
        terminal = [r for r in self._runner_list() if r.terminal]
        for runner in terminal:
            self.gc.destroyer.submit(runner, "forced garbage collection")
        deadline = time.monotonic() + COLLECT_WAIT_S
        ids = {r.id for r in terminal}
        while time.monotonic() < deadline and any(r.id in ids for r in self._runner_list()):
            time.sleep(0.05)
        return len(terminal)

    def _forced_gc(self) -> None:
        try:
            queued = self.gc.collect(forced=True)
            log.info("forced garbage collection", queued=len(queued))
            self._save_identity()
        except Exception:  # the next forced GC (or the periodic one) tries again
            log.exception("forced garbage collection failed")


def health_of(drivers: dict[str, Any]) -> dict[str, tuple[bool, bool]]:
    return {name: (bool(info.get("Detected")), bool(info.get("Healthy"))) for name, info in drivers.items()}


def _moved_deployment(runner: AllocRunner, stub: ClientAllocJson) -> bool:
    wanted = stub["DeploymentID"]
    held = runner.health.deployment_id if runner.health else None
    return bool(wanted) and wanted != held and not runner.terminal


def run_client(
    config: ClientConfig, stop: threading.Event, metrics: Callable[[ClientCollector], None] | None = None
) -> None:
    """Run the agent until `stop`; `metrics`, if given, gets its gauges before it registers."""
    client = Client(config, stop)
    if metrics is not None:
        metrics(client.metrics())
    client.run()
