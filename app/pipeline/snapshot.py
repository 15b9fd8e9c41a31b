"""Loading what one scheduling pass reads, in one REPEATABLE READ READ ONLY transaction."""

from __future__ import annotations

import dataclasses
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import psycopg
import psycopg.rows
from sqlalchemy import Connection, Engine

from app.db.engines import autocommitted
from app.pipeline.snapshot_rows import JobRow, VersionRow, allocation_from_row, config_from_row, node_from_row
from app.scheduler.preemption import PRIORITY_DELTA
from app.store.deployment.deployment_codec import deployment_from_mapping
from app.store.sql import psycopg_query
from app.structs import (
    Allocation,
    Deployment,
    Evaluation,
    Job,
    NodeSet,
    NodeUsage,
    Resources,
    RunningAllocation,
    SchedulerConfiguration,
    Snapshot,
    VolumeClaim,
)


class SnapshotLoader:
    """Per worker process. Nodes change rarely, so they are cached by the 'nodes' state index
    and reloaded inside the same snapshot whenever that index moved. The cache holds a NodeSet:
    the nodes sorted into canonical order and indexed by ID once per change of the nodes table,
    and the same objects handed to every evaluation until then.

    The snapshot's statements go on the pooled connection's raw psycopg connection as one
    pipelined batch, BEGIN to COMMIT: one network round trip per evaluation, no ORM. Reads that
    depend on others are decided in SQL instead (the nodes only when their index moved past the
    cached one, the preemptible allocations only when preemption is on for the job). psycopg
    prepares each statement on the connection after a few executions, so from then on the
    worker sends only parameters."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._nodes: tuple[int, NodeSet] | None = None
        self._usage = UsageCache()

    def load(self, evaluation: Evaluation) -> Snapshot:
        return self.load_batch([evaluation])[0]

    def load_batch(self, evaluations: Sequence[Evaluation]) -> list[Snapshot]:
        """One snapshot per evaluation, all of the same instant: the cluster (indexes, nodes,
        usage, ports, configuration) is read once, the jobs after it (one statement of each
        kind for all of them, the preemptible work one per job), in one pipelined batch."""
        if not evaluations:
            return []
        with autocommitted(self._engine) as pg:
            with pg.pipeline():
                pg.execute(BEGIN_SNAPSHOT)
                cluster = _send_cluster(pg, self._nodes[0] if self._nodes else None, self._usage.known)
                jobs = _send_jobs(pg, evaluations, None)
                pg.execute("COMMIT")
            read = _decode_cluster(cluster, self._nodes_at, self._usage)
            return [_decode_job(read, rows) for rows in _per_job(jobs, len(evaluations))]

    def _nodes_at(self, index: int, rows: Rows) -> NodeSet:
        if self._nodes is None or self._nodes[0] != index:  # the rows were sent: the index moved
            self._nodes = (index, _node_set(rows))
            self._usage.keep_only(self._nodes[1].by_id)  # deleted nodes' rows are never reported
        return self._nodes[1]


Pg = psycopg.Connection[Any]
Rows = psycopg.Cursor[Any]
Row = TypeVar("Row")
BEGIN_SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
# For the rest of the snapshot's transaction when it reads several jobs: the four reads over
# arrays of jobs, its last statements. Postgres's cost model never preferred their generic
# plans (unnest of a parameter counts as 10 rows, of a known array as its length), so they
# were planned anew on every call: pg_prepared_statements showed 0 generic and 545 custom
# plans in 545 calls, and a batch of 8 cost Postgres 0.74-0.98 ms against 0.57-0.62 ms one job
# at a time. Their generic plans are the intended ones: an index probe per job (OFFSET 0).
GENERIC_PLANS = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"


@dataclass(frozen=True)
class _SentCluster:
    """The cursors of the cluster's reads in one pipelined batch."""

    indexes: Rows
    usage: Rows
    ports: Rows
    config: Rows
    nodes: Rows


