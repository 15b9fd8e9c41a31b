"""The one codec between the typed plan (app.structs) and its stored JSON.

The worker encodes a `Plan` into a `plans` row, the applier decodes that row back into the same
`Plan` and records a `PlanResult` that the worker decodes again; `job plan` and evaluations use
the placement metrics' JSON. The TypedDicts below are the wire format, so mypy checks both sides
of it. decode(encode(x)) == x for every well-formed plan: one whose allocations sit under their
own node and belong to the namespace and job the row names (the row holds those once, not per
allocation).

The format is the one rows were always written in; keys added since are optional, and a row
written without them decodes to the values a fresh placement has."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from app.pipeline.codecs.metrics_codec import placed_text
from app.store.deployment.deployment_codec import deployment_from_json, deployment_to_json
from app.structs import (
    Allocation,
    AllocationStop,
    ClaimedVolume,
    DeploymentStatusUpdate,
    EncodedMetrics,
    Plan,
    PlanResult,
    Port,
    Resources,
    TaskCores,
)
from app.wire.plan import (
    AllocatedTaskJson,
    AllocJson,
    PlanResultJson,
    PlanRowJson,
    PortJson,
    ResourcesJson,
    StatusUpdateJson,
    StopJson,
)

# --- the plan ------------------------------------------------------------------------------


def encode_plan(plan: Plan, namespace: str, job_id: str, *, text_metrics: bool = True) -> PlanRowJson:
    """The plan's row. `text_metrics`: the placements' metrics go beside the JSON
    (placement_metrics, revision 0037); without, inside each placement's JSON, as on the schema
    before it (app.pipeline.metrics_columns)."""
    if text_metrics:
        node_allocation, lines = _allocs_and_metrics(plan)
    else:
        node_allocation = {str(n): [alloc_to_json(a) for a in allocs] for n, allocs in plan.node_allocation.items()}
    row: PlanRowJson = {
        "eval_id": plan.eval_id,
        "priority": plan.priority,
        "snapshot_index": plan.snapshot_index,
        "all_at_once": plan.all_at_once,
        "namespace": namespace,
        "job_id": job_id,
        "node_update": _stops_by_node(plan.node_update),
        "node_allocation": node_allocation,
        "node_preemptions": _stops_by_node(plan.node_preemptions),
        "deployment": deployment_to_json(plan.deployment) if plan.deployment else None,
        "deployment_updates": [status_update_to_json(u) for u in plan.deployment_updates],
    }
    if text_metrics:
        row["placement_metrics"] = lines
    return row


def _allocs_and_metrics(plan: Plan) -> tuple[dict[str, list[AllocJson]], str | None]:
    """The placements' JSON without their metrics, and the metrics beside it (the
    `placement_metrics` column): a line per placement, its allocation ID (as its JSON spelled
    it, in the same walk), a space and placed_text. Inside the JSON they were a string each,
    escaped on the way in and parsed by Postgres as jsonb; here they are text end to end, into
    allocations.placement_metrics as they came. None: no metrics."""
    by_node: dict[str, list[AllocJson]] = {}
    lines: list[str] = []
    for n, allocs in plan.node_allocation.items():
        encoded = by_node[str(n)] = []
        for a in allocs:
            placed = alloc_to_json(a, with_metrics=False)
            encoded.append(placed)
            if a.metrics is not None:
                lines.append(f"{placed['ID']} {placed_text(a.metrics)}\n")
    return by_node, ("".join(lines) if lines else None)


def metrics_by_alloc(lines: str | None) -> dict[str, EncodedMetrics]:
    """The placement_metrics lines read back, by the allocation ID as its JSON spells it."""
    if not lines:
        return {}
    out: dict[str, EncodedMetrics] = {}
    for line in lines.splitlines():
        alloc_id, _, text = line.partition(" ")
        out[alloc_id] = text
    return out


def decode_plan(row: PlanRowJson) -> Plan:
    namespace, job_id = row["namespace"], row["job_id"]
    return Plan(
        eval_id=row["eval_id"],
        priority=row["priority"],
        snapshot_index=row["snapshot_index"],
        all_at_once=row["all_at_once"],
        node_update=_stops_from_nodes(row["node_update"]),
        node_allocation=_allocs_from_nodes(
            row["node_allocation"], namespace, job_id, metrics_by_alloc(row.get("placement_metrics"))
        ),
        node_preemptions=_stops_from_nodes(row["node_preemptions"]),
        deployment=deployment_from_json(row["deployment"]) if row["deployment"] else None,
        deployment_updates=tuple(status_update_from_json(u) for u in row["deployment_updates"] or ()),
    )


def _allocs_from_nodes(
    items: Mapping[str, list[AllocJson]], namespace: str, job_id: str, metrics: Mapping[str, EncodedMetrics]
) -> dict[uuid.UUID, tuple[Allocation, ...]]:
    """Each node's ID parsed once, not once per allocation on it (and its allocations share that one UUID)."""
    out: dict[uuid.UUID, tuple[Allocation, ...]] = {}
    for n, allocs in items.items():
        node_id = uuid.UUID(n)
        out[node_id] = tuple(alloc_from_json(a, node_id, namespace, job_id, metrics) for a in allocs)
    return out


