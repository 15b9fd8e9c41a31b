"""The JSON keys of Nomad's structs, the oracle of the API shape tests.

Read off Nomad's Go source (github.com/hashicorp/nomad at commit
aa026cc99cfb74a77e519a1c1f0c78ba1b452705): the exported fields of each struct in
declaration order, minus ``json:"-"`` ones. Nomad's HTTP API encodes the server-side
``nomad/structs`` types, so those are the lists; keys tagged
``omitempty`` (sent only when they have a value) are noted beside them. Written out by hand: the tests
compare corral's output with these lists, not with corral's own tables
(app/jobspec/shapes.py).
"""

from __future__ import annotations

# nomad/structs/structs.go: Job
JOB = [
    "Stop",
    "Region",
    "Namespace",
    "ID",
    "ParentID",
    "Name",
    "Type",
    "Priority",
    "AllAtOnce",
    "Datacenters",
    "NodePool",
    "Constraints",
    "Affinities",
    "Spreads",
    "TaskGroups",
    "Update",
    "Multiregion",
    "Periodic",
    "ParameterizedJob",
    "Dispatched",
    "DispatchIdempotencyToken",
    "Payload",
    "Meta",
    "ConsulNamespace",
    "VaultNamespace",
    "NomadTokenID",
    "Status",
    "StatusDescription",
    "Stable",
    "Version",
    "SubmitTime",
    "CreateIndex",
    "ModifyIndex",
    "JobModifyIndex",
    "UI",
    "VersionTag",
]

# nomad/structs/structs.go: TaskGroup
TASK_GROUP = [
    "Name",
    "Count",
    "Update",
    "Migrate",
    "Constraints",
    "Scaling",
    "RestartPolicy",
    "Disconnect",
    "Tasks",
    "EphemeralDisk",
    "Meta",
    "ReschedulePolicy",
    "Affinities",
    "Spreads",
    "Networks",
    "Consul",
    "Services",
    "Volumes",
    "ShutdownDelay",
    "MaxRunDuration",
    "StopAfterClientDisconnect",
    "MaxClientDisconnect",
    "PreventRescheduleOnLost",
]

# nomad/structs/structs.go: Task
TASK = [
    "Name",
    "Driver",
    "User",
    "Config",
    "Env",
    "Services",
    "Vault",
    "Secrets",
    "Consul",
    "Templates",
    "Constraints",
    "Affinities",
    "Resources",
    "RestartPolicy",
    "DispatchPayload",
    "Lifecycle",
    "Meta",
    "KillTimeout",
    "LogConfig",
    "Artifacts",
    "Leader",
    "ShutdownDelay",
    "VolumeMounts",
    "ScalingPolicies",
    "KillSignal",
    "Kind",
    "CSIPluginConfig",
    "Identity",
    "Identities",
    "Actions",
    "Schedule",
]

RESOURCES = ["CPU", "Cores", "MemoryMB", "MemoryMaxMB", "DiskMB", "IOPS", "Networks", "Devices", "NUMA", "SecretsMB"]
UPDATE_STRATEGY = [
    "Stagger",
    "MaxParallel",
    "HealthCheck",
    "MinHealthyTime",
    "HealthyDeadline",
    "ProgressDeadline",
    "AutoRevert",
    "AutoPromote",
    "Canary",
]
MIGRATE_STRATEGY = ["MaxParallel", "HealthCheck", "MinHealthyTime", "HealthyDeadline"]
RESCHEDULE_POLICY = ["Attempts", "Interval", "Delay", "DelayFunction", "MaxDelay", "Unlimited"]
RESTART_POLICY = ["Attempts", "Interval", "Delay", "Mode", "RenderTemplates"]
EPHEMERAL_DISK = ["Sticky", "SizeMB", "Migrate"]
LOG_CONFIG = ["MaxFiles", "MaxFileSizeMB", "Disabled"]
CONSTRAINT = ["LTarget", "RTarget", "Operand"]
AFFINITY = ["LTarget", "RTarget", "Operand", "Weight"]
SPREAD = ["Attribute", "Weight", "SpreadTarget"]
SPREAD_TARGET = ["Value", "Percent"]
# NetworkResource.Hostname is omitempty.
NETWORK_RESOURCE = ["Mode", "Device", "CIDR", "IP", "MBits", "DNS", "ReservedPorts", "DynamicPorts", "CNI"]
PORT = ["Label", "Value", "To", "HostNetwork", "IgnoreCollision"]
PERIODIC_CONFIG = ["Enabled", "Spec", "Specs", "SpecType", "ProhibitOverlap", "TimeZone"]
PARAMETERIZED_JOB_CONFIG = ["Payload", "MetaRequired", "MetaOptional"]
TASK_LIFECYCLE_CONFIG = ["Hook", "Sidecar"]
DISPATCH_PAYLOAD_CONFIG = ["File"]
SCALING_POLICY = ["ID", "Type", "Target", "Policy", "Min", "Max", "Enabled", "CreateIndex", "ModifyIndex"]
# nomad/structs/group.go: DisconnectStrategy
DISCONNECT_STRATEGY = ["LostAfter", "StopOnClientAfter", "Replace", "Reconcile"]

