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
from pathlib import Path
from typing import Any

import httpx
import structlog

from workers.client.alloc_runner import TERMINAL, AllocRunner
from workers.client.api import NodeGone, ServerApi
from workers.client.config import ClientConfig
from workers.client.drivers import available
from workers.client.drivers import fingerprint as driver_fingerprint
from workers.client.fingerprint import fingerprint
from workers.client.gc import GarbageCollector, measure
from workers.client.logs_http import serve

log = structlog.get_logger(__name__)
RETRY_S = 1.0
IDENTITY = "client.json"


class Client:
    def __init__(self, config: ClientConfig, stop: threading.Event) -> None:
        self.config, self.stop = config, stop
        self.api = ServerApi(config.server)
        self.drivers = available(config.drivers)
        self.runners: dict[str, AllocRunner] = {}
        self.destroyed: set[str] = set()
        self.lock = threading.RLock()
        self.dirty: dict[str, dict[str, Any]] = {}
        self.synced = False
        self.force_gc_index = 0
        self.allocs_dir = config.data_dir / "allocs"
        self.allocs_dir.mkdir(parents=True, exist_ok=True)
        config.data_dir.chmod(0o700)  # node secret, task logs and state: the client's user only
        self.gc = GarbageCollector(config.gc, self._runner_list, self._destroy, lambda: measure(config.data_dir))
        self.http_addr = ""

    # -- identity and registration -------------------------------------------------------

    def _load_identity(self) -> None:
        path = self.config.data_dir / IDENTITY
        saved: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            saved = json.loads(path.read_text())
        self.api.node_id = uuid.UUID(saved["node_id"]) if "node_id" in saved else uuid.uuid4()
        self.api.secret = saved.get("secret") or str(uuid.uuid4())
        self.force_gc_index = int(saved.get("force_gc_index", 0))
        self._save_identity()

    def _save_identity(self) -> None:
        path = self.config.data_dir / IDENTITY
        body = {"node_id": str(self.api.node_id), "secret": self.api.secret, "force_gc_index": self.force_gc_index}
        temporary = path.with_suffix(".tmp")
        temporary.unlink(missing_ok=True)
        with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(json.dumps(body))
        path.with_suffix(".tmp").replace(path)

    def node_body(self) -> dict[str, Any]:
        config, found = self.config, fingerprint(self.config)
        attributes = {**found.attributes, **{f"driver.{name}": "1" for name in config.drivers}}
        return {
            "ID": str(self.api.node_id),
            "SecretID": self.api.secret,
            "Name": config.name or socket.gethostname(),
            "Datacenter": config.datacenter,
            "NodeClass": config.node_class,
            "NodePool": config.node_pool,
            "Status": "initializing",  # ready once the servers have our allocations' state
            "Attributes": attributes,
            "Meta": config.meta,
            "Drivers": driver_fingerprint(config.drivers),
            "NodeResources": {
                "Cpu": {"CpuShares": found.cpu_mhz},
                "Memory": {"MemoryMB": found.memory_mb},
                "Disk": {"DiskMB": found.disk_mb},
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
        """Register (again) until the servers answer; returns the heartbeat TTL."""
        while not self.stop.is_set():
            try:
                ttl = self.api.register(self.node_body())
                log.info("node registered", node_id=str(self.api.node_id), ttl_s=round(ttl, 2))
                self.synced = False
                return ttl
            except httpx.HTTPError as err:
                log.warning("registration failed; retrying", error=str(err))
                self.stop.wait(RETRY_S)
        return RETRY_S

    # -- run -----------------------------------------------------------------------------

    def run(self) -> None:
        server = serve(self.config.http_bind, self._alloc_dir, lambda: self.api.secret)
        host, port = server.server_address[:2]
        self.http_addr = f"{host!s}:{port}"
        self._load_identity()
        self._restore()
        try:
            ttl = self.register()
            threads = [
                threading.Thread(target=self._heartbeat_loop, args=(ttl,), name="heartbeat", daemon=True),
                threading.Thread(target=self._sync_loop, name="sync", daemon=True),
                threading.Thread(target=self._gc_loop, name="gc", daemon=True),
                # A daemon: a blocking query in flight must not hold up shutdown.
                threading.Thread(target=self._watch_loop, name="watch", daemon=True),
            ]
            for thread in threads:
                thread.start()
            self.stop.wait()
            if self.config.dev_mode:
                self._destroy_all()
            self._flush()  # otherwise tasks keep running, as Nomad's do: a restarted client re-attaches
        finally:
            server.shutdown()
            self.api.close()

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
            runner = AllocRunner.restore(alloc_dir, self.drivers, self._on_change)
            if runner is None:
                log.warning("discarding an unreadable allocation directory", path=str(alloc_dir))
                continue
            self.runners[runner.id] = runner
            runner.start()
        if self.runners:
            log.info("restored allocations", count=len(self.runners))

    def _alloc_dir(self, alloc_id: str) -> Path | None:
        with self.lock:
            runner = self.runners.get(alloc_id)
        return runner.dir if runner is not None else None

    def _runner_list(self) -> list[AllocRunner]:
        with self.lock:
            return list(self.runners.values())

    # -- status reporting ----------------------------------------------------------------

    def _on_change(self, runner: AllocRunner) -> None:
        with self.lock:
            self.dirty[runner.id] = runner.update()
        if runner.terminal:
            self.gc.wake.set()  # Nomad's trigger: an allocation turned terminal

    def _flush(self) -> bool:
        with self.lock:
            batch = dict(self.dirty)
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

    def _sync_loop(self) -> None:
        while not self.stop.wait(self.config.sync_interval_s):
            self._judge_health()
            self._flush()

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

    # -- heartbeats ----------------------------------------------------------------------

    def _heartbeat_loop(self, ttl: float) -> None:
        wait = 0.0
        while not self.stop.wait(wait):
            wait = self._heartbeat() or ttl

    def _heartbeat(self) -> float | None:
        """One heartbeat; returns the TTL to wait, or None to retry soon."""
        if not self.synced and not self._resync():
            return RETRY_S
        try:
            beat = self.api.heartbeat("ready")
        except NodeGone:
            log.warning("the servers no longer know this node; registering again")
            self.register()
            return 0.01
        except httpx.HTTPError as err:
            log.warning("heartbeat failed", error=str(err))
            return RETRY_S
        if beat.status == "initializing":
            self.synced = False  # we were marked down meanwhile: re-send, then say ready
            return 0.01
        if beat.force_gc_index > self.force_gc_index:
            self.force_gc_index = beat.force_gc_index
            threading.Thread(target=self._forced_gc, name="forced-gc", daemon=True).start()
        return beat.ttl_s

    # -- allocations ---------------------------------------------------------------------

    def _watch_loop(self) -> None:
        index = 0
        while not self.stop.is_set():
            try:
                allocs, latest = self.api.node_allocations(index)
            except (httpx.HTTPError, NodeGone) as err:
                log.warning("watching allocations failed; retrying", error=str(err))
                self.stop.wait(RETRY_S)
                continue
            index = latest if latest >= index else 0
            self._reconcile(allocs)

    def _reconcile(self, allocs: list[dict[str, Any]]) -> None:
        listed = set()
        for alloc in allocs:
            alloc_id = str(alloc["ID"])
            listed.add(alloc_id)
            with self.lock:
                runner = self.runners.get(alloc_id)
            wanted = alloc["DesiredStatus"] == "run" and alloc["ClientStatus"] != "lost"
            if runner is None:
                if wanted and alloc["ClientStatus"] not in TERMINAL and alloc_id not in self.destroyed:
                    self._place(alloc_id)
            elif not wanted and not runner.terminal and not runner.stopping:
                log.info("stopping allocation", alloc_id=alloc_id, desired=alloc["DesiredStatus"])
                runner.stop()
            elif wanted and _moved_deployment(runner, alloc):
                full = self.api.allocation(alloc_id)
                if full is not None:
                    runner.join_deployment(full)
        for runner in self._runner_list():
            if runner.id not in listed and runner.terminal:
                self.gc.destroy(runner, "collected by the servers")  # nothing left to keep it for

    def _place(self, alloc_id: str) -> None:
        full = self.api.allocation(alloc_id)
        if full is None or self.stop.is_set():
            return  # stopping: a dev client's destroy pass may already be over
        if len(self.runners) + 1 > self.config.gc.max_allocs:
            self.gc.collect(incoming=1)  # Nomad's trigger: a placement would exceed gc_max_allocs
        runner = AllocRunner(full, self.allocs_dir / alloc_id, self.drivers, self._on_change, node=self.node_body())
        with self.lock:
            self.runners[alloc_id] = runner
        log.info("running allocation", alloc_id=alloc_id, name=full.get("Name"))
        runner.start()

    # -- garbage collection --------------------------------------------------------------

    def _destroy(self, runner: AllocRunner) -> None:
        runner.destroy()
        with self.lock:
            self.runners.pop(runner.id, None)
            self.destroyed.add(runner.id)
            self.dirty[runner.id] = {**runner.update(), "Destroyed": True}

    def _gc_loop(self) -> None:
        while not self.stop.is_set():
            self.gc.wake.wait(self.config.gc.interval_s)
            self.gc.wake.clear()
            if not self.stop.is_set():
                self.gc.collect()

    def _forced_gc(self) -> None:
        queued = self.gc.collect(forced=True)
        log.info("forced garbage collection", queued=len(queued))
        self._save_identity()


def _moved_deployment(runner: AllocRunner, stub: dict[str, Any]) -> bool:
    wanted = stub.get("DeploymentID")
    held = runner.health.deployment_id if runner.health else None
    return bool(wanted) and wanted != held and not runner.terminal


def run_client(config: ClientConfig, stop: threading.Event) -> None:
    Client(config, stop).run()
