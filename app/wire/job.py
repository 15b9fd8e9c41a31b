"""Nomad's job as corral stores and serves it: JobSpec, TaskGroupSpec, TaskSpec and every block
under them, with Nomad's JSON keys and types (nomad/structs order, then the keys only the api
package accepts), plus the job list stub, summaries and the plan's diff.

Every TypedDict is total=False: a stored spec carries what normalize_job filled in (the blocks the
pydantic model in app.jobspec.model declares are never null), and a block corral passes through
untouched carries what the client wrote (so it may be null, as Go's nil pointer, slice or map).
Durations are integers of nanoseconds, time.Time an RFC 3339 string, []byte a base64 string."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from app.wire.json import JsonObject
from app.wire.marks import AsSent, Filled, Hcl, InputOnly, NotInHcl, OmitEmpty, Zero

JobType = Literal["service", "batch", "system", "sysbatch"]
JobStatus = Literal["pending", "running", "dead"]


class JobSpec(TypedDict, total=False):
    """Nomad's Job."""

    Stop: Annotated[bool, NotInHcl()]
    Region: str
    Namespace: str
    ID: str
    ParentID: Annotated[str, NotInHcl()]
    Name: str
    Type: JobType
    Priority: int
    AllAtOnce: bool
    Datacenters: list[str]
    NodePool: str
    Constraints: Annotated[list[ConstraintSpec], Hcl("constraint")]
    Affinities: Annotated[list[AffinitySpec], Hcl("affinity")]
    Spreads: Annotated[list[SpreadSpec], Hcl("spread")]
    TaskGroups: Annotated[list[TaskGroupSpec], Hcl("group")]
    Update: Annotated[UpdateStrategySpec, Filled()]  # a value, not a pointer, in Nomad
    Multiregion: MultiregionSpec | None
    Periodic: PeriodicConfigSpec | None  # null on a periodic job's children
    ParameterizedJob: Annotated[ParameterizedJobConfigSpec, Hcl("parameterized")]
    Dispatched: Annotated[bool, NotInHcl()]
    DispatchIdempotencyToken: Annotated[str, NotInHcl()]
    Payload: Annotated[str | None, NotInHcl()]  # base64; null on a dispatched child without one
    Meta: dict[str, str]
    ConsulNamespace: str
    VaultNamespace: Annotated[str, NotInHcl()]
    NomadTokenID: Annotated[str, NotInHcl()]
    Status: Annotated[JobStatus, NotInHcl()]
    StatusDescription: Annotated[str, NotInHcl()]
    Stable: Annotated[bool, NotInHcl()]
    Version: Annotated[int, NotInHcl()]
    SubmitTime: Annotated[int, NotInHcl()]
    CreateIndex: Annotated[int, NotInHcl()]
    ModifyIndex: Annotated[int, NotInHcl()]
    JobModifyIndex: Annotated[int, NotInHcl()]
    UI: JobUIConfigSpec | None
    VersionTag: Annotated[JobVersionTagSpec | None, NotInHcl()]
    ConsulToken: Annotated[str, InputOnly()]
    Migrate: Annotated[MigrateStrategySpec, InputOnly()]  # folded into the groups'
    Reschedule: Annotated[ReschedulePolicySpec, InputOnly()]  # folded into the groups'
    VaultToken: Annotated[str, InputOnly()]


class ConstraintSpec(TypedDict, total=False):
    """Nomad's Constraint."""

    LTarget: Annotated[str, Hcl("attribute")]
    RTarget: Annotated[str, Hcl("value")]
    Operand: Annotated[str, Hcl("operator")]


class AffinitySpec(TypedDict, total=False):
    """Nomad's Affinity."""

    LTarget: Annotated[str, Hcl("attribute")]
    RTarget: Annotated[str, Hcl("value")]
    Operand: Annotated[str, Hcl("operator")]
    Weight: int


