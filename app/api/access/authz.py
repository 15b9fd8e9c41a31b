"""ACL enforcement's table: every route declares what it needs in REQUIREMENTS, and install()
has every request checked against it (app/api/access/enforcement.py). A route missing from the table
is refused (and a unit test fails), so a new route cannot ship open by accident.

The kinds of requirement are in app/api/access/requirements.py; who the caller is, in
app/api/access/callers.py (ACL tokens) and app/api/access/node_secrets.py (nodes' SecretIDs). With ACLs off
(the default) nothing is checked, as in Nomad."""

from __future__ import annotations

from flask import Flask

from app.acl import policy as pol
from app.api.access import enforcement

# Token resolution and the route kinds, importable from here as before the split.
from app.api.access.callers import Caller, Denied, caller, presented_token, resolve_caller
from app.api.access.requirements import (
    Area,
    InNamespace,
    InNodePool,
    ListIn,
    Management,
    NodeIntroduction,
    NodeSecret,
    OwnFilter,
    Public,
    Requirement,
    ServiceRead,
    VariableOp,
)

R, W = pol.READ, pol.WRITE
REQUIREMENTS: dict[str, Requirement] = {
    "static": Public(),
    "agent.health": Public(),
    # The web UI's page shells and script hold no cluster data: every figure on a page comes
    # from a /v1 call made with the visitor's token and checked here like any other.
    "ui.page": Public(),
    "ui.static": Public(),
    "metrics.metrics": Public(),  # Nomad's /v1/metrics needs no token either
    # Cluster status (Nomad: none for leader, peers and regions; node:read for members).
    "status.leader": Public(),
    "status.peers": Public(),
    "status.regions": Public(),
    "status.members": Area("node", R),
    # Search answers across contexts without filtering each by the caller's capabilities yet:
    # a management token until it does, so nothing leaks.
    "search.prefix_search": Management(),
    "search.fuzzy_search": Management(),
    "agent.self_": Area("agent", R),
    # Agent introspection (Nomad: agent:read for the monitor and host data, agent:write for pprof).
    "agent_debug.monitor": Area("agent", R),
    "agent_debug.host": Area("agent", R),
    "agent_debug.pprof": Area("agent", W),
    "agent_debug.pprof_cmdline": Area("agent", W),
    "agent_debug.monitor_export": Area("agent", R),  # Nomad: agent:read
    "agent_debug.reload": Area("agent", W),  # Nomad: agent:write
    # Scheduler workers (Nomad: agent:read to read, agent:write to change).
    "schedulers.schedulers": Area("agent", R),
    "schedulers.get_config": Area("agent", R),
    "schedulers.set_config": Area("agent", W),
    # ACL objects (the bootstrap guards itself; reads filter to the token's own policies).
    "acl.bootstrap": Public(),
    "acl.list_policies": OwnFilter("the token's own policies"),
    "acl.get_policy": OwnFilter("a policy the token carries"),
    "acl.put_policy": Management(),
    "acl.delete_policy": Management(),
    "acl.list_tokens": Management(),
    "acl.create_token": Management(),
    "acl.get_token": Management(),
    "acl.update_token": Management(),
    "acl.delete_token": Management(),
    "acl.token_self": OwnFilter("the calling token"),
    "acl.policy_self": OwnFilter("the calling token's policies"),
    # SSO: the method list is public (the UI's sign-in page shows it); the rest needs management.
    "acl_auth.list_methods": Public(),
    "acl_auth.create_method": Management(),
    "acl_auth.get_method": Management(),
    "acl_auth.update_method": Management(),
    "acl_auth.delete_method": Management(),
    "acl_auth.list_rules": Management(),
    "acl_auth.create_rule": Management(),
    "acl_auth.get_rule": Management(),
    "acl_auth.update_rule": Management(),
    "acl_auth.delete_rule": Management(),
    # A login proves itself with its JWT; the exchange with its one-time secret.
    "acl_login.login_": Public(),
    "acl_login.create_one_time": OwnFilter("the calling token"),
    "acl_login.exchange_one_time": Public(),
    "acl_oidc.auth_url": Public(),  # a login starts without a token (Nomad's OIDC routes are open)
    "acl_oidc.complete_auth": Public(),
    # ACL roles (Nomad: writes need management; a client token reads the roles it links).
    "acl_roles.list_roles": OwnFilter("the roles the token links"),
    "acl_roles.get_role": OwnFilter("a role the token links"),
    "acl_roles.get_role_by_name": OwnFilter("a role the token links"),
    "acl_roles.create_role": Management(),
    "acl_roles.update_role": Management(),
    "acl_roles.delete_role": Management(),
    # Namespaces.
    "namespaces.list_namespaces": OwnFilter("namespaces the token may use"),
    "namespaces.get_namespace": OwnFilter("a namespace the token may use"),
    "namespaces.put_namespace": Management(),
    "namespaces.delete_namespace": Management(),
    # Jobs.
    "jobs.list_jobs": ListIn(pol.LIST_JOBS),
    "job_statuses.statuses": ListIn(pol.READ_JOB),  # Nomad's Job.Statuses: read-job
    "jobs.register": InNamespace(pol.SUBMIT_JOB, "job"),
    "jobs.update": InNamespace(pol.SUBMIT_JOB, "job"),
    "jobs.parse": InNamespace(pol.PARSE_JOB),
    "job_validate.validate": InNamespace(pol.READ_JOB, "job"),  # Nomad: namespace:read-job
    "jobs.get_job": InNamespace(pol.READ_JOB),
    "jobs.deregister": InNamespace(pol.SUBMIT_JOB),
    "jobs.versions": InNamespace(pol.READ_JOB),
    "job_submission.submission": InNamespace(pol.READ_JOB),
    # Nomad: submit-job or tag-job-version; corral knows no tag-job-version capability yet.
    "job_tags.apply": InNamespace(pol.SUBMIT_JOB),
    "job_tags.unset": InNamespace(pol.SUBMIT_JOB),
    "job_actions.list_actions": InNamespace(pol.READ_JOB),
    # Nomad: alloc-exec in the job's namespace (+ alloc-node-exec for raw_exec, in the route).
    "job_actions.run_action": InNamespace(pol.ALLOC_EXEC),
    "jobs.evaluations": InNamespace(pol.READ_JOB),
    "jobs.allocations": InNamespace(pol.READ_JOB),
    "jobs.summary": InNamespace(pol.READ_JOB),
    "job_plan.plan": InNamespace(pol.SUBMIT_JOB, "job"),
    "periodic.force": InNamespace(pol.SUBMIT_JOB),
    "periodic.dispatch": InNamespace(pol.DISPATCH_JOB),
    "periodic.dispatch_payload": InNamespace(pol.DISPATCH_JOB),
    "job_scale.scale_status": InNamespace(pol.READ_JOB_SCALING),
    "job_scale.scale": InNamespace(pol.SCALE_JOB),
    # Nomad: list-scaling-policies (or list-jobs and read-job), read-scaling-policy (or the same).
    "scaling_policies.list_policies": ListIn(pol.LIST_SCALING_POLICIES),
    "scaling_policies.get_policy": InNamespace(pol.READ_SCALING_POLICY),
    "job_versions.revert": InNamespace(pol.SUBMIT_JOB),
    "job_versions.stable": InNamespace(pol.SUBMIT_JOB),
    "evaluate.job_evaluate": InNamespace(pol.SUBMIT_JOB),  # Nomad's job eval: submit-job
    # Deployments.
    "deployments.list_deployments": ListIn(pol.READ_JOB),
    "deployments.get_deployment": InNamespace(pol.READ_JOB, "deployment"),
    "deployments.deployment_allocations": InNamespace(pol.READ_JOB, "deployment"),
    "deployments.job_deployments": InNamespace(pol.READ_JOB),
    "deployments.job_latest_deployment": InNamespace(pol.READ_JOB),
    "deployments.promote": InNamespace(pol.SUBMIT_JOB, "deployment"),
    "deployments.pause": InNamespace(pol.SUBMIT_JOB, "deployment"),
    "deployments.fail": InNamespace(pol.SUBMIT_JOB, "deployment"),
    "deployments.allocation_health": InNamespace(pol.SUBMIT_JOB, "deployment"),
    # Nomad's service catalog (Nomad: read-job to read, submit-job to delete).
    "services.list_services": ListIn(pol.READ_JOB, workload_may=True),
    "services.get_service": ServiceRead(),  # read-job, or a workload identity of the namespace
    "services.delete_service": InNamespace(pol.SUBMIT_JOB),
    "services.job_services": InNamespace(pol.READ_JOB),
    "services.alloc_services": InNamespace(pol.READ_JOB, "allocation"),
    "services.sync_services": NodeSecret(),
    # Dynamic host volumes (Nomad: host-volume-read/-create/-register/-delete in the namespace;
    # the list is ListIn like Nomad's, narrowed per namespace). A node reads its own volumes.
    "csi.list_volumes": ListIn("host-volume-read"),
    "host_volumes.get_volume": InNamespace("host-volume-read"),
    "host_volumes.create_volume": InNamespace("host-volume-create"),
    "host_volumes.register_volume": InNamespace("host-volume-register"),
    "host_volumes.delete_volume": InNamespace("host-volume-delete"),
    "host_volumes.node_volumes": NodeSecret(),
    # Sticky volume claims (Nomad: host-volume-read lists, host-volume-delete deletes).
    "volume_claims.list_claims": ListIn("host-volume-read"),
    "volume_claims.delete_claim": InNamespace("host-volume-delete"),
    # CSI: nothing to read (empty lists, 404s) and the writes answer 501 naming host volumes.
    "csi.list_plugins": Area("plugin", R),
    "csi.get_plugin": Area("plugin", R),
    "csi.csi_write": InNamespace("csi-write-volume"),
    # Evaluations and allocations.
    "evals.list_evaluations": ListIn(pol.READ_JOB),
    "evals.count_evaluations": ListIn(pol.READ_JOB),  # Nomad's Eval.Count: read-job, per namespace
    "evals.get_evaluation": InNamespace(pol.READ_JOB, "evaluation"),
    "eval_delete.delete_evaluations": Management(),  # Nomad's Eval.Delete: a management token
    "evals.evaluation_allocations": InNamespace(pol.READ_JOB, "evaluation"),
    "allocs.list_allocations": ListIn(pol.READ_JOB),
    "allocs.get_allocation": InNamespace(pol.READ_JOB, "allocation", node_may=True),
    "allocs.stop_allocation": InNamespace(pol.ALLOC_LIFECYCLE, "allocation"),
    # Nomad's client routes, proxied to the client running the allocation.
    "client_fs.logs": InNamespace(pol.READ_LOGS, "allocation"),
    "client_fs.ls": InNamespace(pol.READ_FS, "allocation"),
    "client_fs.stat": InNamespace(pol.READ_FS, "allocation"),
    "client_fs.cat": InNamespace(pol.READ_FS, "allocation"),
    "client_fs.readat": InNamespace(pol.READ_FS, "allocation"),
    "client_fs.stream": InNamespace(pol.READ_FS, "allocation"),
    "client_allocs.alloc_stats": InNamespace(pol.READ_JOB, "allocation"),  # Nomad: read-job
    "client_allocs.restart": InNamespace(pol.ALLOC_LIFECYCLE, "allocation"),
    "client_allocs.signal_task": InNamespace(pol.ALLOC_LIFECYCLE, "allocation"),
    "client_allocs.host_stats": Area("node", R),
    "client_allocs.alloc_gc": InNamespace(pol.SUBMIT_JOB, "allocation"),  # Nomad: submit-job (or gc-allocation)
    # Dynamic node metadata (Nomad: node:read to read, node:write to apply).
    "client_meta.read_meta": Area("node", R),
    "client_meta.apply_meta": Area("node", W),
    "client_allocs.alloc_checks": InNamespace(pol.READ_JOB, "allocation"),  # Nomad: read-job
    "client_exec.alloc_exec": InNamespace(pol.ALLOC_EXEC, "allocation"),  # + alloc-node-exec for raw_exec, in the route
    # Nodes and the client protocol.
    "nodes.register": NodeIntroduction(),
    "nodes.list_nodes": Area("node", R),
    "nodes.get_node": Area("node", R),
    "nodes.eligibility": Area("node", W),
    "nodes.drain": Area("node", W),
    "node_purge.purge": Area("node", W),  # Nomad's Node.Deregister: node:write
    # Node pools: Nomad's node_pool rules (read, write, delete on a pool or a glob).
    "node_pools.list_pools": OwnFilter("the pools the token may use"),
    "node_pools.get_pool": InNodePool(pol.READ),
    "node_pools.put_pool": InNodePool(pol.WRITE, source="body"),
    "node_pools.delete_pool": InNodePool(pol.DELETE),
    "node_pools.pool_nodes": InNodePool(pol.READ, node_read=True),
    "node_pools.pool_jobs": InNodePool(pol.READ),
    "evaluate.node_evaluate": Area("node", W),
    "nodes.node_allocations": NodeSecret(),
    "client.heartbeat": NodeSecret(),
    "client.update_allocations": NodeSecret(),
    "client.client_gc": Area("node", W),
    # Operator and system.
    "operator.get_configuration": Area("operator", R),
    "operator.put_configuration": Area("operator", W),
    "activity.activity": Area("operator", R),  # corral extension: the UI's activity chart
    "system.force_gc": Management(),
    "system.gc_runs": Area("operator", R),
    # Nomad's Raft, autopilot, snapshot and gossip routes: answered from the database or with a
    # 501 naming the replacement, behind the ACL Nomad puts on each (app/api/routes/replaced.py).
    "replaced.raft_configuration": Area("operator", R),
    "replaced.raft_change": Area("operator", W),
    "replaced.autopilot": Area("operator", R),
    "replaced.snapshot": Management(),
    "replaced.gossip": Area("agent", W),
    "replaced.servers": Area("agent", R),
    "replaced.set_servers": Area("agent", W),
    "replaced.reconcile_summaries": Management(),
    # Variables (Nomad's variables capabilities on the path; the list shows each caller only the
    # paths it may list) and the keyring (Nomad: operator keyring-read / keyring-rotate, which
    # operator read / write grant).
    "variables.list_variables": OwnFilter("variables the token may list"),
    "variables.get_variable": VariableOp("read"),
    "variables.put_variable": VariableOp("write"),
    "variables.delete_variable": VariableOp("destroy"),
    "keyring.list_keys": Area("operator", R),
    "keyring.rotate": Area("operator", W),
    "keyring.remove_key": Area("operator", W),  # Nomad: operator keyring-delete, which operator write grants
    "keyring_public.jwks": Public(),  # public keys, for anyone verifying an identity
    "keyring_public.openid_configuration": Public(),  # OIDC discovery must be public (Nomad's Keyring.GetConfig)
    "client_identities.sign_identities": NodeSecret(),
    # The event stream checks each requested topic itself (Nomad's rules) and drops the events
    # of namespaces the token may not read (app/api/access/event_filter.py).
    "events.stream": OwnFilter("events of the topics and namespaces the token may read"),
}


def install(app: Flask) -> None:
    """Enforce REQUIREMENTS on every request of `app` (nothing runs while ACLs are off)."""
    enforcement.install(app, REQUIREMENTS)


__all__ = [
    "REQUIREMENTS",
    "Area",
    "Caller",
    "Denied",
    "InNamespace",
    "InNodePool",
    "ListIn",
    "Management",
    "NodeIntroduction",
    "NodeSecret",
    "OwnFilter",
    "Public",
    "Requirement",
    "VariableOp",
    "caller",
    "install",
    "presented_token",
    "resolve_caller",
]
