"""Every route of Nomad's community-edition HTTP API (command/agent/http.go and the handlers it
dispatches to, per path and method; PUT and POST, which Nomad treats alike, are one row) and its
state in corral, for docs/api.md's table. Whether corral serves a route is read from the Flask
URL map, so the table follows the code: tests/unit/test_api_route_states.py fails until `uv run
python -m app.api.http.route_states` has rewritten it. Only what the map cannot say is kept here: why
a route has no meaning for corral (and what to use instead), and what a served route still lacks.

States: full (served), partial (served, short of Nomad's behaviour: the note says how), not
applicable (the note names corral's replacement), missing."""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from flask import Flask

# "METHODS path", one a line; `:x` is a path parameter (any name).
NOMAD_ROUTES = """
GET /v1/jobs
PUT,POST /v1/jobs
PUT,POST /v1/jobs/parse
GET,POST /v1/jobs/statuses
GET /v1/job/:job_id
PUT,POST /v1/job/:job_id
DELETE /v1/job/:job_id
PUT,POST /v1/job/:job_id/evaluate
GET /v1/job/:job_id/allocations
GET /v1/job/:job_id/evaluations
PUT,POST /v1/job/:job_id/periodic/force
PUT,POST /v1/job/:job_id/plan
GET /v1/job/:job_id/summary
PUT,POST /v1/job/:job_id/dispatch
PUT,POST /v1/job/:job_id/dispatch/payload
GET /v1/job/:job_id/versions
PUT,POST /v1/job/:job_id/revert
GET /v1/job/:job_id/deployments
GET /v1/job/:job_id/deployment
PUT,POST /v1/job/:job_id/stable
GET /v1/job/:job_id/scale
PUT,POST /v1/job/:job_id/scale
GET /v1/job/:job_id/services
GET /v1/job/:job_id/submission
GET /v1/job/:job_id/actions
GET /v1/job/:job_id/action
PUT,POST /v1/job/:job_id/versions/:name/tag
DELETE /v1/job/:job_id/versions/:name/tag
PUT,POST /v1/validate/job
GET /v1/nodes
GET /v1/node/:node_id
PUT,POST /v1/node/:node_id/evaluate
GET /v1/node/:node_id/allocations
PUT,POST /v1/node/:node_id/drain
PUT,POST /v1/node/:node_id/eligibility
PUT,POST /v1/node/:node_id/purge
GET /v1/node/pools
PUT,POST /v1/node/pools
GET /v1/node/pool/:name
PUT,POST /v1/node/pool/:name
DELETE /v1/node/pool/:name
GET /v1/node/pool/:name/nodes
GET /v1/node/pool/:name/jobs
GET /v1/allocations
GET /v1/allocation/:alloc_id
GET /v1/allocation/:alloc_id/checks
PUT,POST /v1/allocation/:alloc_id/stop
GET /v1/allocation/:alloc_id/services
GET /v1/evaluations
DELETE /v1/evaluations
GET /v1/evaluations/count
GET /v1/evaluation/:eval_id
GET /v1/evaluation/:eval_id/allocations
GET /v1/deployments
GET /v1/deployment/:deployment_id
GET /v1/deployment/allocations/:deployment_id
PUT,POST /v1/deployment/fail/:deployment_id
PUT,POST /v1/deployment/pause/:deployment_id
PUT,POST /v1/deployment/promote/:deployment_id
PUT,POST /v1/deployment/allocation-health/:deployment_id
PUT,POST /v1/deployment/unblock/:deployment_id
GET /v1/volumes
GET /v1/volumes/external
GET /v1/volumes/snapshot
PUT,POST /v1/volumes/snapshot
DELETE /v1/volumes/snapshot
GET /v1/volume/csi/:volume_id
PUT /v1/volume/csi/:volume_id
DELETE /v1/volume/csi/:volume_id
PUT /v1/volume/csi/:volume_id/create
DELETE /v1/volume/csi/:volume_id/delete
DELETE /v1/volume/csi/:volume_id/detach
GET /v1/plugins
GET /v1/plugin/csi/:plugin_id
GET /v1/volume/host/:volume_id
PUT,POST /v1/volume/host/create
PUT,POST /v1/volume/host/register
DELETE /v1/volume/host/:volume_id
GET /v1/volumes/claims
DELETE /v1/volumes/claim/:claim_id
GET /v1/acl/policies
GET /v1/acl/policy/:name
GET /v1/acl/policy/self
PUT,POST /v1/acl/policy/:name
DELETE /v1/acl/policy/:name
PUT,POST /v1/acl/token/onetime
PUT,POST /v1/acl/token/onetime/exchange
PUT,POST /v1/acl/bootstrap
GET /v1/acl/tokens
PUT,POST /v1/acl/token
GET /v1/acl/token/self
GET /v1/acl/token/:accessor
PUT,POST /v1/acl/token/:accessor
DELETE /v1/acl/token/:accessor
GET /v1/acl/roles
PUT,POST /v1/acl/role
GET /v1/acl/role/:role_id
PUT,POST /v1/acl/role/:role_id
DELETE /v1/acl/role/:role_id
GET /v1/acl/role/name/:name
GET /v1/acl/auth-methods
PUT,POST /v1/acl/auth-method
GET /v1/acl/auth-method/:name
PUT,POST /v1/acl/auth-method/:name
DELETE /v1/acl/auth-method/:name
GET /v1/acl/binding-rules
PUT,POST /v1/acl/binding-rule
GET /v1/acl/binding-rule/:rule_id
PUT,POST /v1/acl/binding-rule/:rule_id
DELETE /v1/acl/binding-rule/:rule_id
PUT,POST /v1/acl/oidc/auth-url
PUT,POST /v1/acl/oidc/complete-auth
PUT,POST /v1/acl/login
PUT,POST /v1/acl/identity/client-introduction-token
GET /v1/client/fs/ls/:alloc_id
GET /v1/client/fs/stat/:alloc_id
GET /v1/client/fs/readat/:alloc_id
GET /v1/client/fs/cat/:alloc_id
GET /v1/client/fs/stream/:alloc_id
GET /v1/client/fs/logs/:alloc_id
GET,PUT,POST /v1/client/gc
GET /v1/client/stats
GET /v1/client/allocation/:alloc_id/checks
GET /v1/client/allocation/:alloc_id/stats
GET /v1/client/allocation/:alloc_id/exec
GET /v1/client/allocation/:alloc_id/snapshot
PUT,POST /v1/client/allocation/:alloc_id/restart
GET /v1/client/allocation/:alloc_id/gc
PUT,POST /v1/client/allocation/:alloc_id/signal
GET /v1/client/metadata
PUT,POST /v1/client/metadata
GET /v1/client/identity
PUT,POST /v1/client/identity/renew
GET /v1/agent/self
PUT,POST /v1/agent/join
GET /v1/agent/members
PUT,POST /v1/agent/force-leave
GET /v1/agent/servers
PUT,POST /v1/agent/servers
GET /v1/agent/schedulers
GET /v1/agent/schedulers/config
PUT,POST /v1/agent/schedulers/config
GET /v1/agent/keyring/list
PUT,POST /v1/agent/keyring/install
PUT,POST /v1/agent/keyring/use
PUT,POST /v1/agent/keyring/remove
GET /v1/agent/health
GET /v1/agent/host
PUT,POST /v1/agent/reload
GET /v1/agent/monitor
GET /v1/agent/monitor/export
GET /v1/agent/pprof/
GET /v1/agent/pprof/cmdline
GET /v1/agent/pprof/profile
GET /v1/agent/pprof/trace
GET /v1/metrics
GET /v1/services
GET /v1/service/:name
DELETE /v1/service/:name/:registration_id
GET /v1/regions
GET /v1/status/leader
GET /v1/status/peers
GET /v1/scaling/policies
GET /v1/scaling/policy/:policy_id
PUT,POST /v1/search/fuzzy
PUT,POST /v1/search
GET /v1/operator/raft/configuration
DELETE /v1/operator/raft/peer
PUT,POST /v1/operator/raft/transfer-leadership
GET /v1/operator/keyring/keys
DELETE /v1/operator/keyring/key/:key_id
PUT,POST /v1/operator/keyring/rotate
GET /v1/operator/autopilot/configuration
PUT /v1/operator/autopilot/configuration
GET /v1/operator/autopilot/health
GET /v1/operator/snapshot
PUT,POST /v1/operator/snapshot
GET /v1/operator/upgrade-check/vault-workload-identity
GET /v1/operator/scheduler/configuration
PUT,POST /v1/operator/scheduler/configuration
PUT,POST /v1/system/gc
PUT,POST /v1/system/reconcile/summaries
GET /v1/event/stream
GET /v1/namespaces
PUT,POST /v1/namespace
GET /v1/namespace/:name
PUT,POST /v1/namespace/:name
DELETE /v1/namespace/:name
GET /v1/vars
GET /v1/var/:path
PUT /v1/var/:path
DELETE /v1/var/:path
GET /.well-known/jwks.json
GET /.well-known/openid-configuration
"""