class TaskGroupSpec(TypedDict, total=False):
    """Nomad's TaskGroup."""

    Name: Annotated[str, NotInHcl()]
    Count: int
    Update: UpdateStrategySpec
    Migrate: MigrateStrategySpec
    Constraints: Annotated[list[ConstraintSpec], Hcl("constraint")]
    Scaling: ScalingPolicySpec
    RestartPolicy: Annotated[RestartPolicySpec, Hcl("restart")]
    Disconnect: DisconnectStrategySpec
    Tasks: Annotated[list[TaskSpec], Hcl("task")]
    EphemeralDisk: Annotated[EphemeralDiskSpec, Filled()]
    Meta: dict[str, str]
    ReschedulePolicy: Annotated[ReschedulePolicySpec, Hcl("reschedule")]
    Affinities: Annotated[list[AffinitySpec], Hcl("affinity")]
    Spreads: Annotated[list[SpreadSpec], Hcl("spread")]
    Networks: Annotated[list[NetworkResourceSpec], Hcl("network")]
    Consul: ConsulSpec | None
    Services: Annotated[list[ServiceSpec], Hcl("service")]
    Volumes: Annotated[dict[str, VolumeRequestSpec], Hcl("volume")]
    ShutdownDelay: int | None
    MaxRunDuration: int | None
    StopAfterClientDisconnect: int | None
    MaxClientDisconnect: int | None
    PreventRescheduleOnLost: bool


class TaskSpec(TypedDict, total=False):
    """Nomad's Task."""

    Name: Annotated[str, NotInHcl()]
    Driver: str
    User: str
    Config: JsonObject
    Env: dict[str, str]
    Services: Annotated[list[ServiceSpec], Hcl("service")]
    Vault: VaultSpec | None
    Secrets: Annotated[list[SecretSpec] | None, Hcl("secret")]
    Consul: ConsulSpec | None
    Templates: Annotated[list[TemplateSpec], Hcl("template")]
    Constraints: Annotated[list[ConstraintSpec], Hcl("constraint")]
    Affinities: Annotated[list[AffinitySpec], Hcl("affinity")]
    Resources: Annotated[ResourcesSpec, Filled()]
    RestartPolicy: Annotated[RestartPolicySpec, Hcl("restart")]
    DispatchPayload: DispatchPayloadConfigSpec
    Lifecycle: TaskLifecycleConfigSpec
    Meta: dict[str, str]
    KillTimeout: int
    LogConfig: Annotated[LogConfigSpec, Filled(), Hcl("logs")]
    Artifacts: Annotated[list[TaskArtifactSpec], Hcl("artifact")]
    Leader: bool
    ShutdownDelay: int
    VolumeMounts: Annotated[list[VolumeMountSpec], Hcl("volume_mount")]
    ScalingPolicies: Annotated[list[ScalingPolicySpec] | None, AsSent(), Hcl("scaling")]
    KillSignal: str
    Kind: str
    CSIPluginConfig: Annotated[TaskCSIPluginConfigSpec | None, Hcl("csi_plugin")]
    Identity: WorkloadIdentitySpec | None
    Identities: Annotated[list[WorkloadIdentitySpec] | None, Hcl("identity")]
    Actions: Annotated[list[ActionSpec] | None, Hcl("action")]
    Schedule: TaskScheduleSpec | None


class TaskLifecycleConfigSpec(TypedDict, total=False):
    """Nomad's TaskLifecycleConfig (api.TaskLifecycle)."""

    Hook: str
    Sidecar: bool


class ServiceSpec(TypedDict, total=False):
    """Nomad's Service."""

    Name: str
    Tags: list[str]
    CanaryTags: list[str]
    EnableTagOverride: bool
    PortLabel: str
    AddressMode: str
    Address: str
    Checks: list[ServiceCheckSpec]
    CheckRestart: CheckRestartSpec
    Connect: ConsulConnectSpec | None
    Meta: dict[str, str]
    CanaryMeta: dict[str, str] | None
    TaggedAddresses: dict[str, str] | None
    TaskName: str
    OnUpdate: str
    Identity: WorkloadIdentitySpec | None
    Weights: ServiceWeightsSpec | None
    Provider: str
    Cluster: str
    Kind: str


