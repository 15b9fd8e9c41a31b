"""`service` and `check` blocks: Nomad's canonical form (api.Service.Canonicalize and
structs.Service.Canonicalize) and its validation, for the blocks corral acts on.

Services of `provider = "nomad"` are registered in corral's catalog and their checks run by
the client. Beyond Nomad's Nomad-provider checks (http and tcp only), corral also runs `script`
checks and honours `success_before_passing` and `failures_before_critical` (Consul-only in
Nomad): accepted rather than refused. `expose` is accepted and has no effect (there is no
Connect sidecar to expose a path through)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from app.jobspec.durations import SECOND
from app.jobspec.errors import FieldError, quote
from app.jobspec.model import CheckRestart, Job, Service, ServiceCheck, TaskGroup
from app.jobspec.rules.checks import Problems, min_duration, one_of

NOMAD, CONSUL = "nomad", "consul"
PROVIDERS = (CONSUL, NOMAD)
CHECK_TYPES = ("http", "tcp", "script")
ON_UPDATE = ("require_healthy", "ignore_warnings", "ignore")
ADDRESS_MODES = ("auto", "host", "driver", "alloc", "alloc_ipv6")
CHECK_ADDRESS_MODES = ("", "host", "driver", "alloc", "alloc_ipv6")
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE")
MIN_INTERVAL = SECOND
MIN_TIMEOUT = SECOND
# RFC 1123 labels (Nomad's ValidateName), after ${...} interpolations are set aside.
NAME = re.compile(r"^(?i:[a-z0-9]|[a-z0-9][a-z0-9\-]{0,61}[a-z0-9])$")
INTERPOLATION = re.compile(r"\$\{[^}]*\}")
GROUP = "group"  # the "task name" Nomad canonicalises group services with


def canonicalize_services(job: Job) -> None:
    """Nomad's defaults for every service of the job, in place."""
    job_name = job.name or job.id
    for group in job.task_groups:
        for service in group.services or []:
            _canonical(service, job_name, group.name, None, job.namespace)
        for task in group.tasks:
            for service in task.services or []:
                _canonical(service, job_name, group.name, task.name, job.namespace)


def _canonical(service: Service, job: str, group: str, task: str | None, namespace: str) -> None:
    if not service.name:
        service.name = f"{job}-{group}-{task}" if task is not None else f"{job}-{group}"
    base = f"{job}-{group}-{task if task is not None else GROUP}"
    for name, value in (("JOB", job), ("TASKGROUP", group), ("TASK", task or GROUP), ("BASE", base)):
        service.name = service.name.replace(f"${{{name}}}", value)
    service.on_update = service.on_update or "require_healthy"
    service.provider = service.provider or CONSUL
    if task is not None and not service.task_name:
        service.task_name = task
    if service.provider == NOMAD:
        # Nomad's structs.Service.Canonicalize: a Nomad service lives in its job's namespace.
        extra = service.__pydantic_extra__ if service.__pydantic_extra__ is not None else {}
        extra["Namespace"] = namespace
        service.__pydantic_extra__ = extra
    for check in service.checks or []:
        if not check.name:
            check.name = f'service: "{service.name}" check'
        if task is not None and not check.task_name:
            check.task_name = task
        check.on_update = check.on_update or service.on_update
        check.check_restart = merged_check_restart(service.check_restart, check.check_restart)


def merged_check_restart(service: CheckRestart | None, check: CheckRestart | None) -> CheckRestart | None:
    """Nomad's CheckRestart.Merge: the check's own settings over the service's."""
    if service is None:
        return check
    merged = service.model_copy(deep=True)
    if check is None:
        return merged
    if check.limit > 0:
        merged.limit = check.limit
    if "grace" in check.explicit_fields():
        merged.grace = check.grace
    merged.ignore_warnings = merged.ignore_warnings or check.ignore_warnings
    return merged


def group_port_labels(group: TaskGroup) -> set[str]:
    return {port.label for network in group.networks for port in (*network.reserved_ports, *network.dynamic_ports)}


def check_group_services(group: TaskGroup, path: str) -> Problems:
    """Every service of the group and of its tasks."""
    labels = group_port_labels(group)
    task_names = {task.name for task in group.tasks}
    for index, service in enumerate(group.services or []):
        yield from check_service(service, f"{path}.Services[{index}]", labels, task_names, group_level=True)
    for t, task in enumerate(group.tasks):
        for index, service in enumerate(task.services or []):
            where = f"{path}.Tasks[{t}].Services[{index}]"
            yield from check_service(service, where, labels, task_names, group_level=False)
    yield from _unique_ids(group, path)