_GOSSIP = "no gossip: corral's servers share PostgreSQL; `GET /v1/agent/members` lists them"
_RAFT = "no Raft: the state is PostgreSQL's (`GET /v1/status/peers` lists the servers; see docs/operations.md)"
_SNAPSHOT = "the state is PostgreSQL's: back it up with pg_dump or the database's own backups"
_PPROF = (
    "a Python process has no Go profiles: py-spy on the process, the `nomad.runtime.*` figures and timers at "
    "`/v1/metrics`, `/v1/agent/monitor`; `/v1/agent/pprof/cmdline` is served"
)
_NODE_IDENTITY = "no node identity JWT: a client authenticates to the servers with its node SecretID (docs/security.md)"
_CSI = "corral runs no CSI plugins: dynamic host volumes (`/v1/volume/host/...`) replace CSI volumes"

NOT_APPLICABLE: dict[str, str] = {
    "PUT,POST /v1/agent/join": _GOSSIP,
    "PUT,POST /v1/agent/servers": "a node agent takes its server at start (`corral client --server`)",
    "PUT,POST /v1/agent/force-leave": _GOSSIP,
    "GET /v1/agent/keyring/list": _GOSSIP,
    "PUT,POST /v1/agent/keyring/install": _GOSSIP,
    "PUT,POST /v1/agent/keyring/use": _GOSSIP,
    "PUT,POST /v1/agent/keyring/remove": _GOSSIP,
    "DELETE /v1/operator/raft/peer": _RAFT,
    "PUT,POST /v1/operator/raft/transfer-leadership": _RAFT,
    "GET /v1/operator/autopilot/configuration": _RAFT,
    "PUT /v1/operator/autopilot/configuration": _RAFT,
    "GET /v1/operator/autopilot/health": _RAFT,
    "GET /v1/operator/snapshot": _SNAPSHOT,
    "PUT,POST /v1/operator/snapshot": _SNAPSHOT,
    "PUT,POST /v1/deployment/unblock/:deployment_id": "multiregion deployments only: corral has one region",
    "GET /v1/operator/upgrade-check/vault-workload-identity": "corral has no Vault integration",
    **{
        route: _CSI
        for route in (
            "GET /v1/volumes/external",
            "GET /v1/volumes/snapshot",
            "PUT,POST /v1/volumes/snapshot",
            "DELETE /v1/volumes/snapshot",
            "GET /v1/volume/csi/:volume_id",
            "PUT /v1/volume/csi/:volume_id",
            "DELETE /v1/volume/csi/:volume_id",
            "PUT /v1/volume/csi/:volume_id/create",
            "DELETE /v1/volume/csi/:volume_id/delete",
            "DELETE /v1/volume/csi/:volume_id/detach",
            "GET /v1/plugin/csi/:plugin_id",
        )
    },
    "GET /v1/client/allocation/:alloc_id/snapshot": "sticky-volume migration between Nomad clients; corral "
    "clients do not migrate ephemeral disks",
    "GET /v1/agent/pprof/": _PPROF,
    "GET /v1/agent/pprof/profile": _PPROF,
    "GET /v1/agent/pprof/trace": _PPROF,
    "PUT,POST /v1/agent/reload": "a server's settings are its CORRAL_* environment, read at start: restart it",
    "GET /v1/agent/monitor/export": "a server writes no log file (its log goes to stderr): `/v1/agent/monitor` "
    "streams it",
    "PUT,POST /v1/agent/schedulers/config": "the workers are `corral worker` processes: start or stop them; "
    "`--num-schedulers` and `--schedulers` set their loops and types",
    "GET /v1/client/identity": _NODE_IDENTITY,
    "PUT,POST /v1/client/identity/renew": _NODE_IDENTITY,
    "PUT,POST /v1/acl/identity/client-introduction-token": "registration takes an ACL token with `node:write` (an "
    "introduction token: `corral acl token create` with a node-write policy; docs/security.md)",
}