class ServiceCheckSpec(TypedDict, total=False):
    """Nomad's ServiceCheck."""

    Name: str
    Type: str
    Command: str
    Args: list[str]
    Path: str
    Protocol: str
    PortLabel: str
    Expose: bool
    AddressMode: str
    Advertise: str
    Interval: int
    Timeout: int
    InitialStatus: str
    Notes: str
    TLSServerName: str
    TLSSkipVerify: bool
    Header: dict[str, list[str]]
    Method: str
    CheckRestart: CheckRestartSpec
    GRPCService: str
    GRPCUseTLS: bool
    TaskName: str
    SuccessBeforePassing: int
    FailuresBeforeCritical: int
    FailuresBeforeWarning: int
    Body: str
    OnUpdate: str


class CheckRestartSpec(TypedDict, total=False):
    """Nomad's CheckRestart."""

    Limit: int
    Grace: int
    IgnoreWarnings: bool


class ConsulConnectSpec(TypedDict, total=False):
    """Nomad's ConsulConnect."""

    Native: bool
    Gateway: ConsulGatewaySpec | None
    SidecarService: ConsulSidecarServiceSpec | None
    SidecarTask: SidecarTaskSpec | None


class ConsulGatewaySpec(TypedDict, total=False):
    """Nomad's ConsulGateway."""

    Proxy: ConsulGatewayProxySpec | None
    Ingress: ConsulIngressConfigEntrySpec | None
    Terminating: ConsulTerminatingConfigEntrySpec | None
    Mesh: ConsulMeshConfigEntrySpec | None


class ConsulGatewayProxySpec(TypedDict, total=False):
    """Nomad's ConsulGatewayProxy."""

    ConnectTimeout: int
    EnvoyGatewayBindTaggedAddresses: bool
    EnvoyGatewayBindAddresses: dict[str, ConsulGatewayBindAddressSpec] | None
    EnvoyGatewayNoDefaultBind: bool
    EnvoyDNSDiscoveryType: str
    Config: JsonObject | None


class ConsulGatewayBindAddressSpec(TypedDict, total=False):
    """Nomad's ConsulGatewayBindAddress."""

    Name: str
    Address: str
    Port: int


class ConsulIngressConfigEntrySpec(TypedDict, total=False):
    """Nomad's ConsulIngressConfigEntry."""

    TLS: ConsulGatewayTLSConfigSpec | None
    Listeners: list[ConsulIngressListenerSpec] | None


class ConsulGatewayTLSConfigSpec(TypedDict, total=False):
    """Nomad's ConsulGatewayTLSConfig."""

    Enabled: bool
    TLSMinVersion: str
    TLSMaxVersion: str
    CipherSuites: list[str] | None
    SDS: ConsulGatewayTLSSDSConfigSpec | None


class ConsulGatewayTLSSDSConfigSpec(TypedDict, total=False):
    """Nomad's ConsulGatewayTLSSDSConfig."""

    ClusterName: str
    CertResource: str


class ConsulIngressListenerSpec(TypedDict, total=False):
    """Nomad's ConsulIngressListener."""

    Port: int
    Protocol: str
    Services: list[ConsulIngressServiceSpec] | None


class ConsulIngressServiceSpec(TypedDict, total=False):
    """Nomad's ConsulIngressService."""

    Name: str
    Hosts: list[str] | None
    TLS: ConsulGatewayTLSConfigSpec | None
    RequestHeaders: ConsulHTTPHeaderModifiersSpec | None
    ResponseHeaders: ConsulHTTPHeaderModifiersSpec | None
    MaxConnections: int
    MaxPendingRequests: int
    MaxConcurrentRequests: int


class ConsulHTTPHeaderModifiersSpec(TypedDict, total=False):
    """Nomad's ConsulHTTPHeaderModifiers."""

    Add: dict[str, str] | None
    Set: dict[str, str] | None
    Remove: list[str] | None


class ConsulTerminatingConfigEntrySpec(TypedDict, total=False):
    """Nomad's ConsulTerminatingConfigEntry."""

    Services: list[ConsulLinkedServiceSpec] | None


