"""Every key of Nomad's agent configuration: the ones corral acts on (with the CORRAL_* variable
or client setting each becomes), the ones Nomad knows that mean nothing here (a warning names
them), and the corral extensions. A key in neither is refused, as Nomad refuses it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.agentconfig import values as v


@dataclass(frozen=True)
class Key:
    """A key corral acts on. `env`: the server roles' CORRAL_* variable it sets; `client`: the
    client config setting it sets; neither: the translation handles it by hand."""

    convert: v.Convert
    env: str = ""
    client: str = ""
    doc: str = ""


@dataclass(frozen=True)
class Block:
    """A block: its keys, nested blocks, and the Nomad keys with no meaning here. `labeled`:
    `name "label" { ... }` blocks whose bodies are each a Block like this one."""

    keys: Mapping[str, Key | Block] = field(default_factory=dict)
    ignored: frozenset[str] = frozenset()
    labeled: bool = False
    doc: str = ""


def _ignored(names: str) -> frozenset[str]:
    return frozenset(names.split())


ADDRESS = Block(
    {"http": Key(v.nonempty, doc="the API's address (port from ports.http)")},
    _ignored("rpc serf"),
)
PORTS = Block({"http": Key(v.integer(1), doc="the API's port")}, _ignored("rpc serf"))

SERVER = Block(
    {
        "enabled": Key(v.boolean, doc="run the server roles: API, 2 workers, applier, leader"),
        "data_dir": Key(v.nonempty, doc="the servers' data directory (embedded database, keys)"),
        "num_schedulers": Key(v.integer(1), env="CORRAL_NUM_SCHEDULERS", doc="scheduling loops per worker"),
        "heartbeat_grace": Key(v.seconds, env="CORRAL_HEARTBEAT_GRACE_S"),
        "min_heartbeat_ttl": Key(v.positive_seconds, env="CORRAL_HEARTBEAT_MIN_TTL_S"),
        "max_heartbeats_per_second": Key(v.number, env="CORRAL_MAX_HEARTBEATS_PER_SECOND"),
        "failover_heartbeat_ttl": Key(v.positive_seconds, env="CORRAL_FAILOVER_HEARTBEAT_TTL_S"),
        "job_gc_interval": Key(v.positive_seconds, env="CORRAL_JOB_GC_INTERVAL_S"),
        "job_gc_threshold": Key(v.seconds, env="CORRAL_JOB_GC_THRESHOLD_S"),
        "eval_gc_threshold": Key(v.seconds, env="CORRAL_EVAL_GC_THRESHOLD_S"),
        "batch_eval_gc_threshold": Key(v.seconds, env="CORRAL_BATCH_EVAL_GC_THRESHOLD_S"),
        "deployment_gc_threshold": Key(v.seconds, env="CORRAL_DEPLOYMENT_GC_THRESHOLD_S"),
        "node_gc_threshold": Key(v.seconds, env="CORRAL_NODE_GC_THRESHOLD_S"),
        "job_tracked_versions": Key(v.integer(1), env="CORRAL_JOB_MAX_VERSIONS"),
        "job_max_source_size": Key(v.size_bytes, env="CORRAL_JOB_MAX_SOURCE_SIZE"),
        "oidc_issuer": Key(v.nonempty, env="CORRAL_OIDC_ISSUER"),
    },
    _ignored(
        "authoritative_region bootstrap_expect client_introduction protocol_version raft_protocol "
        "raft_multiplier enabled_schedulers csi_volume_claim_gc_interval csi_volume_claim_gc_threshold "
        "csi_plugin_gc_threshold acl_token_gc_threshold root_key_gc_interval root_key_gc_threshold "
        "root_key_rotation_threshold start_join retry_join retry_max retry_interval rejoin_after_leave "
        "non_voting_server redundancy_zone upgrade_version encrypt server_join default_scheduler_config "
        "plan_rejection_tracker plan_apply_pipeline enable_event_broker event_buffer_size license_path "
        "search deploy_query_rate_limit raft_logstore raft_boltdb raft_snapshot_threshold "
        "raft_snapshot_interval raft_trailing_logs job_default_priority job_max_priority job_max_count "
        "start_timeout log_file non_production"
    ),
)

RESERVED = Block(
    {
        "cpu": Key(v.integer(0), client="reserved_cpu", doc="MHz"),
        "memory": Key(v.integer(0), client="reserved_memory_mb", doc="MB"),
        "disk": Key(v.integer(0), client="reserved_disk_mb", doc="MB"),
        "reserved_ports": Key(v.string, client="reserved_ports"),
    },
    _ignored("cores"),
)

HOST_VOLUME = Block(
    {"path": Key(v.nonempty), "read_only": Key(v.boolean)},
    labeled=True,
    doc='host_volume "name" { path, read_only }',
)

CLIENT = Block(
    {
        "enabled": Key(v.boolean, doc="run the client (node agent)"),
        "servers": Key(v.string_list, doc="the API to register with (its first entry)"),
        "state_dir": Key(v.nonempty, client="data_dir"),
        "node_class": Key(v.string, client="node_class"),
        "node_pool": Key(v.nonempty, client="node_pool"),
        "meta": Key(v.string_map, client="meta"),
        "options": Key(v.scalar_map, doc="user.denylist, user.checked_drivers, driver.allowlist, driver.denylist"),
        "chroot_env": Key(v.string_map, client="chroot_env"),
        "cgroup_parent": Key(v.nonempty, client="cgroup_parent"),
        "cpu_total_compute": Key(v.integer(1), client="cpu_total_mhz"),
        "memory_total_mb": Key(v.integer(1), client="memory_total_mb"),
        "disk_total_mb": Key(v.integer(1), client="disk_total_mb"),
        "reserved": RESERVED,
        "gc_interval": Key(v.positive_seconds, client="gc_interval"),
        "gc_parallel_destroys": Key(v.integer(1), client="gc_parallel_destroys"),
        "gc_disk_usage_threshold": Key(v.percent, client="gc_disk_usage_threshold"),
        "gc_inode_usage_threshold": Key(v.percent, client="gc_inode_usage_threshold"),
        "gc_max_allocs": Key(v.integer(1), client="gc_max_allocs"),
        "host_volume": HOST_VOLUME,
        "host_volumes_dir": Key(v.nonempty, client="host_volumes_dir"),
        "cni_path": Key(v.nonempty, client="cni_path"),
        "alloc_dir": Key(v.absolute_path, client="alloc_dir"),
        "network_interface": Key(v.nonempty, client="network_interface", doc="its address is the node's"),
        "bridge_network_name": Key(v.nonempty, client="bridge_network_name"),
        "bridge_network_subnet": Key(v.nonempty, client="bridge_network_subnet"),
        "bridge_network_hairpin_mode": Key(v.boolean, client="bridge_network_hairpin_mode"),
        # corral extensions: where the client's endpoint (logs, files, exec) listens for the
        # servers, and which host directories file:// artifacts may read.
        "http_bind": Key(v.nonempty, client="http_bind", doc="corral: host:port of the client's endpoint"),
        "artifact_file_roots": Key(v.string_list, client="artifact_file_roots", doc="corral: file:// artifact roots"),
    },
    _ignored(
        "alloc_mounts_dir host_volume_plugin_dir common_plugin_dir "
        "preferred_address_family network_speed cpu_disable_dmidecode disk_free_mb reservable_cores "
        "max_kill_timeout client_max_port client_min_port max_dynamic_port min_dynamic_port "
        "gc_volumes_on_node_gc no_host_uuid disable_remote_exec template server_join cni_config_dir "
        "bridge_network_subnet_ipv6 host_network bind_wildcard_default_host_network "
        "nomad_service_discovery artifact drain_on_shutdown users node_max_allocs log_file fingerprint "
        "default_ineligible"
    ),
)

ACL = Block(
    {
        "enabled": Key(v.boolean, env="CORRAL_ACL_ENABLED"),
        "token_min_expiration_ttl": Key(v.seconds, env="CORRAL_ACL_TOKEN_MIN_EXPIRATION_TTL_S"),
        "token_max_expiration_ttl": Key(v.positive_seconds, env="CORRAL_ACL_TOKEN_MAX_EXPIRATION_TTL_S"),
    },
    _ignored("token_ttl policy_ttl role_ttl replication_token"),
)

TLS = Block(
    {
        "http": Key(v.boolean, doc="serve the API over HTTPS with cert_file and key_file"),
        "cert_file": Key(v.nonempty, doc="with http = true"),
        "key_file": Key(v.nonempty, doc="with http = true"),
        "ca_file": Key(v.nonempty, doc="with http = true: client certificates' CA; the client trusts it"),
        "verify_https_client": Key(v.boolean, env="CORRAL_TLS_VERIFY_CLIENT"),
    },
    _ignored("rpc verify_server_hostname rpc_upgrade_mode tls_cipher_suites tls_min_version"),
)

TELEMETRY = Block(
    {"prometheus_metrics": Key(v.boolean, doc="accepted: /v1/metrics?format=prometheus is always served")},
    _ignored(
        "in_memory_collection_interval in_memory_retention_period statsite_address statsd_address "
        "datadog_address datadog_tags disable_hostname use_node_name collection_interval "
        "publish_allocation_metrics publish_node_metrics include_alloc_metadata_in_metrics "
        "allowed_metadata_keys_in_metrics prefix_filter filter_default disable_dispatched_job_summary_metrics "
        "disable_quota_utilization_metrics disable_rpc_rate_metrics_labels disable_allocation_hook_metrics "
        "circonus_api_token circonus_api_app circonus_api_url circonus_submission_interval "
        "circonus_submission_url circonus_check_id circonus_check_force_metric_activation "
        "circonus_check_instance_id circonus_check_search_tag circonus_check_tags "
        "circonus_check_display_name circonus_broker_id circonus_broker_select_tag"
    ),
)

LIMITS = Block(
    {"http_max_conns_per_client": Key(v.integer(0), env="CORRAL_HTTP_MAX_CONNS_PER_CLIENT")},
    _ignored("https_handshake_timeout rpc_handshake_timeout rpc_max_conns_per_client"),
)

DATABASE = Block(
    {
        "url": Key(v.nonempty, env="CORRAL_DATABASE_URL", doc="corral: PostgreSQL URL; unset: embedded"),
        "read_url": Key(v.nonempty, env="CORRAL_READ_DATABASE_URL", doc="corral: hot standbys"),
    },
    doc="corral extension",
)

# The drivers' plugin blocks: `plugin "name" { config { ... } }`.
RAW_EXEC_CONFIG = Block({"enabled": Key(v.boolean)}, _ignored("no_cgroups denied_host_uids denied_host_gids"))
EXEC_CONFIG = Block(
    ignored=_ignored("no_pivot_root default_pid_mode default_ipc_mode allow_caps denied_host_uids denied_host_gids")
)
DOCKER_CONFIG = Block(
    {
        "endpoint": Key(v.nonempty, client="docker_endpoint"),
        "infra_image": Key(v.nonempty, client="docker_infra_image"),
        "volumes": Block(
            {"enabled": Key(v.boolean, client="docker_volumes_enabled")},
            _ignored("selinuxlabel"),
        ),
    },
    _ignored(
        "auth tls extra_labels logging gc allow_privileged allow_caps nvidia_runtime allow_runtimes "
        "infra_image_pull_timeout image_pull_timeout container_exists_attempts oom_score_adj "
        "pull_activity_timeout pids_limit disable_log_collection windows_allow_insecure_container_admin "
        "allowed_modes"
    ),
)
PLUGIN_CONFIGS = {"raw_exec": RAW_EXEC_CONFIG, "exec": EXEC_CONFIG, "docker": DOCKER_CONFIG}
# Nomad's other task drivers: a plugin block for one is known, and warned about.
OTHER_DRIVERS = frozenset({"java", "qemu", "podman", "containerd-driver", "nomad-driver-podman", "exec2", "rkt"})


def plugin_block(name: str) -> Block:
    return Block({"config": PLUGIN_CONFIGS[name]}, _ignored("args"))


AGENT = Block(
    {
        "data_dir": Key(v.nonempty, env="CORRAL_DATA_DIR"),
        "bind_addr": Key(v.nonempty, doc="the API's address, unless addresses.http"),
        "addresses": ADDRESS,
        "ports": PORTS,
        "log_level": Key(v.log_level, env="CORRAL_LOG_LEVEL"),
        "log_json": Key(v.boolean, doc="CORRAL_LOG_FORMAT=json (false: console)"),
        "datacenter": Key(v.nonempty, client="datacenter"),
        "region": Key(v.nonempty, doc='corral has one region: "global"; another is warned about'),
        "name": Key(v.nonempty, client="name"),
        "server": SERVER,
        "client": CLIENT,
        "acl": ACL,
        "tls": TLS,
        "telemetry": TELEMETRY,
        "limits": LIMITS,
        "database": DATABASE,
    },
    _ignored(
        "plugin_dir log_file log_include_location log_rotate_duration log_rotate_bytes log_rotate_max_files "
        "enable_debug advertise rpc leave_on_interrupt leave_on_terminate enable_syslog syslog_facility "
        "disable_update_check disable_anonymous_signature ui http_api_response_headers sentinel autopilot "
        "audit reporting keyring eventlog consul vault"
    ),
)