PARTIAL: dict[str, str] = {
    "GET /v1/status/leader": "the answering server's address while a leader runs",
    "GET /v1/operator/raft/configuration": "the database's primary and standbys stand for the Raft peers",
    "GET /v1/status/peers": "only the answering server: API servers keep no registry",
    "GET /v1/agent/members": "the answering server and the singleton roles' holders",
    "GET /v1/agent/self": "config under Nomad's names for what corral has (the loaded agent files, Server, Client, "
    "ACL, TLS, ports); no raft or serf stats",
    "GET /v1/event/stream": "see the event stream section for the topics",
    "PUT,POST /v1/system/gc": "answers once the collection has run",
    "GET /v1/acl/token/:accessor": "`SecretID` is empty: only its hash is stored",
    "PUT,POST /v1/operator/keyring/rotate": "`?full` re-encrypts before answering",
    "PUT,POST /v1/node/:node_id/purge": "a node that ran allocations stays, down, until GC takes them",
    "DELETE /v1/evaluations": "an evaluation that placed allocations is kept (they name it)",
    "GET /v1/scaling/policies": "policy IDs are derived, not stored",
    "GET /v1/agent/schedulers": "the cluster's scheduling loops (every `corral worker` process), as last published",
    "GET /v1/agent/schedulers/config": "the cluster's live loops counted and their types joined; an API server "
    "runs none",
    "DELETE /v1/operator/keyring/key/:key_id": "`force` does not remove a key variables are sealed with: "
    "`operator root keyring rotate -full` re-seals them first; a running allocation placed before the key was retired "
    "counts as using it",
    "GET /v1/volumes": "`type=csi` is always empty (no CSI plugins)",
    "GET /v1/plugins": "always empty: corral runs no CSI plugins",
    "PUT,POST /v1/volume/host/create": "only the built-in `mkdir` plugin",
}