class ConsulLinkedServiceSpec(TypedDict, total=False):
    """Nomad's ConsulLinkedService."""

    Name: str
    CAFile: str
    CertFile: str
    KeyFile: str
    SNI: str


class ConsulMeshConfigEntrySpec(TypedDict, total=False):
    """Nomad's ConsulMeshConfigEntry."""


class ConsulSidecarServiceSpec(TypedDict, total=False):
    """Nomad's ConsulSidecarService."""

    Tags: list[str] | None
    Port: str
    Proxy: ConsulProxySpec | None
    DisableDefaultTCPCheck: bool
    Meta: dict[str, str] | None


class ConsulProxySpec(TypedDict, total=False):
    """Nomad's ConsulProxy."""

    LocalServiceAddress: str
    LocalServicePort: int
    Expose: ConsulExposeConfigSpec | None
    ExposeConfig: ConsulExposeConfigSpec | None
    Upstreams: list[ConsulUpstreamSpec] | None
    TransparentProxy: ConsulTransparentProxySpec | None
    Config: JsonObject | None


class ConsulExposeConfigSpec(TypedDict, total=False):
    """Nomad's ConsulExposeConfig."""

    Paths: list[ConsulExposePathSpec] | None
    Path: list[ConsulExposePathSpec] | None


class ConsulExposePathSpec(TypedDict, total=False):
    """Nomad's ConsulExposePath."""

    Path: str
    Protocol: str
    LocalPathPort: int
    ListenerPort: str


class ConsulUpstreamSpec(TypedDict, total=False):
    """Nomad's ConsulUpstream."""

    DestinationName: str
    DestinationNamespace: str
    DestinationPeer: str
    DestinationPartition: str
    DestinationType: str
    LocalBindPort: int
    Datacenter: str
    LocalBindAddress: str
    LocalBindSocketPath: str
    LocalBindSocketMode: str
    MeshGateway: ConsulMeshGatewaySpec | None
    Config: JsonObject | None


class ConsulMeshGatewaySpec(TypedDict, total=False):
    """Nomad's ConsulMeshGateway."""

    Mode: str


class ConsulTransparentProxySpec(TypedDict, total=False):
    """Nomad's ConsulTransparentProxy."""

    UID: str
    OutboundPort: int
    ExcludeInboundPorts: list[str] | None
    ExcludeOutboundPorts: list[int] | None
    ExcludeOutboundCIDRs: list[str] | None
    ExcludeUIDs: list[str] | None
    NoDNS: bool


class SidecarTaskSpec(TypedDict, total=False):
    """Nomad's SidecarTask."""

    Name: str
    Driver: str
    User: str
    Config: JsonObject | None
    Env: dict[str, str] | None
    Resources: ResourcesSpec | None
    Meta: dict[str, str] | None
    KillTimeout: int
    LogConfig: LogConfigSpec | None
    ShutdownDelay: int
    KillSignal: str
    VolumeMounts: list[VolumeMountSpec] | None
    Identities: list[WorkloadIdentitySpec] | None


class ResourcesSpec(TypedDict, total=False):
    """Nomad's Resources."""

    CPU: int
    Cores: int
    MemoryMB: Annotated[int, Hcl("memory")]
    MemoryMaxMB: Annotated[int, Hcl("memory_max")]
    DiskMB: Annotated[int, Hcl("disk")]
    IOPS: int
    Networks: Annotated[list[NetworkResourceSpec] | None, Hcl("network")]
    Devices: Annotated[list[RequestedDeviceSpec] | None, Hcl("device")]
    NUMA: NUMAResourceSpec | None
    SecretsMB: Annotated[int, Hcl("secrets")]


class NetworkResourceSpec(TypedDict, total=False):
    """Nomad's NetworkResource."""

    Mode: str
    Device: str
    CIDR: str
    IP: str
    Hostname: Annotated[str, OmitEmpty()]
    MBits: Annotated[int, Hcl("mbits")]
    DNS: DNSConfigSpec | None
    ReservedPorts: Annotated[list[PortSpec], Hcl("port")]
    DynamicPorts: Annotated[list[PortSpec], Hcl("port")]
    CNI: CNIConfigSpec | None