@dataclass(frozen=True)
class _SentJobs:
    """The cursors of a batch's job reads in the same pipeline. One job is read by its key;
    several with one statement of each kind for all of them, each row tagged with its job's
    place (o, from 1). The preemptible work is one statement per job (a scan of other jobs'
    work, decided per job). The candidate job of `job plan`, if any."""

    jobs: Rows
    allocations: Rows
    versions: Rows
    deployments: Rows
    claims: Rows
    preemptible: list[Rows]
    tagged: bool
    candidate: Job | None = None


@dataclass(frozen=True)
class _JobRows:
    """One job's rows out of a batch's reads."""

    job: JobRow | None
    allocations: list[Mapping[str, object]]  # allocation_from_row's
    versions: list[VersionRow]
    deployment: Mapping[str, object] | None  # deployment_from_mapping's
    claims: list[Mapping[str, object]]  # _claims'
    preemptible: Rows
    candidate: Job | None


def _send_cluster(pg: Pg, known_nodes: int | None, known_usage: int | None) -> _SentCluster:
    return _SentCluster(
        indexes=pg.execute(psycopg_query("snapshot_indexes")),
        usage=pg.execute(psycopg_query("snapshot_usage"), {"known_usage": known_usage}),
        ports=pg.execute(psycopg_query("snapshot_ports")),
        config=_dicts(pg, "snapshot_config"),
        nodes=_dicts(pg, "snapshot_nodes", {"known_index": known_nodes}),
    )


# The job reads: of one job by its key, of several by arrays of keys (their rows tagged).
ONE_JOB_READS = (
    "snapshot_job",
    "snapshot_job_allocations",
    "snapshot_job_versions_used",
    "snapshot_deployment",
    "snapshot_job_claims",
)
JOBS_READS = (
    "snapshot_jobs",
    "snapshot_jobs_allocations",
    "snapshot_jobs_versions_used",
    "snapshot_jobs_deployment",
    "snapshot_jobs_claims",
)


def _send_jobs(pg: Pg, evaluations: Sequence[Evaluation], candidate: Job | None) -> _SentJobs:
    # NULL: the stored job's priority, when preemption is on for its type (decided in SQL).
    max_priority = candidate.priority - PRIORITY_DELTA if candidate is not None else None
    preemptible = [  # sent first: the generic plans forced below are for the arrays' reads only
        _dicts(
            pg,
            "snapshot_preemptible",
            {"namespace": ev.namespace, "job_id": ev.job_id, "max_priority": max_priority, "delta": PRIORITY_DELTA},
        )
        for ev in evaluations
    ]
    tagged = len(evaluations) > 1
    if tagged:
        pg.execute(GENERIC_PLANS)  # the last statements of the snapshot's transaction
        keys: dict[str, object] = {
            "namespaces": [ev.namespace for ev in evaluations],
            "job_ids": [ev.job_id for ev in evaluations],
        }
    else:  # one job: plain key lookups, cheaper than the arrays' for one (and planned once)
        keys = {"namespace": evaluations[0].namespace, "job_id": evaluations[0].job_id}
    jobs, allocations, versions, deployments, claims = (
        _dicts(pg, name, keys) for name in (JOBS_READS if tagged else ONE_JOB_READS)
    )
    return _SentJobs(jobs, allocations, versions, deployments, claims, preemptible, tagged, candidate)


def _per_job(sent: _SentJobs, count: int) -> list[_JobRows]:
    """The batch's rows dealt out to its `count` jobs, in the order they were sent."""
    jobs, allocations, versions, deployments, claims = (
        _by_place(rows, sent.tagged)
        for rows in (sent.jobs, sent.allocations, sent.versions, sent.deployments, sent.claims)
    )
    return [
        _JobRows(
            job=_only(jobs.get(o)),
            allocations=allocations.get(o, []),
            versions=versions.get(o, []),
            deployment=_only(deployments.get(o)),
            claims=claims.get(o, []),
            preemptible=sent.preemptible[o - 1],
            candidate=sent.candidate,
        )
        for o in range(1, count + 1)
    ]


