"""Pydantic models describing the shape of a Nomad API job.

The models check types only. Ranges, allowed values and cross-field rules live in the
rule modules so that their messages stay under our control and so that every problem
can be reported in one pass. Field defaults here are Nomad's type-independent defaults;
``defaults.py`` adds the ones that depend on the job type or on other fields.

``None`` never means anything to Nomad's API beyond "not set", so nulls sent for declared
fields are dropped before validation (the default applies) and declared fields still
``None`` afterwards are left out of the output. Unknown keys ride along untouched.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_pascal
from pydantic_core import PydanticCustomError

from app.jobspec.durations import HOUR, MINUTE, SECOND, DurationError, duration_ns

# Error type used for failures whose message we wrote ourselves; shape.py passes the
# message through verbatim instead of translating it.
CUSTOM_ERROR = "jobspec"


def _coerce_duration(value: object) -> int:
    try:
        return duration_ns(value)
    except DurationError as exc:
        raise PydanticCustomError(CUSTOM_ERROR, "{message}", {"message": str(exc)}) from None


Duration = Annotated[int, BeforeValidator(_coerce_duration)]


class NomadObject(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, alias_generator=to_pascal)

    @model_validator(mode="before")
    @classmethod
    def _drop_declared_nulls(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        declared = {field.alias for field in cls.model_fields.values()}
        return {key: value for key, value in data.items() if value is not None or key not in declared}

    @model_serializer(mode="wrap")
    def _omit_unset_blocks(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name, field in type(self).model_fields.items():
            key = field.alias or name
            if key in data and data[key] is None:
                del data[key]
        return data

    def explicit_fields(self) -> set[str]:
        """Declared fields the client actually sent (unknown keys excluded)."""
        return self.model_fields_set & type(self).model_fields.keys()


Model = TypeVar("Model", bound=NomadObject)


def overlay(base: Model, explicit: Model) -> Model:
    """Nomad's ``Merge``: what the client set on ``explicit`` wins over ``base``."""
    updates = {name: copy.deepcopy(getattr(explicit, name)) for name in explicit.explicit_fields()}
    merged = base.model_copy(update=updates, deep=True)
    merged.__pydantic_extra__ = copy.deepcopy(
        {**(base.__pydantic_extra__ or {}), **(explicit.__pydantic_extra__ or {})}
    )
    return merged


class Constraint(NomadObject):
    l_target: str = ""
    r_target: str = ""
    operand: str = "="


class Affinity(NomadObject):
    l_target: str = ""
    r_target: str = ""
    operand: str = "="
    weight: int = 50


class SpreadTarget(NomadObject):
    value: str = ""
    percent: int = 0


class Spread(NomadObject):
    attribute: str = ""
    weight: int = 50
    spread_target: list[SpreadTarget] = Field(default_factory=list)


class Port(NomadObject):
    label: str = ""
    value: int = 0
    to: int = 0
    host_network: str = "default"


class Network(NomadObject):
    mode: str = "host"
    reserved_ports: list[Port] = Field(default_factory=list)
    dynamic_ports: list[Port] = Field(default_factory=list)


class Resources(NomadObject):
    # CPU's default of 100 is withdrawn by defaults.py when Cores is requested instead.
    cpu: int = Field(default=100, alias="CPU")
    memory_mb: int = Field(default=300, alias="MemoryMB")
    memory_max_mb: int = Field(default=0, alias="MemoryMaxMB")
    cores: int = 0
    # Deprecated in Nomad (EphemeralDisk replaced it) but still accepted; left out unless sent.
    disk_mb: int | None = Field(default=None, alias="DiskMB")


class EphemeralDisk(NomadObject):
    size_mb: int = Field(default=300, alias="SizeMB")


class UpdateStrategy(NomadObject):
    stagger: Duration = 30 * SECOND
    max_parallel: int = 1
    health_check: str = "checks"
    min_healthy_time: Duration = 10 * SECOND
    healthy_deadline: Duration = 5 * MINUTE
    progress_deadline: Duration = 10 * MINUTE
    auto_revert: bool = False
    auto_promote: bool = False
    canary: int = 0


class MigrateStrategy(NomadObject):
    max_parallel: int = 1
    health_check: str = "checks"
    min_healthy_time: Duration = 10 * SECOND
    healthy_deadline: Duration = 5 * MINUTE