class DNSConfigSpec(TypedDict, total=False):
    """Nomad's DNSConfig."""

    Servers: list[str] | None
    Searches: list[str] | None
    Options: list[str] | None


class PortSpec(TypedDict, total=False):
    """Nomad's Port."""

    Label: Annotated[str, NotInHcl()]
    Value: Annotated[int, Hcl("static")]
    To: int
    HostNetwork: str
    IgnoreCollision: bool


class CNIConfigSpec(TypedDict, total=False):
    """Nomad's CNIConfig."""

    Args: dict[str, str] | None


class RequestedDeviceSpec(TypedDict, total=False):
    """Nomad's RequestedDevice."""

    Name: str
    Count: int
    Constraints: list[ConstraintSpec] | None
    Affinities: list[AffinitySpec] | None


class NUMAResourceSpec(TypedDict, total=False):
    """Nomad's NUMAResource."""

    Affinity: str
    Devices: list[str] | None


class LogConfigSpec(TypedDict, total=False):
    """Nomad's LogConfig."""

    MaxFiles: Annotated[int, Zero(10)]  # Nomad's DefaultLogConfig
    MaxFileSizeMB: Annotated[int, Zero(10), Hcl("max_file_size")]
    Disabled: bool
    Enabled: Annotated[bool, InputOnly()]  # the inverse of Disabled


class VolumeMountSpec(TypedDict, total=False):
    """Nomad's VolumeMount."""

    Volume: str
    Destination: str
    ReadOnly: bool
    PropagationMode: str
    SELinuxLabel: str


class WorkloadIdentitySpec(TypedDict, total=False):
    """Nomad's WorkloadIdentity."""

    Name: str
    Audience: list[str] | None
    ChangeMode: str
    ChangeSignal: str
    Env: bool
    File: bool
    Filepath: str
    ServiceName: str
    TTL: int
    ExtraClaims: list[str] | None


class ServiceWeightsSpec(TypedDict, total=False):
    """Nomad's ServiceWeights."""

    Passing: int
    Warning: int


class RestartPolicySpec(TypedDict, total=False):
    """Nomad's RestartPolicy."""

    Attempts: int
    Interval: int
    Delay: int
    Mode: str
    RenderTemplates: bool


class TaskArtifactSpec(TypedDict, total=False):
    """Nomad's TaskArtifact."""

    GetterSource: str
    GetterOptions: dict[str, str]
    GetterHeaders: dict[str, str]
    GetterMode: str
    GetterInsecure: bool
    RelativeDest: str
    Chown: bool


class VaultSpec(TypedDict, total=False):
    """Nomad's Vault."""

    Policies: list[str] | None
    Role: str
    Namespace: str
    Cluster: str
    Env: bool
    DisableFile: bool
    ChangeMode: str
    ChangeSignal: str
    AllowTokenExpiration: bool


class ConsulSpec(TypedDict, total=False):
    """Nomad's Consul."""

    Namespace: str
    Cluster: str
    Partition: str


class TemplateSpec(TypedDict, total=False):
    """Nomad's Template."""

    SourcePath: Annotated[str, Hcl("source")]
    DestPath: Annotated[str, Hcl("destination")]
    EmbeddedTmpl: Annotated[str, Hcl("data")]
    ChangeMode: str
    ChangeSignal: str
    ChangeScript: ChangeScriptSpec
    Splay: int
    Perms: str
    Uid: int | None
    Gid: int | None
    LeftDelim: Annotated[str, Hcl("left_delimiter")]
    RightDelim: Annotated[str, Hcl("right_delimiter")]
    Envvars: Annotated[bool, Hcl("env")]
    VaultGrace: int
    Wait: WaitConfigSpec
    ErrMissingKey: Annotated[bool, Hcl("error_on_missing_key")]


class ChangeScriptSpec(TypedDict, total=False):
    """Nomad's ChangeScript."""

    Command: str
    Args: list[str]
    Timeout: int
    FailOnError: bool


