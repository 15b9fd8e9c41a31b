"""Nodes to Nomad's JSON shapes: the Node (its resources with the amounts the columns hold
merged in) and its list stub."""

from __future__ import annotations

from typing import cast

from app.models import Node
from app.wire.node import (
    NodeCpuResourcesJson,
    NodeDiskResourcesJson,
    NodeEligibility,
    NodeJson,
    NodeListStubJson,
    NodeMemoryResourcesJson,
    NodeReservedCpuResourcesJson,
    NodeReservedDiskResourcesJson,
    NodeReservedMemoryResourcesJson,
    NodeReservedNetworkResourcesJson,
    NodeReservedResourcesJson,
    NodeResourcesJson,
    NodeStatus,
)


def node(row: Node) -> NodeJson:
    return {
        "ID": str(row.id),
        "SecretID": "",  # never sent, as Nomad's Sanitize does for node reads
        "Datacenter": row.datacenter,
        "Name": row.name,
        "CgroupParent": "",
        # Advertised to no API client: the node's endpoint answers only the servers' signed
        # requests, so Nomad's API clients, finding no address, ask the servers, which proxy
        # (docs/security.md, "Nomad's API clients and the node's address").
        "HTTPAddr": "",
        "TLSEnabled": False,
        "Attributes": row.attributes,
        "NodeResources": _node_resources(row),
        "ReservedResources": _reserved_resources(row),
        "Links": None,
        "Meta": row.meta,
        "NodeClass": row.node_class,
        "NodePool": row.node_pool,
        "ComputedClass": row.computed_class,
        "DrainStrategy": row.drain_strategy,
        # The columns' CHECK constraints hold these to Nomad's values.
        "SchedulingEligibility": cast(NodeEligibility, row.scheduling_eligibility),
        "Status": cast(NodeStatus, row.status),
        "StatusDescription": row.status_description,
        "IdentitySigningKeyID": "",
        "StatusUpdatedAt": int(row.status_updated_at.timestamp()),
        "Events": None,
        "Drivers": row.drivers,
        "CSIControllerPlugins": None,
        "CSINodePlugins": None,
        "HostVolumes": row.host_volumes or None,
        "GCVolumesOnNodeGC": False,
        "HostNetworks": None,
        "LastDrain": row.last_drain,
        "NodeMaxAllocs": 0,
        "LastMissedHeartbeatIndex": 0,
        "LastAllocUpdateIndex": 0,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


def _node_resources(row: Node) -> NodeResourcesJson:
    """The object as the client sent it, with the amounts the columns hold merged in."""
    resources = row.node_resources.copy()
    cpu = resources.get("Cpu") or NodeCpuResourcesJson()
    resources["Cpu"] = {**cpu, "CpuShares": row.cpu_shares}
    memory = resources.get("Memory") or NodeMemoryResourcesJson()
    resources["Memory"] = {**memory, "MemoryMB": row.memory_mb}
    disk = resources.get("Disk") or NodeDiskResourcesJson()
    resources["Disk"] = {**disk, "DiskMB": row.disk_mb}
    return resources


def _reserved_resources(row: Node) -> NodeReservedResourcesJson:
    """The object as the client sent it, with the amounts the columns hold merged in."""
    reserved = row.reserved_resources.copy()
    cpu = reserved.get("Cpu") or NodeReservedCpuResourcesJson()
    reserved["Cpu"] = {**cpu, "CpuShares": row.reserved_cpu}
    memory = reserved.get("Memory") or NodeReservedMemoryResourcesJson()
    reserved["Memory"] = {**memory, "MemoryMB": row.reserved_memory_mb}
    disk = reserved.get("Disk") or NodeReservedDiskResourcesJson()
    reserved["Disk"] = {**disk, "DiskMB": row.reserved_disk_mb}
    networks = reserved.get("Networks") or NodeReservedNetworkResourcesJson()
    reserved["Networks"] = {**networks, "ReservedHostPorts": row.reserved_ports}
    return reserved


def node_stub(row: Node) -> NodeListStubJson:
    return {
        "ID": str(row.id),
        "Datacenter": row.datacenter,
        "Name": row.name,
        "NodeClass": row.node_class,
        "NodePool": row.node_pool,
        "Version": str(row.attributes.get("nomad.version", "")),
        "Address": str(row.attributes.get("unique.network.ip-address", "")),
        "Drain": row.drain,
        "SchedulingEligibility": cast(NodeEligibility, row.scheduling_eligibility),
        "Status": cast(NodeStatus, row.status),
        "StatusDescription": row.status_description,
        "Drivers": row.drivers,
        "HostVolumes": row.host_volumes or None,
        "LastDrain": row.last_drain,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }
