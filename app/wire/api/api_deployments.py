"""Bodies of the deployment writes as the CLI sends them (the deployment itself is in
app/wire's deployment module)."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class DeploymentPromoteRequest(TypedDict):
    """Nomad's DeploymentPromoteRequest: every group (All) or the Groups named."""

    DeploymentID: str
    All: bool
    Groups: NotRequired[list[str]]


class DeploymentUpdateResponseJson(TypedDict):
    """Nomad's DeploymentUpdateResponse: the answer to promote, pause, fail and allocation health."""

    EvalID: str
    EvalCreateIndex: int
    DeploymentModifyIndex: int
    RevertedJobVersion: int | None
    Index: int