class WaitConfigSpec(TypedDict, total=False):
    """Nomad's WaitConfig."""

    Min: int | None
    Max: int | None


class DispatchPayloadConfigSpec(TypedDict, total=False):
    """Nomad's DispatchPayloadConfig."""

    File: str


class TaskCSIPluginConfigSpec(TypedDict, total=False):
    """Nomad's TaskCSIPluginConfig."""

    ID: str
    Type: str
    MountDir: str
    StagePublishBaseDir: str
    HealthTimeout: int


class ScalingPolicySpec(TypedDict, total=False):
    """Nomad's ScalingPolicy."""

    ID: Annotated[str, NotInHcl()]
    Type: str
    Target: Annotated[dict[str, str] | None, NotInHcl()]
    Policy: JsonObject
    Min: int
    Max: int
    Enabled: bool
    CreateIndex: Annotated[int, NotInHcl()]
    ModifyIndex: Annotated[int, NotInHcl()]
    Namespace: Annotated[str, InputOnly(), NotInHcl()]  # taken from the job


class SecretSpec(TypedDict, total=False):
    """Nomad's Secret."""

    Name: str
    Provider: str
    Path: str
    Config: JsonObject | None
    Env: dict[str, str] | None


class ActionSpec(TypedDict, total=False):
    """Nomad's Action."""

    Name: str
    Command: str
    Args: list[str] | None


class TaskScheduleSpec(TypedDict, total=False):
    """Nomad's TaskSchedule."""

    Cron: TaskScheduleCronSpec | None


class TaskScheduleCronSpec(TypedDict, total=False):
    """Nomad's TaskScheduleCron."""

    Start: str
    End: str
    Timezone: str


class SpreadSpec(TypedDict, total=False):
    """Nomad's Spread."""

    Attribute: str
    Weight: int
    SpreadTarget: Annotated[list[SpreadTargetSpec], Hcl("target")]


class SpreadTargetSpec(TypedDict, total=False):
    """Nomad's SpreadTarget."""

    Value: str
    Percent: int


class VolumeRequestSpec(TypedDict, total=False):
    """Nomad's VolumeRequest."""

    Name: str
    Type: str
    Source: str
    ReadOnly: bool
    Sticky: bool
    AccessMode: str
    AttachmentMode: str
    MountOptions: CSIMountOptionsSpec | None
    PerAlloc: bool


class CSIMountOptionsSpec(TypedDict, total=False):
    """Nomad's CSIMountOptions."""

    FSType: str
    MountFlags: list[str] | None


class DisconnectStrategySpec(TypedDict, total=False):
    """Nomad's DisconnectStrategy."""

    LostAfter: int
    StopOnClientAfter: int | None
    Replace: Annotated[bool, Zero(True)]  # its Canonicalize fills Replace and Reconcile
    Reconcile: Annotated[str, Zero("best_score")]


class ReschedulePolicySpec(TypedDict, total=False):
    """Nomad's ReschedulePolicy."""

    Attempts: int
    Interval: int
    Delay: int
    DelayFunction: str
    MaxDelay: int
    Unlimited: bool


class EphemeralDiskSpec(TypedDict, total=False):
    """Nomad's EphemeralDisk."""

    Sticky: bool
    SizeMB: Annotated[int, Zero(300), Hcl("size")]  # Nomad's DefaultEphemeralDisk
    Migrate: bool


class UpdateStrategySpec(TypedDict, total=False):
    """Nomad's UpdateStrategy."""

    Stagger: int
    MaxParallel: int
    HealthCheck: str
    MinHealthyTime: int
    HealthyDeadline: int
    ProgressDeadline: int
    AutoRevert: bool
    AutoPromote: bool
    Canary: int


class MigrateStrategySpec(TypedDict, total=False):
    """Nomad's MigrateStrategy."""

    MaxParallel: int
    HealthCheck: str
    MinHealthyTime: int
    HealthyDeadline: int


class MultiregionSpec(TypedDict, total=False):
    """Nomad's Multiregion."""

    Strategy: MultiregionStrategySpec | None
    Regions: list[MultiregionRegionSpec] | None


