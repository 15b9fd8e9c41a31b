"""/v1/agent/self's `config`: the settings this server runs with under Nomad's agent Config
names, and what `corral agent -config` loaded (CORRAL_AGENT_CONFIG: region, datacenter, name,
data_dir, the client block, the files)."""

from __future__ import annotations

import json

from app.jobspec.durations import SECOND, format_duration
from app.settings.config import Settings
from app.wire.json import JsonObject

# corral's log levels under Nomad's names.
NOMAD_LOG_LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARN", "error": "ERR"}


def _go(seconds: float) -> str:
    """A Go duration string, as Nomad's JSON writes its GC thresholds ("4h0m0s")."""
    return format_duration(int(seconds * SECOND))


def _ns(seconds: float) -> int:
    """A time.Duration, as Nomad's JSON writes its heartbeat settings: integer nanoseconds."""
    return int(seconds * SECOND)


def loaded(settings: Settings) -> JsonObject:
    """The agent's own part, as the agent wrote it; {} without one (or if it is not an object)."""
    if not settings.agent_config:
        return {}
    try:
        found = json.loads(settings.agent_config)
    except json.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def agent_config(settings: Settings) -> JsonObject:
    """Nomad's field names for what corral has; the server's part from its own settings."""
    agent = loaded(settings)
    host, _, port = settings.bind.rpartition(":")
    return {
        "Region": agent.get("Region", "global"),
        "Datacenter": agent.get("Datacenter", "dc1"),
        "NodeName": agent.get("NodeName", ""),
        "DataDir": agent.get("DataDir", str(settings.data_dir)),
        "LogLevel": NOMAD_LOG_LEVELS.get(settings.log_level.lower(), settings.log_level.upper()),
        "LogJson": settings.log_format == "json",
        "Files": agent.get("Files", []),
        "Addresses": {"HTTP": host.strip("[]")},
        "Ports": {"HTTP": int(port) if port.isdigit() else 0},
        "ACL": {"Enabled": settings.acl_enabled},
        "TLSConfig": {
            "EnableHTTP": settings.tls_cert_file is not None,
            "VerifyHTTPSClient": settings.tls_verify_client,
            "CAFile": str(settings.tls_ca_file or ""),
            "CertFile": str(settings.tls_cert_file or ""),
            "KeyFile": str(settings.tls_key_file or ""),
        },
        "Server": {
            "Enabled": True,
            "NumSchedulers": settings.num_schedulers,
            "HeartbeatGrace": _ns(settings.heartbeat_grace_s),
            "MinHeartbeatTTL": _ns(settings.heartbeat_min_ttl_s),
            "MaxHeartbeatsPerSecond": settings.max_heartbeats_per_second,
            "FailoverHeartbeatTTL": _ns(settings.failover_heartbeat_ttl_s),
            "JobGCInterval": _go(settings.job_gc_interval_s),
            "JobGCThreshold": _go(settings.job_gc_threshold_s),
            "EvalGCThreshold": _go(settings.eval_gc_threshold_s),
            "BatchEvalGCThreshold": _go(settings.batch_eval_gc_threshold_s),
            "DeploymentGCThreshold": _go(settings.deployment_gc_threshold_s),
            "NodeGCThreshold": _go(settings.node_gc_threshold_s),
            "JobTrackedVersions": settings.job_max_versions,
            "OIDCIssuer": settings.oidc_issuer or "",
        },
        "Client": agent.get("Client", {"Enabled": False}),
    }
