"""The Volume of a host volume create or register request, checked as Nomad's
HostVolume.Validate checks it, into the store's VolumeRequest."""

from __future__ import annotations

import re
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.http.validation import validate
from app.store.host_volumes import MKDIR, VolumeRequest
from app.values.errors import FieldProblem, InvalidInput
from app.wire.api.api_host_volumes import HostVolumeCapabilityJson
from app.wire.job import ConstraintSpec
from app.wire.json import JsonValue

# A name, with an optional allocation index suffix: a group's per_alloc request for `data`
# mounts `data[0]`, `data[1]`, ... (Nomad's MatchesRequestSource).
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}(\[[0-9]{1,9}\])?$")
NAME_RULE = "is required: 1-128 letters, digits, '_', '.' and '-', then an optional index suffix ([0]) for per_alloc"
MAX_BYTES = 2**63 - 1
DEFAULT_CAPABILITY = HostVolumeCapabilityJson(AttachmentMode="file-system", AccessMode="single-node-writer")


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class _Constraint(_Loose):
    LTarget: str = ""
    RTarget: str = ""
    Operand: str = "="


class _Capability(_Loose):
    AttachmentMode: Literal["file-system", "block-device"]
    AccessMode: Literal[
        "single-node-reader-only", "single-node-writer", "single-node-single-writer", "single-node-multi-writer"
    ]


class VolumeBody(_Loose):
    """Nomad's api.HostVolume as a request carries it (server-set fields are ignored)."""

    Namespace: str = ""
    ID: str = ""
    Name: str = ""
    PluginID: str = ""
    NodeID: str = ""
    NodePool: str = ""
    Constraints: list[_Constraint] | None = None
    RequestedCapacityMinBytes: int = Field(default=0, ge=0, le=MAX_BYTES)
    RequestedCapacityMaxBytes: int = Field(default=0, ge=0, le=MAX_BYTES)
    RequestedCapabilities: list[_Capability] | None = None
    Parameters: dict[str, str] | None = None
    HostPath: str = ""


def volume_request(raw: JsonValue, namespace: str, *, registering: bool) -> VolumeRequest:
    """The request's Volume, in the request's namespace; 400 naming each field that is wrong."""
    if not isinstance(raw, dict):
        raise InvalidInput.of("Volume", "is required: an object")
    body = validate(VolumeBody, raw, "Volume")
    problems = []
    if body.Namespace and body.Namespace != namespace:
        problems.append(FieldProblem("Volume.Namespace", f"does not match the request's namespace {namespace!r}"))
    if not NAME.fullmatch(body.Name):
        problems.append(FieldProblem("Volume.Name", NAME_RULE))
    low, high = body.RequestedCapacityMinBytes, body.RequestedCapacityMaxBytes
    if high and low > high:
        problems.append(
            FieldProblem(
                "Volume.RequestedCapacityMaxBytes", f"capacity_max ({high}) must be larger than capacity_min ({low})"
            )
        )
    if not registering and body.PluginID not in ("", MKDIR):
        problems.append(
            FieldProblem(
                "Volume.PluginID", f"corral's clients have only the built-in {MKDIR!r} plugin, not {body.PluginID!r}"
            )
        )
    if registering and not body.HostPath.startswith("/"):
        problems.append(FieldProblem("Volume.HostPath", "is required to register: an absolute path on the node"))
    if registering and not body.NodeID:
        problems.append(FieldProblem("Volume.NodeID", "is required to register a host volume"))
    volume_id, node_id = _uuid(body.ID, "Volume.ID", problems), _uuid(body.NodeID, "Volume.NodeID", problems)
    if problems:
        raise InvalidInput(problems)
    return VolumeRequest(
        namespace=namespace,
        name=body.Name,
        plugin_id=body.PluginID or ("" if registering else MKDIR),
        volume_id=volume_id,
        node_id=node_id,
        node_pool=body.NodePool,
        constraints=[
            ConstraintSpec(LTarget=c.LTarget, RTarget=c.RTarget, Operand=c.Operand) for c in body.Constraints or ()
        ],
        capacity_min=low,
        capacity_max=high,
        capabilities=[
            HostVolumeCapabilityJson(AttachmentMode=c.AttachmentMode, AccessMode=c.AccessMode)
            for c in body.RequestedCapabilities or ()
        ]
        or [DEFAULT_CAPABILITY],
        parameters=dict(body.Parameters or {}),
        host_path=body.HostPath,
    )


def _uuid(value: str, field: str, problems: list[FieldProblem]) -> uuid.UUID | None:
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        problems.append(FieldProblem(field, f"must be a UUID, got {value!r}"))
        return None
