"""The keys of Nomad's job structs, as Nomad's HTTP API sends and accepts them.

Output follows ``nomad/structs`` (what ``GET /v1/job/:id`` encodes); input also takes the
few keys only the ``api`` package has (``Job.Reschedule``, ``Job.Migrate``...), which Nomad
folds into the groups. Each key maps to the value Nomad sends when the job does not set
it: Go's zero value (``None`` for pointers, slices and maps), or a ``Nested`` struct that
is canonicalised in turn. Blocks corral keeps without reading (services, templates,
vault...) are plain values: their contents pass through as the client wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Taken from Nomad's source (nomad/structs/structs.go, group.go; api/jobs.go, api/tasks.go,
# api/resources.go) at commit aa026cc99cfb74a77e519a1c1f0c78ba1b452705.


@dataclass(frozen=True)
class Nested:
    """A struct-typed key: ``shape`` names its entry in ``SHAPES``.

    ``many``: a list of such structs. ``filled``: Nomad always sends the struct (its
    Canonicalize creates it), so an unset one is rendered from the shape's defaults.
    """

    shape: str
    many: bool = False
    filled: bool = False


@dataclass(frozen=True)
class OmitEmpty:
    """A key Go encodes with ``omitempty``: sent only when it has a value."""


OMIT_EMPTY = OmitEmpty()
Slot = Nested | OmitEmpty | Any

_CONSTRAINTS = Nested("Constraint", many=True)
_AFFINITIES = Nested("Affinity", many=True)
_NETWORKS = Nested("NetworkResource", many=True)
_UPDATE = Nested("UpdateStrategy")

SHAPES: dict[str, dict[str, Slot]] = {
    "Job": {
        "Stop": False,
        "Region": "",
        "Namespace": "",
        "ID": "",
        "ParentID": "",
        "Name": "",
        "Type": "",
        "Priority": 0,
        "AllAtOnce": False,
        "Datacenters": None,
        "NodePool": "",
        "Constraints": _CONSTRAINTS,
        "Affinities": _AFFINITIES,
        "Spreads": Nested("Spread", many=True),
        "TaskGroups": Nested("TaskGroup", many=True),
        # A value, not a pointer, in Nomad: always sent (canonical.py keeps two of its keys).
        "Update": Nested("UpdateStrategy", filled=True),
        "Multiregion": None,
        "Periodic": Nested("PeriodicConfig"),
        "ParameterizedJob": Nested("ParameterizedJobConfig"),
        "Dispatched": False,
        "DispatchIdempotencyToken": "",
        "Payload": None,
        "Meta": None,
        "ConsulNamespace": "",
        "VaultNamespace": "",
        "NomadTokenID": "",
        "Status": "",
        "StatusDescription": "",
        "Stable": False,
        "Version": 0,
        "SubmitTime": 0,
        "CreateIndex": 0,
        "ModifyIndex": 0,
        "JobModifyIndex": 0,
        "UI": Nested("JobUIConfig"),
        "VersionTag": None,
    },
    "TaskGroup": {
        "Name": "",
        "Count": 0,
        "Update": _UPDATE,
        "Migrate": Nested("MigrateStrategy"),
        "Constraints": _CONSTRAINTS,
        "Scaling": Nested("ScalingPolicy"),
        "RestartPolicy": Nested("RestartPolicy"),
        "Disconnect": Nested("DisconnectStrategy"),
        "Tasks": Nested("Task", many=True),
        "EphemeralDisk": Nested("EphemeralDisk", filled=True),
        "Meta": None,
        "ReschedulePolicy": Nested("ReschedulePolicy"),
        "Affinities": _AFFINITIES,
        "Spreads": Nested("Spread", many=True),
        "Networks": _NETWORKS,
        "Consul": None,
        "Services": None,
        "Volumes": None,
        "ShutdownDelay": None,
        "MaxRunDuration": None,
        "StopAfterClientDisconnect": None,
        "MaxClientDisconnect": None,
        "PreventRescheduleOnLost": False,
    },
    "Task": {
        "Name": "",
        "Driver": "",
        "User": "",
        "Config": None,
        "Env": None,
        "Services": None,
        "Vault": None,
        "Secrets": None,
        "Consul": None,
        "Templates": Nested("Template", many=True),
        "Constraints": _CONSTRAINTS,
        "Affinities": _AFFINITIES,
        "Resources": Nested("Resources", filled=True),
        "RestartPolicy": Nested("RestartPolicy"),
        "DispatchPayload": Nested("DispatchPayloadConfig"),
        "Lifecycle": Nested("TaskLifecycleConfig"),
        "Meta": None,
        "KillTimeout": 0,
        "LogConfig": Nested("LogConfig", filled=True),
        "Artifacts": None,
        "Leader": False,
        "ShutdownDelay": 0,
        "VolumeMounts": None,
        "ScalingPolicies": None,
        "KillSignal": "",
        "Kind": "",
        "CSIPluginConfig": None,
        "Identity": None,
        "Identities": None,
        "Actions": None,
        "Schedule": None,
    },
    # Nomad's task Canonicalize fills CPU and MemoryMB; the stored spec already has them.
    "Resources": {
        "CPU": 0,
        "Cores": 0,
        "MemoryMB": 0,
        "MemoryMaxMB": 0,
        "DiskMB": 0,
        "IOPS": 0,
        "Networks": _NETWORKS,
        "Devices": None,
        "NUMA": None,
        "SecretsMB": 0,
    },
    "UpdateStrategy": {
        "Stagger": 0,
        "MaxParallel": 0,
        "HealthCheck": "",
        "MinHealthyTime": 0,
        "HealthyDeadline": 0,
        "ProgressDeadline": 0,
        "AutoRevert": False,
        "AutoPromote": False,
        "Canary": 0,
    },
    "MigrateStrategy": {"MaxParallel": 0, "HealthCheck": "", "MinHealthyTime": 0, "HealthyDeadline": 0},
    "ReschedulePolicy": {
        "Attempts": 0,
        "Interval": 0,
        "Delay": 0,
        "DelayFunction": "",
        "MaxDelay": 0,
        "Unlimited": False,
    },
    "RestartPolicy": {"Attempts": 0, "Interval": 0, "Delay": 0, "Mode": "", "RenderTemplates": False},
    # Nomad's DefaultEphemeralDisk and DefaultLogConfig.
    "EphemeralDisk": {"Sticky": False, "SizeMB": 300, "Migrate": False},
    "LogConfig": {"MaxFiles": 10, "MaxFileSizeMB": 10, "Disabled": False},
    "Constraint": {"LTarget": "", "RTarget": "", "Operand": ""},
    "Affinity": {"LTarget": "", "RTarget": "", "Operand": "", "Weight": 0},
    "Spread": {"Attribute": "", "Weight": 0, "SpreadTarget": Nested("SpreadTarget", many=True)},
    "SpreadTarget": {"Value": "", "Percent": 0},
    "NetworkResource": {
        "Mode": "",
        "Device": "",
        "CIDR": "",
        "IP": "",
        "Hostname": OMIT_EMPTY,
        "MBits": 0,
        "DNS": None,
        "ReservedPorts": Nested("Port", many=True),
        "DynamicPorts": Nested("Port", many=True),
        "CNI": None,
    },
    "Port": {"Label": "", "Value": 0, "To": 0, "HostNetwork": "", "IgnoreCollision": False},
    "PeriodicConfig": {
        "Enabled": False,
        "Spec": "",
        "Specs": None,
        "SpecType": "",
        "ProhibitOverlap": False,
        "TimeZone": "",
    },
    "ParameterizedJobConfig": {"Payload": "", "MetaRequired": None, "MetaOptional": None},
    "TaskLifecycleConfig": {"Hook": "", "Sidecar": False},
    "Template": {
        "SourcePath": "",
        "DestPath": "",
        "EmbeddedTmpl": "",
        "ChangeMode": "",
        "ChangeSignal": "",
        "ChangeScript": Nested("ChangeScript"),
        "Splay": 0,
        "Perms": "",
        "Uid": None,
        "Gid": None,
        "LeftDelim": "",
        "RightDelim": "",
        "Envvars": False,
        "VaultGrace": 0,
        "Wait": Nested("WaitConfig"),
        "ErrMissingKey": False,
    },
    "ChangeScript": {"Command": "", "Args": None, "Timeout": 0, "FailOnError": False},
    "WaitConfig": {"Min": None, "Max": None},
    "DispatchPayloadConfig": {"File": ""},
    # Nomad 1.9+'s ui block: a description and links the web UI shows with the job.
    "JobUIConfig": {"Description": "", "Links": Nested("JobUILink", many=True)},
    "JobUILink": {"Label": "", "URL": ""},
    "ScalingPolicy": {
        "ID": "",
        "Type": "",
        "Target": None,
        "Policy": None,
        "Min": 0,
        "Max": 0,
        "Enabled": False,
        "CreateIndex": 0,
        "ModifyIndex": 0,
    },
    # Nomad's DisconnectStrategy.Canonicalize fills Replace and Reconcile of a set block.
    "DisconnectStrategy": {"LostAfter": 0, "StopOnClientAfter": None, "Replace": True, "Reconcile": "best_score"},
}

# Keys the api package accepts that nomad/structs does not carry: Nomad merges the job's
# Reschedule and Migrate into its groups, reads LogConfig.Enabled as the inverse of
# Disabled, and takes a scaling policy's namespace from the job. VaultToken and
# ConsulToken were api.Job fields until Nomad 1.9; older CLIs (and job files) still send them.
INPUT_ONLY: dict[str, frozenset[str]] = {
    "Job": frozenset({"Reschedule", "Migrate", "VaultToken", "ConsulToken"}),
    "LogConfig": frozenset({"Enabled"}),
    "ScalingPolicy": frozenset({"Namespace"}),
}
# Input-only keys whose value is itself a struct to check.
INPUT_NESTED: dict[str, dict[str, Nested]] = {
    "Job": {"Reschedule": Nested("ReschedulePolicy"), "Migrate": Nested("MigrateStrategy")},
}


def accepted_keys(shape: str) -> frozenset[str]:
    """The keys a registration may carry in a struct of this shape."""
    return frozenset(SHAPES[shape]) | INPUT_ONLY.get(shape, frozenset())


def nested_slots(shape: str) -> dict[str, Nested]:
    """The struct-typed keys of a shape, input-only ones included."""
    slots = {key: slot for key, slot in SHAPES[shape].items() if isinstance(slot, Nested)}
    return {**slots, **INPUT_NESTED.get(shape, {})}
