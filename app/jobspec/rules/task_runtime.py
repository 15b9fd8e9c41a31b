"""Rules for what the client acts on around a task: host volumes and their mounts, artifacts
and the logs block (Nomad's VolumeRequest, VolumeMount, TaskArtifact and LogConfig Validate)."""

from __future__ import annotations

import posixpath
import re
import string

from app.jobspec.errors import FieldError, quote
from app.jobspec.model import LogConfig, Task, TaskArtifact, TaskGroup
from app.jobspec.rules.checks import Problems, one_of, required

VOLUME_TYPES = ("host", "csi")
GETTER_MODES = ("any", "file", "dir")
# Digest lengths in hex characters, per checksum type go-getter verifies.
CHECKSUM_HEX = {"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}
_HEX = frozenset(string.hexdigits)
_INTERPOLATED = re.compile(r"\$\{[^}]*\}")


def check_volumes(group: TaskGroup, path: str, job_type: str = "service", canaries: int = 0) -> Problems:
    for name, volume in (group.volumes or {}).items():
        where = f"{path}.Volumes[{quote(name)}]"
        if volume.type not in VOLUME_TYPES:
            yield FieldError(f"{where}.Type", f"volume has unrecognized type {quote(volume.type)}")
        elif volume.type == "host" and not volume.source:
            yield FieldError(f"{where}.Source", "volume has an empty source")
        if volume.per_alloc:
            yield from _check_per_alloc(volume.sticky, job_type, canaries, f"{where}.PerAlloc")


def _check_per_alloc(sticky: bool, job_type: str, canaries: int, path: str) -> Problems:
    """Nomad's VolumeRequest.Validate: each allocation mounts its own `source[N]`, so there is no
    index for a system job's allocations nor a volume for a canary, and a sticky claim follows
    the group, not the index."""
    if job_type in ("system", "sysbatch"):
        yield FieldError(path, "volume cannot be per_alloc for system or sysbatch jobs")
    if canaries > 0:
        yield FieldError(path, "volume cannot be per_alloc when canaries are in use")
    if sticky:
        yield FieldError(path, "volume cannot be per_alloc and sticky at the same time")


def check_task_runtime(task: Task, group: TaskGroup, disk_mb: int, path: str) -> Problems:
    declared = group.volumes or {}
    for index, mount in enumerate(task.volume_mounts or ()):
        where = f"{path}.VolumeMounts[{index}]"
        if mount.volume not in declared:
            yield FieldError(f"{where}.Volume", f"references undefined volume {quote(mount.volume)}")
        yield from required(mount.destination, f"{where}.Destination")
    for index, artifact in enumerate(task.artifacts or ()):
        yield from _check_artifact(artifact, f"{path}.Artifacts[{index}]")
    if task.log_config is not None:
        yield from _check_logs(task.log_config, disk_mb, f"{path}.LogConfig")


# Nomad's DefaultLogConfig. A job read back carries it spelt out; corral checks the disk only
# against a logs block that asks for something else, so such a job (and any job that never set
# logs) registers again as it did the first time, whatever its ephemeral disk.
DEFAULT_LOGS = LogConfig()


def _check_artifact(artifact: TaskArtifact, path: str) -> Problems:
    if not artifact.getter_source:
        yield FieldError(f"{path}.GetterSource", "source must be specified")
    yield from one_of(artifact.getter_mode, GETTER_MODES, f"{path}.GetterMode")
    if escapes_alloc_dir(artifact.relative_dest):
        yield FieldError(f"{path}.RelativeDest", "destination escapes allocation directory")
    checksum = (artifact.getter_options or {}).get("checksum")
    if checksum is not None:
        problem = checksum_problem(checksum)
        if problem is not None:
            yield FieldError(f"{path}.GetterOptions.checksum", problem)


def escapes_alloc_dir(relative: str) -> bool:
    """Whether a path taken relative to a task's directory leaves the allocation's directory
    (Nomad allows ``../alloc/data``, not ``../../etc``); absolute paths are the task's own."""
    if "\x00" in relative:
        return True
    joined = posixpath.normpath(posixpath.join("/alloc/task", relative.lstrip("/")))
    return not (joined == "/alloc" or joined.startswith("/alloc/"))


def checksum_problem(checksum: str) -> str | None:
    """go-getter's checksum option, ``type:hex``; None when fine or left to interpolation."""
    if _INTERPOLATED.search(checksum):
        return None  # filled in on the client, checked when the artifact is fetched
    kind, colon, digest = checksum.strip().partition(":")
    if not colon or ":" in digest:
        return f'checksum must be given as "type:value"; got {quote(checksum)}'
    if kind not in CHECKSUM_HEX:
        return f"unsupported checksum type: {kind}"
    if not digest or not set(digest) <= _HEX or len(digest) % 2:
        return f"invalid checksum: {digest!r} is not hexadecimal"
    if len(digest) != CHECKSUM_HEX[kind]:
        return f"invalid {kind} checksum: {digest}"
    return None


def _check_logs(logs: LogConfig, disk_mb: int, path: str) -> Problems:
    if logs.max_files < 1:
        yield FieldError(f"{path}.MaxFiles", f"minimum number of files is 1; got {logs.max_files}")
    if logs.max_file_size_mb < 1:
        yield FieldError(f"{path}.MaxFileSizeMB", f"minimum file size is 1MB; got {logs.max_file_size_mb}")
    usage = logs.max_files * logs.max_file_size_mb
    if not logs.disabled and usage >= disk_mb > 0 and logs != DEFAULT_LOGS:
        yield FieldError(path, f"log storage ({usage} MB) must be less than requested disk capacity ({disk_mb} MB)")
