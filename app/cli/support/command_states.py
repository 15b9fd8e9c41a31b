"""Every leaf command of Nomad's CLI (command/commands.go, community edition plus the
enterprise names it lists) and its state in corral, for docs/cli.md's table. "present" is read
from the click tree, so the table follows the code: a command that is added or removed changes
it, and tests/unit/test_cli_command_states.py fails until `uv run python -m
app.cli.support.command_states` has rewritten the table. Only what the tree cannot say is kept here: why
a command has no meaning for corral, and what a present command still lacks."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click

NOMAD_COMMANDS = """
acl auth-method create|acl auth-method delete|acl auth-method info|acl auth-method list|acl auth-method update
acl binding-rule create|acl binding-rule delete|acl binding-rule info|acl binding-rule list|acl binding-rule update
acl bootstrap|acl policy apply|acl policy delete|acl policy info|acl policy list|acl policy self
acl role create|acl role delete|acl role info|acl role list|acl role update
acl token create|acl token delete|acl token info|acl token list|acl token self|acl token update
action|agent|agent-info|alloc checks|alloc exec|alloc fs|alloc logs|alloc pause|alloc restart|alloc signal
alloc status|alloc stop|alloc-status|client-config|config validate|debug
deployment fail|deployment list|deployment pause|deployment promote|deployment resume|deployment status
deployment unblock|eval delete|eval list|eval status|eval-status|exec|fmt|fs|init|inspect
job action|job allocs|job deployments|job dispatch|job eval|job history|job init|job inspect|job periodic force
job plan|job promote|job restart|job revert|job run|job scale|job scaling-events|job start|job status|job stop
job tag apply|job tag unset|job validate|license get|login|logs|monitor|monitor export
namespace apply|namespace delete|namespace inspect|namespace list|namespace status
node config|node drain|node eligibility|node identity get|node identity renew|node intro create
node meta apply|node meta read|node pool apply|node pool delete|node pool info|node pool init|node pool jobs
node pool list|node pool nodes|node status|node-drain|node-status|operator api
operator autopilot get-config|operator autopilot health|operator autopilot set-config|operator client-state
operator debug|operator gossip keyring generate|operator gossip keyring install|operator gossip keyring list
operator gossip keyring remove|operator gossip keyring use|operator metrics|operator raft info
operator raft list-peers|operator raft logs|operator raft migrate-backend|operator raft remove-peer
operator raft state|operator raft transfer-leadership|operator root keyring list|operator root keyring remove
operator root keyring rotate|operator scheduler get-config|operator scheduler set-config
operator snapshot inspect|operator snapshot redact|operator snapshot restore|operator snapshot save
operator snapshot state|operator utilization|plan|plugin status
quota apply|quota delete|quota init|quota inspect|quota list|quota status
recommendation apply|recommendation dismiss|recommendation info|recommendation list|run
scaling policy info|scaling policy list|sentinel apply|sentinel delete|sentinel list|sentinel read
server force-leave|server join|server members|server-force-leave|server-join|server-members
service delete|service info|service list|setup consul|setup vault|start|status|stop|system gc
system reconcile summaries|tls ca create|tls ca info|tls cert create|tls cert info|ui|validate
var get|var init|var list|var lock|var purge|var put|version
volume claim delete|volume claim list|volume create|volume delete|volume deregister|volume detach|volume init
volume register|volume snapshot create|volume snapshot delete|volume snapshot list|volume status
windows service install|windows service uninstall
"""

_DEPRECATED = "a deprecated alias Nomad keeps; use the command it names"
_ENTERPRISE = "Nomad Enterprise only"
_GOSSIP = "no gossip: corral's servers share PostgreSQL, not a Serf ring"
_RAFT = "no Raft: the state is PostgreSQL's (its replication is the database's; see docs/operations.md)"
_SNAPSHOT = "the state is PostgreSQL's: back it up with pg_dump or the database's own backups"

NOT_APPLICABLE: dict[str, str] = {
    "alloc-status": _DEPRECATED,
    "eval-status": _DEPRECATED,
    "node-drain": _DEPRECATED,
    "node-status": _DEPRECATED,
    "server-force-leave": _DEPRECATED,
    "server-join": _DEPRECATED,
    "server-members": _DEPRECATED,
    "client-config": _DEPRECATED,
    "server force-leave": _GOSSIP,
    "server join": _GOSSIP,
    **{f"operator gossip keyring {c}": _GOSSIP for c in ("generate", "install", "list", "remove", "use")},
    **{f"operator raft {c}": _RAFT for c in ("info", "list-peers", "logs", "migrate-backend", "remove-peer")},
    "operator raft state": _RAFT,
    "operator raft transfer-leadership": _RAFT,
    **{f"operator autopilot {c}": _RAFT for c in ("get-config", "health", "set-config")},
    **{f"operator snapshot {c}": _SNAPSHOT for c in ("inspect", "redact", "restore", "save", "state")},
    "license get": _ENTERPRISE,
    "operator utilization": _ENTERPRISE,
    **{f"quota {c}": _ENTERPRISE for c in ("apply", "delete", "init", "inspect", "list", "status")},
    **{f"recommendation {c}": _ENTERPRISE for c in ("apply", "dismiss", "info", "list")},
    **{f"sentinel {c}": _ENTERPRISE for c in ("apply", "delete", "list", "read")},
    "deployment unblock": "multiregion deployments only: corral has one region",
    "setup consul": "corral has no Consul integration",
    "setup vault": "corral has no Vault integration",
    "volume deregister": "CSI volumes only: corral runs no CSI plugins (`volume delete` removes a host volume)",
    "volume detach": "CSI volumes only: corral runs no CSI plugins",
    **{f"volume snapshot {c}": "CSI volumes only: corral runs no CSI plugins" for c in ("create", "delete", "list")},
    "windows service install": "corral runs on Linux",
    "windows service uninstall": "corral runs on Linux",
    "monitor export": "a server writes no log file (its log goes to stderr): `corral monitor` streams it",
    "node config": "a node agent takes its server at start (`corral client --server`, its `-config` files)",
    "node identity get": "no node identity JWT: a client authenticates with its node SecretID (docs/security.md)",
    "node identity renew": "no node identity JWT: a client authenticates with its node SecretID (docs/security.md)",
    "node intro create": "registration takes an ACL token with `node:write`: `corral acl token create` with a "
    "node-write policy (docs/security.md)",
    "alloc pause": _ENTERPRISE + " (pauses a task of a job with a `schedule` block)",
}

# Present, but short of Nomad's everyday flags or behaviour: what is missing.
PARTIAL: dict[str, str] = {
    "operator client-state": "no `Networks`, `Volumes` or `NodeIdentity` (the client keeps no such records)",
    "operator root keyring remove": "`-force` does not remove a key variables are sealed with: `rotate -full` "
    "re-seals them first",
    "agent": "`-dev`, `-config` (Nomad's agent HCL/JSON, docs/configuration.md) and the flags that override it "
    "(`-bind`, `-data-dir`, `-server`, `-client`, `-servers`, `-meta`, `-alloc-dir`, `-network-interface`, ...; "
    "`-plugin-dir` is warned about: the drivers are built in); not the gossip, Raft, Consul and Vault flags",
    "volume status": "dynamic host volumes; corral runs no CSI plugins, so the CSI part is always empty",
    "volume delete": "`-type` defaults to host (Nomad's: csi); `-force` and `-secret` are accepted and unused",
    "plugin status": "corral runs no CSI plugins: always none",
}

# Nomad's command spelled otherwise in corral's tree.
CORRAL_NAME: dict[str, str] = {}

BEGIN, END = "<!-- command states: begin -->", "<!-- command states: end -->"


def nomad_commands() -> list[str]:
    return sorted({name.strip() for line in NOMAD_COMMANDS.split("\n") for name in line.split("|") if name.strip()})


def corral_commands(root: click.Group) -> set[str]:
    """Every command path in the click tree (groups included: `server` runs the API alone)."""
    found: set[str] = set()

    def walk(command: click.Command, path: list[str]) -> None:
        if path:
            found.add(" ".join(path))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])

    walk(root, [])
    return found


def states(root: click.Group) -> list[tuple[str, str, str]]:
    """(Nomad command, state, note) for every Nomad leaf command."""
    tree = corral_commands(root)
    rows = []
    for name in nomad_commands():
        present = CORRAL_NAME.get(name, name) in tree
        if present and name in PARTIAL:
            rows.append((name, "partial", PARTIAL[name]))
        elif present:
            rows.append((name, "present", ""))
        elif name in NOT_APPLICABLE:
            rows.append((name, "not applicable", NOT_APPLICABLE[name]))
        else:
            rows.append((name, "missing", ""))
    return rows


def table(root: click.Group) -> str:
    rows = states(root)
    counts = Counter(state for _, state, _ in rows)
    summary = ", ".join(f"{counts[s]} {s}" for s in ("present", "partial", "not applicable", "missing"))
    lines = [
        BEGIN,
        f"Nomad's {len(rows)} leaf commands: {summary}.",
        "",
        "| Nomad command | State | Note |",
        "|---|---|---|",
        *(f"| `{name}` | {state} | {note} |".replace(" |  |", " | |") for name, state, note in rows),
        END,
    ]
    return "\n".join(lines)


def rewrite(doc: Path, root: click.Group) -> bool:
    """Replace the table between the markers in DOC; True when it changed."""
    text = doc.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    updated = text[:start] + table(root) + text[end:]
    if updated == text:
        return False
    doc.write_text(updated)
    return True


if __name__ == "__main__":
    from app.cli import main

    changed = rewrite(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/cli.md"), main)
    print("docs/cli.md rewritten" if changed else "docs/cli.md is current")