class MultiregionStrategySpec(TypedDict, total=False):
    """Nomad's MultiregionStrategy."""

    MaxParallel: int
    OnFailure: str


class MultiregionRegionSpec(TypedDict, total=False):
    """Nomad's MultiregionRegion."""

    Name: str
    Count: int
    Datacenters: list[str] | None
    NodePool: str
    Meta: dict[str, str] | None


class PeriodicConfigSpec(TypedDict, total=False):
    """Nomad's PeriodicConfig."""

    Enabled: bool
    Spec: Annotated[str, Hcl("cron")]
    Specs: Annotated[list[str], Hcl("crons")]
    SpecType: Annotated[str, NotInHcl()]
    ProhibitOverlap: bool
    TimeZone: str


class ParameterizedJobConfigSpec(TypedDict, total=False):
    """Nomad's ParameterizedJobConfig."""

    Payload: str
    MetaRequired: list[str]
    MetaOptional: list[str]


class JobUIConfigSpec(TypedDict, total=False):
    """Nomad's JobUIConfig."""

    Description: str
    Links: Annotated[list[JobUILinkSpec] | None, Hcl("link")]


class JobUILinkSpec(TypedDict, total=False):
    """Nomad's JobUILink."""

    Label: str
    URL: str


class JobVersionTagSpec(TypedDict, total=False):
    """Nomad's JobVersionTag."""

    Name: str
    Description: str
    TaggedTime: int


class JobListStubJson(TypedDict, total=False):
    """Nomad's JobListStub."""

    ID: str
    ParentID: str
    Name: str
    Namespace: str
    Datacenters: list[str]
    NodePool: str
    Multiregion: MultiregionSpec | None
    Type: JobType
    Priority: int
    Periodic: bool
    ParameterizedJob: bool
    Stop: bool
    Status: JobStatus
    StatusDescription: str
    JobSummary: JobSummaryJson | None
    CreateIndex: int
    ModifyIndex: int
    JobModifyIndex: int
    SubmitTime: int
    Meta: dict[str, str]


class JobSummaryJson(TypedDict, total=False):
    """Nomad's JobSummary."""

    JobID: str
    Namespace: str
    Summary: dict[str, TaskGroupSummaryJson]
    Children: JobChildrenSummaryJson | None
    CreateIndex: int
    ModifyIndex: int


class TaskGroupSummaryJson(TypedDict, total=False):
    """Nomad's TaskGroupSummary."""

    Queued: int
    Complete: int
    Failed: int
    Running: int
    Starting: int
    Lost: int
    Unknown: int


class JobChildrenSummaryJson(TypedDict, total=False):
    """Nomad's JobChildrenSummary."""

    Pending: int
    Running: int
    Dead: int


class JobDiffJson(TypedDict, total=False):
    """Nomad's JobDiff (its lists null when empty, as Nomad sends them)."""

    Type: str
    ID: str
    Fields: list[FieldDiffJson] | None
    Objects: list[ObjectDiffJson] | None
    TaskGroups: list[TaskGroupDiffJson] | None


class FieldDiffJson(TypedDict, total=False):
    """Nomad's FieldDiff."""

    Type: str
    Name: str
    Old: str
    New: str
    Annotations: list[str] | None


class ObjectDiffJson(TypedDict, total=False):
    """Nomad's ObjectDiff."""

    Type: str
    Name: str
    Fields: list[FieldDiffJson] | None
    Objects: list[ObjectDiffJson] | None


class TaskGroupDiffJson(TypedDict, total=False):
    """Nomad's TaskGroupDiff."""

    Type: str
    Name: str
    Fields: list[FieldDiffJson] | None
    Objects: list[ObjectDiffJson] | None
    Tasks: list[TaskDiffJson] | None
    Updates: dict[str, int]


class TaskDiffJson(TypedDict, total=False):
    """Nomad's TaskDiff."""

    Type: str
    Name: str
    Fields: list[FieldDiffJson] | None
    Objects: list[ObjectDiffJson] | None
    Annotations: list[str] | None