BEGIN, END = "<!-- route states: begin -->", "<!-- route states: end -->"
PARAM = re.compile(r":[^/]+")
RULE_PARAM = re.compile(r"<(?:\w+:)?(\w+)>")


def nomad_routes() -> list[tuple[str, str]]:
    """(methods, path) for each of Nomad's routes, in the table's order."""
    rows = []
    for line in NOMAD_ROUTES.strip().splitlines():
        methods, path = line.split()
        rows.append((methods, path))
    return rows


def _shape(path: str) -> str:
    """A path with every parameter made alike, so differently named parameters match."""
    return PARAM.sub(":", path)


def served(app: Flask) -> set[tuple[str, str]]:
    """(method, path shape) for every route the app serves."""
    out = set()
    for rule in app.url_map.iter_rules():
        path = _shape(RULE_PARAM.sub(r":\1", rule.rule))
        out |= {(method, path) for method in rule.methods or () if method not in ("HEAD", "OPTIONS")}
    return out


def states(app: Flask) -> list[tuple[str, str, str, str]]:
    """(methods, path, state, note) for each of Nomad's routes."""
    have = served(app)
    rows = []
    for methods, path in nomad_routes():
        key = f"{methods} {path}"
        wanted = [(m, _shape(path)) for m in methods.split(",")]
        present = [w for w in wanted if w in have]
        if key in NOT_APPLICABLE:  # served or not, the answer names what to use instead
            served_note = "; answered with a 501 naming it" if present else ""
            rows.append((methods, path, "not applicable", NOT_APPLICABLE[key] + served_note))
        elif present and (len(present) < len(wanted) or key in PARTIAL):
            missing = ", ".join(m for m, _ in wanted if (m, _) not in have)
            note = PARTIAL.get(key) or f"no {missing}"
            rows.append((methods, path, "partial", note))
        elif present:
            rows.append((methods, path, "full", ""))
        else:
            rows.append((methods, path, "missing", ""))
    return rows


def extensions(app: Flask) -> list[tuple[str, str]]:
    """Routes corral serves that Nomad's HTTP API has not (its client protocol, extras)."""
    nomad = {(m, _shape(p)) for methods, p in nomad_routes() for m in methods.split(",")}
    found: dict[str, list[str]] = {}
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/v1/"):
            continue
        path = RULE_PARAM.sub(r":\1", rule.rule)
        methods = sorted(m for m in rule.methods or () if m not in ("HEAD", "OPTIONS"))
        extra = [m for m in methods if (m, _shape(path)) not in nomad]
        if extra:
            found.setdefault(path, []).extend(extra)
    return sorted((",".join(sorted(set(ms))), path) for path, ms in found.items())


def _cells(rows: Iterable[tuple[str, str, str, str]]) -> list[str]:
    return [
        f"| `{methods.replace(',', ', ')}` | `{path}` | {state} | {note} |".replace(" |  |", " | |")
        for methods, path, state, note in rows
    ]


def table(app: Flask) -> str:
    rows = states(app)
    counts = Counter(state for _, _, state, _ in rows)
    summary = ", ".join(f"{counts[s]} {s}" for s in ("full", "partial", "not applicable", "missing"))
    extra = extensions(app)
    lines = [
        BEGIN,
        f"Nomad's {len(rows)} community-edition routes (per path and method, PUT and POST as one): {summary}.",
        "",
        "| methods | Nomad route | state | note |",
        "|---|---|---|---|",
        *_cells(rows),
        "",
        f"corral's {len(extra)} routes of its own (the client protocol Nomad speaks over RPC, and extensions):",
        "",
        *(f"- `{methods.replace(',', ', ')} {path}`" for methods, path in extra),
        END,
    ]
    return "\n".join(lines)


def rewrite(doc: Path, app: Flask) -> bool:
    """Replace the table between the markers in DOC; True when it changed."""
    text = doc.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    updated = text[:start] + table(app) + text[end:]
    if updated == text:
        return False
    doc.write_text(updated)
    return True


def probe() -> Flask:
    """An app with every blueprint registered and nothing connected."""
    from app.api import register

    app = Flask("route-states")
    register(app)
    return app


if __name__ == "__main__":
    changed = rewrite(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/api.md"), probe())
    print("docs/api.md rewritten" if changed else "docs/api.md is current")