# nomad/structs/eval.go: Evaluation
EVALUATION = [
    "ID",
    "Namespace",
    "Priority",
    "Type",
    "TriggeredBy",
    "JobID",
    "JobModifyIndex",
    "NodeID",
    "NodeModifyIndex",
    "DeploymentID",
    "Status",
    "StatusDescription",
    "Wait",
    "WaitUntil",
    "NextEval",
    "PreviousEval",
    "BlockedEval",
    "RelatedEvals",
    "FailedTGAllocs",
    "PlanAnnotations",
    "ClassEligibility",
    "QuotaLimitReached",
    "MissingNonNodeResources",
    "EscapedComputedClass",
    "AnnotatePlan",
    "QueuedAllocations",
    "LeaderACL",
    "SnapshotIndex",
    "CreateIndex",
    "ModifyIndex",
    "CreateTime",
    "ModifyTime",
]
# nomad/structs/eval.go: EvaluationStub (the RelatedEvals entries)
EVALUATION_STUB = [
    "ID",
    "Namespace",
    "Priority",
    "Type",
    "TriggeredBy",
    "JobID",
    "NodeID",
    "DeploymentID",
    "Status",
    "StatusDescription",
    "WaitUntil",
    "NextEval",
    "PreviousEval",
    "BlockedEval",
    "CreateIndex",
    "ModifyIndex",
    "CreateTime",
    "ModifyTime",
]

# nomad/structs/alloc.go: Allocation
ALLOCATION = [
    "ID",
    "Namespace",
    "EvalID",
    "Name",
    "NodeID",
    "NodeName",
    "JobID",
    "Job",
    "TaskGroup",
    "Resources",
    "SharedResources",
    "TaskResources",
    "AllocatedResources",
    "Metrics",
    "DesiredStatus",
    "DesiredDescription",
    "DesiredTransition",
    "ClientStatus",
    "ClientDescription",
    "TaskStates",
    "AllocStates",
    "PreviousAllocation",
    "NextAllocation",
    "DeploymentID",
    "DeploymentStatus",
    "RescheduleTracker",
    "NetworkStatus",
    "FollowupEvalID",
    "PreemptedAllocations",
    "PreemptedByAllocation",
    "SigningKeyID",
    "CreateIndex",
    "ModifyIndex",
    "AllocModifyIndex",
    "CreateTime",
    "ModifyTime",
]
# nomad/structs/alloc.go: AllocListStub (AllocatedResources is omitempty)
ALLOC_LIST_STUB = [
    "ID",
    "EvalID",
    "Name",
    "Namespace",
    "NodeID",
    "NodeName",
    "JobID",
    "JobType",
    "JobVersion",
    "TaskGroup",
    "DesiredStatus",
    "DesiredDescription",
    "ClientStatus",
    "ClientDescription",
    "DesiredTransition",
    "TaskStates",
    "DeploymentStatus",
    "FollowupEvalID",
    "NextAllocation",
    "RescheduleTracker",
    "PreemptedAllocations",
    "PreemptedByAllocation",
    "CreateIndex",
    "ModifyIndex",
    "CreateTime",
    "ModifyTime",
]
OMIT_EMPTY_ALLOC_LIST_STUB = ["AllocatedResources"]

# nomad/structs/structs.go: Node
NODE = [
    "ID",
    "SecretID",
    "Datacenter",
    "Name",
    "CgroupParent",
    "HTTPAddr",
    "TLSEnabled",
    "Attributes",
    "NodeResources",
    "ReservedResources",
    "Links",
    "Meta",
    "NodeClass",
    "NodePool",
    "ComputedClass",
    "DrainStrategy",
    "SchedulingEligibility",
    "Status",
    "StatusDescription",
    "IdentitySigningKeyID",
    "StatusUpdatedAt",
    "Events",
    "Drivers",
    "CSIControllerPlugins",
    "CSINodePlugins",
    "HostVolumes",
    "GCVolumesOnNodeGC",
    "HostNetworks",
    "LastDrain",
    "NodeMaxAllocs",
    "LastMissedHeartbeatIndex",
    "LastAllocUpdateIndex",
    "CreateIndex",
    "ModifyIndex",
]
# nomad/structs/structs.go: NodeListStub (Attributes, NodeResources and ReservedResources are
# omitempty: sent with ?os=true / ?resources=true only)
NODE_LIST_STUB = [
    "Address",
    "ID",
    "Datacenter",
    "Name",
    "NodePool",
    "NodeClass",
    "Version",
    "Drain",
    "SchedulingEligibility",
    "Status",
    "StatusDescription",
    "Drivers",
    "HostVolumes",
    "LastDrain",
    "CreateIndex",
    "ModifyIndex",
]
# nomad/structs/structs.go: JobListStub (Namespace and Meta are omitempty; corral's jobs always
# have a namespace)
JOB_LIST_STUB = [
    "ID",
    "ParentID",
    "Name",
    "Namespace",
    "Datacenters",
    "NodePool",
    "Multiregion",
    "Type",
    "Priority",
    "Periodic",
    "ParameterizedJob",
    "Stop",
    "Status",
    "StatusDescription",
    "JobSummary",
    "CreateIndex",
    "ModifyIndex",
    "JobModifyIndex",
    "SubmitTime",
]

# corral's extensions, documented in docs/api.md and sent beside Nomad's keys: the UI reads them.
EVALUATION_EXTENSIONS = ["LeaseExpiresAt"]  # when a pending evaluation's worker lease lapses
# when the client last heartbeated; where the servers reach its client (HTTPAddr stays empty)
NODE_EXTENSIONS = ["LastHeartbeat", "LinkAddr"]
