"""How a deployment reads on the terminal: its list row and its status block.

Below both `corral deployment` and the monitors (`job run`, `deployment status -monitor`), which
print the same block while they follow a deployment."""

from __future__ import annotations

from datetime import UTC, datetime

from app.cli.support.output import columns
from app.wire.deployment import DeploymentJson, DeploymentStateJson

SHORT_ID_LENGTH = 8
ZERO_TIME = "0001-01-01T00:00:00Z"
GROUP_COLUMNS = (
    "Task Group",
    "Auto Revert",
    "Promoted",
    "Desired",
    "Canaries",
    "Placed",
    "Healthy",
    "Unhealthy",
    "Progress Deadline",
)


def short(value: str, verbose: bool) -> str:
    return value if verbose else value[:SHORT_ID_LENGTH]


def render_list(deployments: list[DeploymentJson], verbose: bool = False) -> str:
    if not deployments:
        return "No deployments found"
    rows = [["ID", "Job ID", "Job Version", "Status", "Description"]]
    for d in deployments:
        rows.append(
            [
                short(str(d["ID"]), verbose),
                str(d["JobID"]),
                str(d["JobVersion"]),
                str(d["Status"]),
                str(d.get("StatusDescription") or ""),
            ]
        )
    return "\n".join(columns(rows))


def progress_deadline(d: DeploymentJson, group: DeploymentStateJson) -> str:
    """When the group must next make progress: N/A without a progress_deadline or once the
    deployment is no longer running, TBD until its first allocation is placed."""
    if not group.get("ProgressDeadline") or d.get("Status") != "running":
        return "N/A"
    deadline = group.get("RequireProgressBy") or ZERO_TIME
    if deadline == ZERO_TIME:
        return "TBD"
    moment = datetime.fromisoformat(deadline.replace("Z", "+00:00")).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def render_status(d: DeploymentJson, verbose: bool = False) -> str:
    lines = [
        f"ID          = {short(str(d['ID']), verbose)}",
        f"Job ID      = {d['JobID']}",
        f"Job Version = {d['JobVersion']}",
        f"Status      = {d['Status']}",
        f"Description = {d.get('StatusDescription') or ''}",
    ]
    groups = d.get("TaskGroups") or {}
    if not groups:
        return "\n".join(lines)
    rows = [list(GROUP_COLUMNS)]
    for name in sorted(groups):
        g = groups[name]
        rows.append(
            [
                name,
                str(bool(g.get("AutoRevert"))).lower(),
                str(bool(g.get("Promoted"))).lower() if g.get("DesiredCanaries") else "N/A",
                str(g.get("DesiredTotal", 0)),
                str(g.get("DesiredCanaries", 0)),
                str(g.get("PlacedAllocs", 0)),
                str(g.get("HealthyAllocs", 0)),
                str(g.get("UnhealthyAllocs", 0)),
                progress_deadline(d, g),
            ]
        )
    return "\n".join([*lines, "", "Deployed", *columns(rows)])