def _stops_by_node(items: Mapping[uuid.UUID, tuple[AllocationStop, ...]]) -> dict[str, list[StopJson]]:
    return {str(n): [stop_to_json(s) for s in stops] for n, stops in items.items()}


def _stops_from_nodes(items: Mapping[str, list[StopJson]]) -> dict[uuid.UUID, tuple[AllocationStop, ...]]:
    return {uuid.UUID(n): tuple(stop_from_json(s) for s in stops) for n, stops in items.items()}


def resources_to_json(r: Resources) -> ResourcesJson:
    return {"CPU": r.cpu, "MemoryMB": r.memory_mb, "MemoryMaxMB": r.memory_max_mb, "DiskMB": r.disk_mb}


def resources_from_json(raw: ResourcesJson) -> Resources:
    return _resources(raw["CPU"], raw["MemoryMB"], raw["DiskMB"], raw.get("MemoryMaxMB", 0))


# A plan can carry tens of thousands of allocations that share a few shapes and one evaluation:
# decode each shape and shared ID once (the values are frozen, so sharing them is safe).
@lru_cache(maxsize=4096)
def _resources(cpu: int, memory_mb: int, disk_mb: int, memory_max_mb: int) -> Resources:
    return Resources(cpu=cpu, memory_mb=memory_mb, disk_mb=disk_mb, memory_max_mb=memory_max_mb)


@lru_cache(maxsize=4096)
def _shared_id(value: str) -> uuid.UUID:
    return uuid.UUID(value)


def ports_to_json(ports: tuple[Port, ...]) -> list[PortJson]:
    return [{"Label": p.label, "Value": p.value, "To": p.to, "HostNetwork": p.host_network} for p in ports]


def ports_from_json(raw: list[PortJson]) -> tuple[Port, ...]:
    if not raw:  # most placements: skip building a generator for nothing
        return ()
    return tuple(Port(p["Label"], p["Value"], p["To"], p["HostNetwork"]) for p in raw)


def alloc_to_json(a: Allocation, *, with_metrics: bool = True) -> AllocJson:
    out: AllocJson = {
        "ID": str(a.id),
        "Name": a.name,
        "JobVersion": a.job_version,
        "TaskGroup": a.task_group,
        "NodeName": a.node_name,
        "EvalID": str(a.eval_id),
        "Resources": resources_to_json(a.resources),
        "Ports": ports_to_json(a.ports),
        "PreviousAllocation": _str_or_none(a.previous_allocation),
        "PreemptedAllocations": [str(p) for p in a.preempted_allocations],
        "RescheduleTracker": a.reschedule_tracker,
        "DeploymentID": _str_or_none(a.deployment_id),
        "Canary": a.canary,
    }
    if a.desired_status != "run":
        out["DesiredStatus"] = a.desired_status
    if a.client_status != "pending":
        out["ClientStatus"] = a.client_status
    if a.followup_eval_id is not None:
        out["FollowupEvalID"] = str(a.followup_eval_id)
    if a.desired_transition:
        out["DesiredTransition"] = a.desired_transition
    if a.create_index:
        out["CreateIndex"] = a.create_index
    if a.modify_index:
        out["ModifyIndex"] = a.modify_index
    if a.healthy is not None:
        out["Healthy"] = a.healthy
    if with_metrics and a.metrics is not None:
        out["Metrics"] = placed_text(a.metrics)
    if a.task_cores:
        out["Tasks"] = task_cores_to_json(a.task_cores)
    if a.claims:
        out["VolumeClaims"] = [{"VolumeID": str(c.volume_id), "VolumeName": c.name} for c in a.claims]
    return out


def task_cores_to_json(task_cores: tuple[TaskCores, ...]) -> dict[str, AllocatedTaskJson]:
    """Nomad's AllocatedResources.Tasks for the tasks given whole cores."""
    return {t.task: {"Cpu": {"CpuShares": t.cpu, "ReservedCores": list(t.cores)}} for t in task_cores}


def task_cores_from_json(raw: object) -> tuple[TaskCores, ...]:
    """The tasks of AllocatedResources.Tasks that hold whole cores (others are not kept)."""
    if not isinstance(raw, dict):
        return ()
    found = []
    for task, allocated in raw.items():
        cpu = allocated.get("Cpu") if isinstance(allocated, dict) else None
        if isinstance(cpu, dict) and cpu.get("ReservedCores"):
            cores = tuple(int(c) for c in cpu["ReservedCores"])
            found.append(TaskCores(str(task), cores, int(cpu.get("CpuShares") or 0)))
    return tuple(found)


