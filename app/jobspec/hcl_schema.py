"""Which arguments and blocks each block of a Nomad job file takes.

Names follow Nomad's job specification. A name that is not listed is an error with its
position and the valid names nearby, as Nomad's parser reports it. Blocks listed in
``OPAQUE`` are kept as written without checking their contents: their keys belong to a
driver (``config``), the user (``meta``, ``env``) or a feature corral does not act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Schema:
    attributes: frozenset[str]
    blocks: dict[str, str] = field(default_factory=dict)  # block type -> schema name


def _s(attributes: str, blocks: str = "") -> Schema:
    names = blocks.split()
    return Schema(frozenset(attributes.split()), {name.split(":")[0]: name.split(":")[-1] for name in names})


# Blocks whose contents are kept as written.
OPAQUE = frozenset(
    {
        "config",
        "meta",
        "env",
        "service",
        "vault",
        "volume",
        "volume_mount",
        "csi_plugin",
        "consul",
        "artifact",
        "identity",
        "multiregion",
        "device",
        "numa",
        "policy",
        "dns",
        "cni",
        "secret",
        "action",
        "schedule",
        "connect",
    }
)

_PLACEMENT = "constraint affinity spread"
SCHEMAS: dict[str, Schema] = {
    "root": _s("", "job variable locals"),
    "job": _s(
        "region namespace id name type priority datacenters node_pool all_at_once vault_token consul_token "
        "consul_namespace meta",
        f"group task {_PLACEMENT} update reschedule migrate periodic parameterized meta multiregion ui vault consul",
    ),
    "group": _s(
        "count shutdown_delay stop_after_client_disconnect max_client_disconnect prevent_reschedule_on_lost "
        "max_run_duration meta",
        f"task {_PLACEMENT} network restart reschedule ephemeral_disk update migrate disconnect scaling meta "
        "service volume vault consul",
    ),
    "task": _s(
        "driver user leader kill_timeout kill_signal shutdown_delay kind meta env config",
        "config env meta constraint affinity resources restart service template artifact logs volume_mount "
        "lifecycle dispatch_payload vault consul csi_plugin identity scaling action schedule secret",
    ),
    "constraint": _s(
        "attribute operator value distinct_hosts distinct_property regexp version semver set_contains "
        "set_contains_any set_contains_all"
    ),
    "affinity": _s(
        "attribute operator value weight regexp version semver set_contains set_contains_any set_contains_all"
    ),
    "spread": _s("attribute weight", "target"),
    "target": _s("value percent"),
    "update": _s(
        "max_parallel health_check min_healthy_time healthy_deadline progress_deadline auto_revert auto_promote "
        "canary stagger"
    ),
    "migrate": _s("max_parallel health_check min_healthy_time healthy_deadline"),
    "reschedule": _s("attempts interval delay delay_function max_delay unlimited"),
    "restart": _s("attempts interval delay mode render_templates"),
    "periodic": _s("cron crons enabled prohibit_overlap time_zone"),
    "parameterized": _s("payload meta_required meta_optional"),
    "network": _s("mode hostname mbits device cidr ip", "port dns cni"),
    "port": _s("static to host_network ignore_collision"),
    "ephemeral_disk": _s("size sticky migrate"),
    "disconnect": _s("lost_after stop_on_client_after replace reconcile"),
    "scaling": _s("min max enabled type", "policy"),
    "resources": _s("cpu cores memory memory_max disk iops secrets", "device numa network:network"),
    "logs": _s("max_files max_file_size enabled disabled"),
    "lifecycle": _s("hook sidecar"),
    "dispatch_payload": _s("file"),
    "ui": _s("description", "link"),
    "link": _s("label url"),
    "template": _s(
        "data destination source env change_mode change_signal splay perms uid gid left_delimiter "
        "right_delimiter error_on_missing_key vault_grace",
        "change_script wait",
    ),
    "change_script": _s("command args timeout fail_on_error"),
    "wait": _s("min max"),
    "variable": _s("type default description sensitive nullable", "validation"),
    "validation": _s("condition error_message"),
}
OPAQUE_ROOT = frozenset({"locals"})

# Blocks corral accepts and keeps but does not act on; register and plan warn about each.
IGNORED_BLOCKS = (
    "service",
    "vault",
    "volume",
    "volume_mount",
    "csi_plugin",
    "consul",
    "artifact",
    "identity",
    "multiregion",
    "ui",
    "secret",
    "action",
    "schedule",
    "device",
    "numa",
)