class RestartPolicy(NomadObject):
    # Service-job values; defaults.py overlays what the client sent on the table for the
    # job's type, so these only matter for a model built outside that path.
    attempts: int = 2
    interval: Duration = 30 * MINUTE
    delay: Duration = 15 * SECOND
    mode: str = "fail"


class ReschedulePolicy(NomadObject):
    # Service-job values; see RestartPolicy.
    attempts: int = 0
    interval: Duration = 0
    delay: Duration = 30 * SECOND
    delay_function: str = "exponential"
    max_delay: Duration = HOUR
    unlimited: bool = True


class PeriodicConfig(NomadObject):
    enabled: bool = True
    spec: str = ""
    specs: list[str] = Field(default_factory=list)
    spec_type: str = "cron"
    prohibit_overlap: bool = False
    time_zone: str = "UTC"


class ParameterizedJobConfig(NomadObject):
    payload: str = "optional"
    meta_required: list[str] = Field(default_factory=list)
    meta_optional: list[str] = Field(default_factory=list)


class DisconnectStrategy(NomadObject):
    # Nomad gives these no defaults worth inventing here; unset ones stay absent.
    lost_after: Duration | None = None
    stop_on_client_after: Duration | None = None
    replace: bool | None = None
    reconcile: str | None = None


class ScalingPolicy(NomadObject):
    """A group's horizontal scaling bounds; Min defaults to the group's count (defaults.py)."""

    min: int | None = None
    max: int | None = None
    enabled: bool = True
    type: str = "horizontal"
    policy: dict[str, Any] | None = None


class TaskLifecycle(NomadObject):
    """When a task runs relative to the group's main tasks (Nomad's ``lifecycle`` block)."""

    hook: str = ""
    sidecar: bool = False


class DispatchPayloadConfig(NomadObject):
    """Where a dispatched job's payload is written, relative to the task's ``local/``."""

    file: str = ""


class ChangeScript(NomadObject):
    """What a template with change_mode "script" runs inside the task after a re-render."""

    command: str = ""
    args: list[str] = Field(default_factory=list)
    timeout: Duration = 5 * SECOND
    fail_on_error: bool = False


class WaitConfig(NomadObject):
    """A template's quiescence bounds: render after `min` without change, at most `max` late."""

    min: Duration | None = None
    max: Duration | None = None


class Template(NomadObject):
    """Nomad's template block, with the api package's Canonicalize defaults."""

    source_path: str = ""
    dest_path: str = ""
    embedded_tmpl: str = ""
    change_mode: str = "restart"
    change_signal: str = ""
    change_script: ChangeScript | None = None
    splay: Duration = 5 * SECOND
    perms: str = "0644"
    uid: int | None = None
    gid: int | None = None
    left_delim: str = "{{"
    right_delim: str = "}}"
    envvars: bool = False
    err_missing_key: bool = False
    wait: WaitConfig | None = None


class VolumeRequest(NomadObject):
    """A group's ``volume`` block; only ``type = "host"`` is placed on and mounted."""

    name: str = ""
    type: str = ""
    source: str = ""
    read_only: bool = False
    sticky: bool = False
    per_alloc: bool = False


class VolumeMount(NomadObject):
    """A task's ``volume_mount``: one of its group's volumes at ``destination``."""

    volume: str = ""
    destination: str = ""
    read_only: bool = False


class TaskArtifact(NomadObject):
    """An ``artifact`` the client fetches before the task starts (Nomad's canonical defaults)."""

    getter_source: str = ""
    getter_options: dict[str, str] | None = None
    getter_headers: dict[str, str] | None = None
    getter_mode: str = "any"
    relative_dest: str = "local/"


class LogConfig(NomadObject):
    max_files: int = 10
    max_file_size_mb: int = Field(default=10, alias="MaxFileSizeMB")
    disabled: bool = False


class CheckRestart(NomadObject):
    """`check_restart`: restart the task after `limit` consecutive failed checks (0: never),
    not counting failures within `grace` of its start."""

    limit: int = 0
    grace: Duration = SECOND
    ignore_warnings: bool = False


