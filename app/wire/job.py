"""Nomad's job as corral stores and serves it: JobSpec, TaskGroupSpec, TaskSpec and every block
under them, with Nomad's JSON keys and types (nomad/structs order, then the keys only the api
package accepts), plus the job list stub, summaries and the plan's diff.

Every TypedDict is total=False: a stored spec carries what normalize_job filled in (the blocks the
pydantic model in app.jobspec.model declares are never null), and a block corral passes through
untouched carries what the client wrote (so it may be null, as Go's nil pointer, slice or map).
Durations are integers of nanoseconds, time.Time an RFC 3339 string, []byte a base64 string."""

from __future__ import annotations

from typing import Literal, TypedDict

from app.wire.json import JsonObject

JobType = Literal["service", "batch", "system", "sysbatch"]
JobStatus = Literal["pending", "running", "dead"]


class JobSpec(TypedDict, total=False):
    """Nomad's Job."""

    Stop: bool
    Region: str
    Namespace: str
    ID: str
    ParentID: str
    Name: str
    Type: JobType
    Priority: int
    AllAtOnce: bool
    Datacenters: list[str]
    NodePool: str
    Constraints: list[ConstraintSpec]
    Affinities: list[AffinitySpec]
    Spreads: list[SpreadSpec]
    TaskGroups: list[TaskGroupSpec]
    Update: UpdateStrategySpec
    Multiregion: MultiregionSpec | None
    Periodic: PeriodicConfigSpec | None  # null on a periodic job's children
    ParameterizedJob: ParameterizedJobConfigSpec
    Dispatched: bool
    DispatchIdempotencyToken: str
    Payload: str | None  # base64; null on a dispatched child without one
    Meta: dict[str, str]
    ConsulNamespace: str
    VaultNamespace: str
    NomadTokenID: str
    Status: JobStatus
    StatusDescription: str
    Stable: bool
    Version: int
    SubmitTime: int
    CreateIndex: int
    ModifyIndex: int
    JobModifyIndex: int
    UI: JobUIConfigSpec | None
    VersionTag: JobVersionTagSpec | None
    ConsulToken: str
    Migrate: MigrateStrategySpec
    Reschedule: ReschedulePolicySpec
    VaultToken: str


class ConstraintSpec(TypedDict, total=False):
    """Nomad's Constraint."""

    LTarget: str
    RTarget: str
    Operand: str


class AffinitySpec(TypedDict, total=False):
    """Nomad's Affinity."""

    LTarget: str
    RTarget: str
    Operand: str
    Weight: int


class TaskGroupSpec(TypedDict, total=False):
    """Nomad's TaskGroup."""

    Name: str
    Count: int
    Update: UpdateStrategySpec
    Migrate: MigrateStrategySpec
    Constraints: list[ConstraintSpec]
    Scaling: ScalingPolicySpec
    RestartPolicy: RestartPolicySpec
    Disconnect: DisconnectStrategySpec
    Tasks: list[TaskSpec]
    EphemeralDisk: EphemeralDiskSpec
    Meta: dict[str, str]
    ReschedulePolicy: ReschedulePolicySpec
    Affinities: list[AffinitySpec]
    Spreads: list[SpreadSpec]
    Networks: list[NetworkResourceSpec]
    Consul: ConsulSpec | None
    Services: list[ServiceSpec]
    Volumes: dict[str, VolumeRequestSpec]
    ShutdownDelay: int
    MaxRunDuration: int
    StopAfterClientDisconnect: int
    MaxClientDisconnect: int
    PreventRescheduleOnLost: bool


class TaskSpec(TypedDict, total=False):
    """Nomad's Task."""

    Name: str
    Driver: str
    User: str
    Config: JsonObject
    Env: dict[str, str]
    Services: list[ServiceSpec]
    Vault: VaultSpec | None
    Secrets: list[SecretSpec] | None
    Consul: ConsulSpec | None
    Templates: list[TemplateSpec]
    Constraints: list[ConstraintSpec]
    Affinities: list[AffinitySpec]
    Resources: ResourcesSpec
    RestartPolicy: RestartPolicySpec
    DispatchPayload: DispatchPayloadConfigSpec
    Lifecycle: TaskLifecycleSpec
    Meta: dict[str, str]
    KillTimeout: int
    LogConfig: LogConfigSpec
    Artifacts: list[TaskArtifactSpec]
    Leader: bool
    ShutdownDelay: int
    VolumeMounts: list[VolumeMountSpec]
    ScalingPolicies: list[ScalingPolicySpec] | None
    KillSignal: str
    Kind: str
    CSIPluginConfig: TaskCSIPluginConfigSpec | None
    Identity: WorkloadIdentitySpec | None
    Identities: list[WorkloadIdentitySpec] | None
    Actions: list[ActionSpec] | None
    Schedule: TaskScheduleSpec | None


class TaskLifecycleSpec(TypedDict, total=False):
    """Nomad's TaskLifecycle."""

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
    MemoryMB: int
    MemoryMaxMB: int
    DiskMB: int
    IOPS: int
    Networks: list[NetworkResourceSpec] | None
    Devices: list[RequestedDeviceSpec] | None
    NUMA: NUMAResourceSpec | None
    SecretsMB: int


class NetworkResourceSpec(TypedDict, total=False):
    """Nomad's NetworkResource."""

    Mode: str
    Device: str
    CIDR: str
    IP: str
    Hostname: str
    MBits: int
    DNS: DNSConfigSpec | None
    ReservedPorts: list[PortSpec]
    DynamicPorts: list[PortSpec]
    CNI: CNIConfigSpec | None


class DNSConfigSpec(TypedDict, total=False):
    """Nomad's DNSConfig."""

    Servers: list[str] | None
    Searches: list[str] | None
    Options: list[str] | None


class PortSpec(TypedDict, total=False):
    """Nomad's Port."""

    Label: str
    Value: int
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

    MaxFiles: int
    MaxFileSizeMB: int
    Disabled: bool
    Enabled: bool


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

    SourcePath: str
    DestPath: str
    EmbeddedTmpl: str
    ChangeMode: str
    ChangeSignal: str
    ChangeScript: ChangeScriptSpec
    Splay: int
    Perms: str
    Uid: int
    Gid: int
    LeftDelim: str
    RightDelim: str
    Envvars: bool
    VaultGrace: int
    Wait: WaitConfigSpec
    ErrMissingKey: bool
    Once: bool


class ChangeScriptSpec(TypedDict, total=False):
    """Nomad's ChangeScript."""

    Command: str
    Args: list[str]
    Timeout: int
    FailOnError: bool
    RunOnFirstRender: bool


class WaitConfigSpec(TypedDict, total=False):
    """Nomad's WaitConfig."""

    Min: int
    Max: int


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

    ID: str
    Type: str
    Target: dict[str, str] | None
    Policy: JsonObject
    Min: int
    Max: int
    Enabled: bool
    CreateIndex: int
    ModifyIndex: int
    Namespace: str


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
    SpreadTarget: list[SpreadTargetSpec]


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
    StopOnClientAfter: int
    Replace: bool
    Reconcile: str


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
    SizeMB: int
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
    Spec: str
    Specs: list[str]
    SpecType: str
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
    Links: list[JobUILinkSpec] | None


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