def _unique_ids(group: TaskGroup, path: str) -> Problems:
    """Two Nomad services with one name and port in one place would share a registration ID."""
    seen: set[tuple[str, str, str]] = set()
    places: list[tuple[str, Iterable[Service]]] = [(GROUP, group.services or [])]
    places += [(task.name, task.services or []) for task in group.tasks]
    for place, services in places:
        for service in services:
            key = (place, service.name, service.port_label)
            if service.provider == NOMAD and key in seen:
                yield FieldError(
                    f"{path}.Services",
                    f"service {quote(service.name)} on port {quote(service.port_label)} is defined twice",
                )
            seen.add(key)


def check_service(
    service: Service, path: str, labels: set[str], task_names: set[str], *, group_level: bool
) -> Problems:
    stripped = INTERPOLATION.sub("ENV-VAR", service.name)
    if not NAME.match(stripped):
        yield FieldError(
            f"{path}.Name",
            "must be valid per RFC 1123 and can contain only alphanumeric characters or dashes and must be "
            f"no longer than 63 characters, got {quote(service.name)}",
        )
    yield from one_of(service.provider, PROVIDERS, f"{path}.Provider")
    yield from one_of(service.address_mode, ADDRESS_MODES, f"{path}.AddressMode")
    yield from one_of(service.on_update, ON_UPDATE, f"{path}.OnUpdate")
    if service.address and service.address_mode != "auto":
        yield FieldError(f"{path}.Address", 'requires address_mode "auto"')
    if service.provider != NOMAD:
        return  # Consul's rules are Consul's: the block is kept and warned about
    yield from _check_port(service.port_label, labels, f"{path}.PortLabel")
    for index, check in enumerate(service.checks or []):
        yield from check_check(check, service, f"{path}.Checks[{index}]", labels, task_names, group_level)


def _check_port(label: str, labels: set[str], path: str) -> Problems:
    if label and not label.isdigit() and label not in labels:
        known = ", ".join(sorted(labels)) or "none"
        yield FieldError(path, f"port label {quote(label)} does not exist in the group's network (ports: {known})")


def check_check(
    check: ServiceCheck, service: Service, path: str, labels: set[str], task_names: set[str], group_level: bool
) -> Problems:
    yield from one_of(check.type.lower(), CHECK_TYPES, f"{path}.Type")
    kind = check.type.lower()
    if kind in ("http", "tcp"):
        if not service.port_label and not check.port_label:
            yield FieldError(
                f"{path}.PortLabel",
                f"check {quote(check.name)} requires a port but neither check nor service "
                f"{quote(service.name)} has one",
            )
        yield from _check_port(check.port_label, labels, f"{path}.PortLabel")
    if kind == "http":
        yield from _check_http(check, path)
    if kind == "script":
        if not check.command:
            yield FieldError(f"{path}.Command", "is required: script type must have a valid script path")
        if group_level and check.task_name not in task_names:
            yield FieldError(f"{path}.TaskName", "must name a task of the group: a group script check runs inside it")
    if check.interval == 0:
        yield FieldError(f"{path}.Interval", "is required: the interval cannot be less than 1s")
    else:
        yield from min_duration(check.interval, MIN_INTERVAL, f"{path}.Interval")
    if check.timeout == 0:
        yield FieldError(f"{path}.Timeout", "is required: the timeout cannot be less than 1s")
    else:
        yield from min_duration(check.timeout, MIN_TIMEOUT, f"{path}.Timeout")
    yield from one_of(check.address_mode, CHECK_ADDRESS_MODES, f"{path}.AddressMode")
    yield from one_of(check.on_update, ON_UPDATE, f"{path}.OnUpdate")
    for name, value in (
        ("SuccessBeforePassing", check.success_before_passing),
        ("FailuresBeforeCritical", check.failures_before_critical),
    ):
        if value < 0:
            yield FieldError(f"{path}.{name}", f"must not be negative, got {value}")
    yield from _check_restart_rules(check, path)


def _check_http(check: ServiceCheck, path: str) -> Problems:
    if not check.path:
        yield FieldError(f"{path}.Path", "is required: http type must have an http path")
    elif urlsplit(check.path).scheme:
        yield FieldError(f"{path}.Path", f"must be a relative http path, got {quote(check.path)}")
    if check.method and check.method.upper() not in HTTP_METHODS:
        yield FieldError(f"{path}.Method", f"method type {quote(check.method)} not supported in an http check")
    if check.protocol not in ("", "http", "https"):
        yield FieldError(f"{path}.Protocol", f"must be http or https, got {quote(check.protocol)}")


def _check_restart_rules(check: ServiceCheck, path: str) -> Problems:
    restart = check.check_restart
    if restart is None:
        return
    if check.on_update == "ignore":
        yield FieldError(f"{path}.OnUpdate", 'on_update value "ignore" is not compatible with check_restart')
    if restart.limit < 0:
        yield FieldError(f"{path}.CheckRestart.Limit", f"must not be negative, got {restart.limit}")
    if restart.grace < 0:
        yield FieldError(f"{path}.CheckRestart.Grace", "must not be negative")