def _by_place(rows: Rows, tagged: bool) -> dict[int, list[Any]]:
    """A statement's rows per job place (the rows are the cursor's: _JobRows says what each holds)."""
    if not tagged:  # one job's rows
        return {1: rows.fetchall()}
    by_place: dict[int, list[Any]] = defaultdict(list)
    for row in rows.fetchall():
        by_place[row["o"]].append(row)
    return by_place


def _only(rows: list[Row] | None) -> Row | None:
    return rows[0] if rows else None


def _dicts(pg: Pg, name: str, params: Mapping[str, object] | None = None) -> Rows:
    """Sends the named statement; its rows come back as dicts, for the row decoders."""
    return pg.cursor(row_factory=psycopg.rows.dict_row).execute(psycopg_query(name), params)


def _node_set(rows: Rows) -> NodeSet:
    return NodeSet(node_from_row(r) for r in rows.fetchall())


def read_snapshot(conn: Connection, evaluation: Evaluation, candidate: Job | None = None) -> Snapshot:
    """Everything a pass reads, inside the caller's (REPEATABLE READ) transaction. A `candidate`
    job replaces the stored one: `job plan` schedules a job that is not registered yet."""
    pg = conn.connection.driver_connection
    assert pg is not None
    with pg.pipeline():
        cluster = _send_cluster(pg, None, None)
        sent = _send_jobs(pg, [evaluation], candidate)
    read = _decode_cluster(cluster, lambda _index, rows: _node_set(rows), UsageCache())
    snapshot = _decode_job(read, _per_job(sent, 1)[0])
    if candidate is None:
        return snapshot
    used = {a.job_version for a in snapshot.allocations}
    missing = sorted(used - {candidate.version} - set(snapshot.job_versions))
    if not missing:
        return snapshot
    # The stored job's own version is now an old one: read in the same transaction.
    params = {"namespace": evaluation.namespace, "job_id": evaluation.job_id, "versions": missing}
    more = _versions(_dicts(pg, "snapshot_job_versions", params).fetchall())
    return dataclasses.replace(snapshot, job_versions={**snapshot.job_versions, **more})


@dataclass(frozen=True)
class _Cluster:
    """The decoded cluster part, shared by every snapshot of a batch."""

    index: int
    nodes: NodeSet
    usage: Mapping[uuid.UUID, NodeUsage]
    config: SchedulerConfiguration


def _decode_cluster(sent: _SentCluster, nodes_at: Callable[[int, Rows], NodeSet], usage_cache: UsageCache) -> _Cluster:
    indexes = {str(n): int(v) for n, v in sent.indexes.fetchall()}
    return _Cluster(
        index=indexes["_global"],
        nodes=nodes_at(indexes["nodes"], sent.nodes),
        usage=usage_cache.decode(indexes["safe"], sent.usage.fetchall(), sent.ports.fetchall()),
        config=config_from_row(sent.config.fetchone()),
    )


def _decode_job(cluster: _Cluster, rows: _JobRows) -> Snapshot:
    stored, allocations, versions = _job_state(rows)
    job = rows.candidate if rows.candidate is not None else stored
    config = cluster.config
    # The same decision as the SQL's: preemption on for the job's type, and room below it.
    preempting = job is not None and config.preemption_enabled(job.type) and job.priority - PRIORITY_DELTA >= 1
    return Snapshot(
        index=cluster.index,
        job=job,
        nodes=cluster.nodes,
        allocations=allocations,
        usage=cluster.usage,
        job_versions=versions,
        config=config,
        preemptible=_preemptible(rows.preemptible) if preempting else {},
        deployment=_deployment(rows.deployment),
        volume_claims=_claims(rows.claims),
    )