def alloc_from_json(
    raw: AllocJson,
    node_id: uuid.UUID,
    namespace: str,
    job_id: str,
    metrics: Mapping[str, EncodedMetrics] = MappingProxyType({}),
) -> Allocation:
    """`metrics`: the plan's placement_metrics by allocation ID; a plan of an older worker carries
    them in the allocation's own `Metrics` instead."""
    followup = raw.get("FollowupEvalID")
    return Allocation(
        id=uuid.UUID(raw["ID"]),
        namespace=namespace,
        job_id=job_id,
        job_version=raw["JobVersion"],
        task_group=raw["TaskGroup"],
        name=raw["Name"],
        node_id=node_id,
        eval_id=_shared_id(raw["EvalID"]),
        desired_status=raw.get("DesiredStatus", "run"),
        client_status=raw.get("ClientStatus", "pending"),
        resources=resources_from_json(raw["Resources"]),
        ports=ports_from_json(raw["Ports"]),
        previous_allocation=_uuid_or_none(raw.get("PreviousAllocation")),
        deployment_id=_shared_id(deployment) if (deployment := raw.get("DeploymentID")) else None,
        followup_eval_id=_uuid_or_none(followup),
        reschedule_tracker=raw.get("RescheduleTracker"),
        desired_transition=raw.get("DesiredTransition", {}),
        node_name=raw.get("NodeName", ""),
        create_index=raw.get("CreateIndex", 0),
        modify_index=raw.get("ModifyIndex", 0),
        preempted_allocations=tuple(uuid.UUID(p) for p in preempted)
        if (preempted := raw.get("PreemptedAllocations"))
        else (),
        healthy=raw.get("Healthy"),
        canary=raw.get("Canary", False),
        metrics=metrics.get(raw["ID"]) or _inline_metrics(raw),  # written as it came
        task_cores=task_cores_from_json(raw["Tasks"]) if "Tasks" in raw else (),
        claims=tuple(ClaimedVolume(uuid.UUID(c["VolumeID"]), c["VolumeName"]) for c in raw["VolumeClaims"])
        if "VolumeClaims" in raw
        else (),
    )


def _inline_metrics(raw: AllocJson) -> EncodedMetrics | None:
    return raw.get("Metrics") or None


def stop_to_json(s: AllocationStop) -> StopJson:
    return {
        "AllocID": str(s.alloc_id),
        "DesiredStatus": s.desired_status,
        "Description": s.description,
        "ClientStatus": s.client_status,
        "PreemptedByAllocation": _str_or_none(s.preempted_by),
    }


def stop_from_json(raw: StopJson) -> AllocationStop:
    return AllocationStop(
        uuid.UUID(raw["AllocID"]),
        raw["DesiredStatus"],
        raw["Description"],
        raw.get("ClientStatus"),
        _uuid_or_none(raw.get("PreemptedByAllocation")),
    )


def status_update_to_json(u: DeploymentStatusUpdate) -> StatusUpdateJson:
    return {"DeploymentID": str(u.deployment_id), "Status": u.status, "StatusDescription": u.description}


def status_update_from_json(raw: StatusUpdateJson) -> DeploymentStatusUpdate:
    return DeploymentStatusUpdate(uuid.UUID(raw["DeploymentID"]), raw["Status"], raw["StatusDescription"])


# --- the plan result -----------------------------------------------------------------------


def encode_result(result: PlanResult) -> PlanResultJson:
    return {
        "node_update": _ids_by_node(result.node_update),
        "node_allocation": _ids_by_node(result.node_allocation),
        "node_preemptions": _ids_by_node(result.node_preemptions),
        "rejected_nodes": [str(n) for n in result.rejected_nodes],
        "refresh_index": result.refresh_index,
        "alloc_index": result.alloc_index,
    }


def decode_result(row: PlanResultJson) -> PlanResult:
    return PlanResult(
        node_update=_ids_from_nodes(row["node_update"]),
        node_allocation=_ids_from_nodes(row["node_allocation"]),
        node_preemptions=_ids_from_nodes(row["node_preemptions"]),
        rejected_nodes=tuple(uuid.UUID(n) for n in row["rejected_nodes"]),
        refresh_index=row["refresh_index"],
        alloc_index=row["alloc_index"],
    )


def _ids_by_node(items: Mapping[uuid.UUID, tuple[uuid.UUID, ...]]) -> dict[str, list[str]]:
    return {str(n): [str(i) for i in ids] for n, ids in items.items()}


def _ids_from_nodes(items: Mapping[str, list[str]]) -> dict[uuid.UUID, tuple[uuid.UUID, ...]]:
    return {uuid.UUID(n): tuple(uuid.UUID(i) for i in ids) for n, ids in items.items()}


def _str_or_none(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    return uuid.UUID(value) if value else None