class ServiceCheck(NomadObject):
    """One `check` of a service, as Nomad's API carries it (durations in nanoseconds)."""

    name: str = ""
    type: str = ""
    command: str = ""
    args: list[str] | None = None
    path: str = ""
    protocol: str = ""
    port_label: str = ""
    expose: bool = False
    address_mode: str = ""
    interval: Duration = 0
    timeout: Duration = 0
    method: str = ""
    header: dict[str, list[str]] | None = None
    check_restart: CheckRestart | None = None
    success_before_passing: int = 0
    failures_before_critical: int = 0
    on_update: str = ""
    task_name: str = ""


class Service(NomadObject):
    """A `service` block at group or task level; `provider = "nomad"` registers it in corral's
    own catalog, "consul" (Nomad's default) is kept and warned about (there is no Consul)."""

    name: str = ""
    task_name: str = ""
    port_label: str = ""
    address_mode: str = "auto"
    address: str = ""
    provider: str = ""
    on_update: str = ""
    tags: list[str] | None = None
    canary_tags: list[str] | None = None
    meta: dict[str, str] | None = None
    checks: list[ServiceCheck] | None = None
    check_restart: CheckRestart | None = None


class Task(NomadObject):
    name: str = ""
    driver: str = ""
    user: str = ""
    leader: bool = False
    kill_signal: str = ""
    lifecycle: TaskLifecycle | None = None
    dispatch_payload: DispatchPayloadConfig | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    meta: dict[str, str] = Field(default_factory=dict)
    constraints: list[Constraint] = Field(default_factory=list)
    affinities: list[Affinity] = Field(default_factory=list)
    resources: Resources = Field(default_factory=Resources)
    restart_policy: RestartPolicy | None = None
    templates: list[Template] | None = None
    services: list[Service] | None = None
    kill_timeout: Duration = 5 * SECOND
    shutdown_delay: Duration = 0
    volume_mounts: list[VolumeMount] | None = None
    artifacts: list[TaskArtifact] | None = None
    log_config: LogConfig | None = None


class TaskGroup(NomadObject):
    name: str = ""
    count: int = 1
    constraints: list[Constraint] = Field(default_factory=list)
    affinities: list[Affinity] = Field(default_factory=list)
    spreads: list[Spread] = Field(default_factory=list)
    tasks: list[Task] = Field(default_factory=list)
    networks: list[Network] = Field(default_factory=list)
    ephemeral_disk: EphemeralDisk = Field(default_factory=EphemeralDisk)
    restart_policy: RestartPolicy | None = None
    reschedule_policy: ReschedulePolicy | None = None
    update: UpdateStrategy | None = None
    migrate: MigrateStrategy | None = None
    disconnect: DisconnectStrategy | None = None
    scaling: ScalingPolicy | None = None
    meta: dict[str, str] = Field(default_factory=dict)
    services: list[Service] | None = None
    # The older spellings of ``disconnect``; the scheduler still reads MaxClientDisconnect.
    max_client_disconnect: Duration | None = None
    stop_after_client_disconnect: Duration | None = None
    prevent_reschedule_on_lost: bool | None = None
    shutdown_delay: Duration | None = None
    volumes: dict[str, VolumeRequest] | None = None


class Job(NomadObject):
    id: str = Field(default="", alias="ID")
    name: str | None = None
    namespace: str = "default"
    region: str = "global"
    type: str = "service"
    priority: int = 50
    datacenters: list[str] = Field(default_factory=lambda: ["*"])
    node_pool: str = "default"
    all_at_once: bool = False
    stop: bool = False
    meta: dict[str, str] = Field(default_factory=dict)
    constraints: list[Constraint] = Field(default_factory=list)
    affinities: list[Affinity] = Field(default_factory=list)
    spreads: list[Spread] = Field(default_factory=list)
    task_groups: list[TaskGroup] = Field(default_factory=list)
    update: UpdateStrategy | None = None
    # Job-wide policies that Nomad merges into every group's own.
    reschedule: ReschedulePolicy | None = None
    migrate: MigrateStrategy | None = None
    periodic: PeriodicConfig | None = None
    parameterized_job: ParameterizedJobConfig | None = None
    # Set on the children of periodic and parameterized jobs; stored in columns and read by
    # the client (the payload), so they are typed although clients rarely send them.
    parent_id: str | None = Field(default=None, alias="ParentID")
    dispatched: bool | None = None
    payload: str | None = None