def _claims(rows: list[Mapping[str, object]]) -> tuple[VolumeClaim, ...]:
    return tuple(
        VolumeClaim(
            id=cast(uuid.UUID, r["id"]),
            task_group=str(r["task_group"]),
            alloc_id=cast(uuid.UUID, r["alloc_id"]),
            volume_id=cast(uuid.UUID, r["volume_id"]),
            volume_name=str(r["volume_name"]),
            node_id=cast(uuid.UUID, r["node_id"]),
        )
        for r in rows
    )


def _deployment(row: Mapping[str, object] | None) -> Deployment | None:
    return None if row is None else deployment_from_mapping(row)


def _preemptible(rows: Rows) -> dict[uuid.UUID, tuple[RunningAllocation, ...]]:
    """Other jobs' live work far enough below this job's priority to be evicted, per node."""
    by_node: dict[uuid.UUID, list[RunningAllocation]] = defaultdict(list)
    for r in rows.fetchall():
        by_node[r["node_id"]].append(RunningAllocation(allocation_from_row(r), r["job_priority"], r["max_parallel"]))
    return {node_id: tuple(items) for node_id, items in by_node.items()}


def _versions(rows: list[VersionRow]) -> dict[int, Job]:
    return {
        int(v["version"]): Job.from_spec(v["spec"], version=v["version"], job_modify_index=v["job_modify_index"])
        for v in rows
    }


def _job_state(rows: _JobRows) -> tuple[Job | None, tuple[Allocation, ...], dict[int, Job]]:
    row = rows.job
    allocations = tuple(allocation_from_row(r) for r in rows.allocations)
    versions = _versions(rows.versions)  # empty when the job is gone (the query checks purged_at too)
    if row is None or row["purged_at"] is not None:
        return None, allocations, {}
    job = Job.from_spec(
        row["spec"], version=row["version"], job_modify_index=row["job_modify_index"], create_index=row["create_index"]
    )
    return job, allocations, versions


class UsageCache:
    """Every node's usage as of a safe index (`known`), kept up to date from the rows changed
    since: a worker's snapshots read only the node_usage rows stamped above the safe index of its
    previous one (a handful per evaluation) instead of a row for every node in use. The rows
    hold totals, not deltas, so reading a row again is harmless. Ports held by allocations are
    read whole for every snapshot (snapshot_ports) and laid over the cached resources."""

    def __init__(self) -> None:
        self.known: int | None = None
        self._resources: dict[uuid.UUID, NodeUsage] = {}

    def decode(
        self, safe: int, rows: list[tuple[Any, ...]], ports: list[tuple[Any, ...]]
    ) -> dict[uuid.UUID, NodeUsage]:
        cached = self._resources
        for node_id, cpu, memory_mb, disk_mb, live_allocs in rows:
            if live_allocs > 0:
                cached[node_id] = NodeUsage(Resources(cpu=int(cpu), memory_mb=int(memory_mb), disk_mb=int(disk_mb)))
            else:
                cached.pop(node_id, None)
        self.known = safe
        usage = dict(cached)
        held: dict[uuid.UUID, set[int]] = defaultdict(set)
        cores: dict[uuid.UUID, set[int]] = defaultdict(set)
        for node_id, host_ports, reserved_cores in ports:
            held[node_id].update(host_ports)
            if reserved_cores:
                cores[node_id].update(reserved_cores)
        for node_id in held.keys() | cores.keys():  # with or without resources of their own
            base = usage.get(node_id)
            usage[node_id] = NodeUsage(
                base.resources if base else Resources(), frozenset(held[node_id]), frozenset(cores.get(node_id, ()))
            )
        return usage

    def keep_only(self, node_ids: Mapping[uuid.UUID, object]) -> None:
        """Drop the usage of nodes that are gone: their rows went with them, unreported."""
        self._resources = {n: u for n, u in self._resources.items() if n in node_ids}
