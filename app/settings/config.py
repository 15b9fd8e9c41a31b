"""Settings shared by every corral process, read from CORRAL_* environment variables."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import SettingsConfigDict

from app.settings.http import HttpSettings


class Settings(HttpSettings):
    """One settings object for the API, the workers, the leader and the CLI."""

    model_config = SettingsConfigDict(env_prefix="CORRAL_", extra="ignore")

    database_url: str | None = Field(
        default=None,
        description="PostgreSQL URL. Without it corral runs the embedded server in data_dir.",
    )
    database_embedded: bool = Field(
        default=False,
        description=(
            "Set by `corral agent` for the roles it starts on its own embedded PostgreSQL, which they "
            "reach through database_url, so /v1/agent/self reports the database as embedded. Not an "
            "operator setting."
        ),
    )
    agent_config: str | None = Field(
        default=None,
        description=(
            "Set by `corral agent -config` for the roles it starts: JSON of the agent configuration's own "
            "part (region, datacenter, name, data_dir, the client block, the files read), which "
            "/v1/agent/self reports. Not an operator setting."
        ),
    )
    read_database_url: str | None = Field(
        default=None,
        description=(
            "PostgreSQL URL of one or more hot standbys (libpq multi-host, e.g. "
            "target_session_attrs=prefer-standby) that serve the API's blocking queries and ?stale reads; "
            "writes always go to database_url. Unset: every read goes to database_url."
        ),
    )
    read_replay_wait_s: float = Field(
        default=1.0,
        ge=0,
        description="How long a read waits for the standby to replay past the client's index, then asks the primary.",
    )
    data_dir: Path = Field(
        default=Path(".corral"),
        description="Where the embedded PostgreSQL keeps its data (created on first use).",
    )
    metrics_bind: str | None = Field(
        default=None,
        description="host:port where a worker, applier, leader or client serves /v1/metrics; unset: not served.",
    )
    log_level: str = Field(default="info", description="debug, info, warning or error.")
    log_format: Literal["auto", "console", "json"] = Field(
        default="auto", description="console on a terminal and json otherwise, unless forced."
    )
    eval_lease_s: float = Field(
        default=60.0, gt=0, description="Lease a worker holds on an evaluation; renewed every third of it."
    )
    poll_interval_s: float = Field(default=0.5, gt=0, description="Fallback polling when no NOTIFY arrives (jittered).")
    num_schedulers: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Scheduling loops per worker process (Nomad's num_schedulers), each claiming its own "
        "evaluation; they overlap one evaluation's database waits with another's scheduling pass. "
        "Default 4: what measured best, docs/benchmarks.md.",
    )
    eval_batch: int = Field(
        default=8,
        ge=1,
        le=64,
        description="Most ready evaluations (of distinct jobs) one scheduling loop claims at once and schedules "
        "together: one claim, one snapshot and one submit for all of them. 1: one at a time. Default 8: "
        "what measured best, docs/benchmarks.md.",
    )
    applier_batch: int = Field(
        default=64, ge=1, le=1000, description="Most plans the applier checks and commits in one transaction."
    )
    applier_pipeline: bool = Field(
        default=True,
        description="While the queue is deep, the applier checks its next batch of plans while the previous one "
        "commits (Nomad's plan pipelining); a shallow queue, and false always, checks and commits one batch after "
        "the other.",
    )
    plan_chunk_placements: int = Field(
        default=5000,
        ge=0,
        description="A worker submits a big plan in chunks of this many placements while its pass goes on, "
        "so the applier writes one chunk while the next is scheduled; 0 submits every plan whole. Only plans "
        "that may apply in parts are chunked: not all_at_once, no deployment, nothing but fresh placements.",
    )
    placement_metrics: bool = Field(
        default=True,
        description="Workers record each placement's metrics (Nomad's AllocMetric: nodes evaluated, filtered, "
        "exhausted, the 5 best nodes' scores, the selection's time) on its allocation, as Nomad always does. "
        "false leaves successful placements without them (the placement benchmark's baseline, "
        "docs/benchmarks.md). Failed placements keep their metrics either way.",
    )
    max_blocking_wait_s: float = Field(default=300.0, gt=0, description="Upper bound for ?wait= on blocking queries.")
    # Garbage collection (Nomad's defaults). The leader queues one core evaluation per
    # collector every interval; the thresholds travel in the evaluation to the worker.
    eval_gc_interval_s: float = Field(default=300.0, gt=0, description="How often evaluation GC runs.")
    eval_gc_threshold_s: float = Field(default=3600.0, ge=0, description="Age of a terminal evaluation before GC.")
    batch_eval_gc_threshold_s: float = Field(
        default=86400.0, ge=0, description="Age of a terminal batch-job evaluation before GC."
    )
    job_gc_interval_s: float = Field(default=300.0, gt=0, description="How often job GC runs.")
    job_gc_threshold_s: float = Field(default=14400.0, ge=0, description="Age of a dead job before GC.")
    node_gc_interval_s: float = Field(default=300.0, gt=0, description="How often node GC runs.")
    node_gc_threshold_s: float = Field(default=86400.0, ge=0, description="Time a node stays down before GC.")
    # The event stream (GET /v1/event/stream). Nomad keeps its last event_buffer_size raft
    # entries in memory; corral keeps every event in the events table for a time instead.
    event_retention_s: float = Field(
        default=3600.0,
        gt=0,
        description="How long events stay readable by the event stream (?index= resumes within it); "
        "older ones are deleted by the leader.",
    )
    event_gc_interval_s: float = Field(default=60.0, gt=0, description="How often the leader deletes expired events.")
    event_stream_heartbeat_s: float = Field(
        default=30.0, gt=0, description="Interval of the event stream's heartbeat frame '{}' (Nomad's: 30 s)."
    )
    deployment_gc_interval_s: float = Field(default=300.0, gt=0, description="How often deployment GC runs.")
    deployment_gc_threshold_s: float = Field(
        default=3600.0, ge=0, description="Age of a finished deployment before GC."
    )
    gc_batch_size: int = Field(
        default=1000,
        ge=1,
        le=50000,
        description="Most rows GC deletes in one transaction (eval, deployment and node GC: parent rows).",
    )
    gc_slow_batch_pause: float = Field(
        default=0.0,
        ge=0,
        le=10,
        description="After a GC batch that took over twice the recent batches' time per row, pause for this "
        "many times its duration, so a long GC yields to a busy database; 0 never pauses.",
    )
    force_gc_wait_s: float = Field(
        default=600.0, gt=0, description="How long PUT /v1/system/gc waits for the collection to finish."
    )
    job_max_versions: int = Field(
        default=6,
        ge=1,
        description="Versions kept per job (Nomad's job_tracked_versions); older untagged ones are pruned "
        "on each new version unless an allocation still runs them.",
    )
    job_max_source_size: int = Field(
        default=1_000_000,
        ge=0,
        description="Largest job source (a registration's Submission: Source, Variables and VariableFlags) in "
        "bytes (Nomad's job_max_source_size, 1M); a larger one is discarded with a warning and the job still "
        "registers, as Nomad does. 0 discards every source.",
    )
    heartbeat_min_ttl_s: float = Field(
        default=10.0, gt=0, description="Shortest heartbeat TTL handed to a client (Nomad's min_heartbeat_ttl)."
    )
    heartbeat_grace_s: float = Field(
        default=10.0, ge=0, description="Extra time past a node's TTL before it is marked down (heartbeat_grace)."
    )
    max_heartbeats_per_second: float = Field(
        default=50.0, gt=0, description="Target heartbeat rate for the whole fleet; TTLs grow with the fleet."
    )
    tls_cert_file: Path | None = Field(
        default=None, description="PEM certificate the API serves HTTPS with (with tls_key_file); unset: HTTP."
    )
    tls_key_file: Path | None = Field(default=None, description="PEM private key of tls_cert_file.")
    tls_ca_file: Path | None = Field(
        default=None, description="PEM CA bundle client certificates are checked against (mTLS)."
    )
    tls_verify_client: bool = Field(
        default=False, description="Require a client certificate signed by tls_ca_file on every connection (mTLS)."
    )
    link_key_file: Path | None = Field(
        default=None,
        description="File holding the servers' link secret, which keys the proofs on the link to clients' "
        "endpoints; every server of a cluster must read the same one. Unset (and link_key unset): "
        "<data_dir>/link.key, created 0600 on first start.",
    )
    link_key: SecretStr | None = Field(
        default=None,
        description="The servers' link secret itself (at least 32 characters), instead of link_key_file.",
    )
    link_max_answer_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=65536,
        description="Largest answer a server reads from a client's endpoint (logs, files, stats); over it: 502.",
    )
    link_answer_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Time a client's endpoint has for a whole answer, however it trickles in; over it: 502.",
    )
    acl_enabled: bool = Field(
        default=False,
        description="Enforce ACLs (Nomad's acl.enabled): every request needs a token whose policies allow it; "
        "off by default and in -dev unless set.",
    )
    acl_bootstrap_reset_index: int = Field(
        default=0,
        ge=0,
        description="Lets POST /v1/acl/bootstrap run again when it equals the index the last bootstrap reported "
        "(Nomad's acl-bootstrap-reset file); 0 never resets.",
    )
    acl_token_min_expiration_ttl_s: float = Field(
        default=60.0, ge=0, description="Shortest ExpirationTTL a token may be created with."
    )
    acl_token_max_expiration_ttl_s: float = Field(
        default=86400.0, gt=0, description="Longest ExpirationTTL a token may be created with."
    )
    failover_heartbeat_ttl_s: float = Field(
        default=300.0, gt=0, description="TTL granted to every live node without a heartbeat row (after a crash)."
    )
    keyring_key_file: Path | None = Field(
        default=None,
        description="File holding the keyring's root key (64 hex characters), which wraps the data keys "
        "that encrypt variables and sign workload identities; every server must read the same one. "
        "Unset (and keyring_key unset): <data_dir>/keyring.key, created 0600 on first start.",
    )
    keyring_key: SecretStr | None = Field(
        default=None, description="The keyring's root key itself (64 hex characters), instead of keyring_key_file."
    )
    oidc_issuer: str | None = Field(
        default=None,
        description="URL set as the `iss` of workload identities and served by /.well-known/openid-configuration "
        "(Nomad's server oidc_issuer), so third parties can verify identities; unset: no `iss`, and that "
        "endpoint answers 404.",
    )

    @field_validator("oidc_issuer")
    @classmethod
    def _issuer(cls, value: str | None) -> str | None:
        if value and urlsplit(value).scheme not in ("http", "https"):
            raise ValueError(f"oidc_issuer must be an http(s) URL, got {value!r}")
        return value


def tls_problem(settings: Settings) -> str | None:
    """What is wrong with the TLS settings taken together, or None."""
    if (settings.tls_cert_file is None) != (settings.tls_key_file is None):
        return "CORRAL_TLS_CERT_FILE and CORRAL_TLS_KEY_FILE must be set together"
    if settings.tls_verify_client and (settings.tls_cert_file is None or settings.tls_ca_file is None):
        return "CORRAL_TLS_VERIFY_CLIENT needs CORRAL_TLS_CERT_FILE, CORRAL_TLS_KEY_FILE and CORRAL_TLS_CA_FILE"
    for name in ("tls_cert_file", "tls_key_file", "tls_ca_file"):
        path = getattr(settings, name)
        if path is not None and not Path(path).is_file():
            return f"CORRAL_{name.upper()}: {path} is not a readable file"
    return None


class ConfigError(ValueError):
    """A CORRAL_* variable holds a value corral cannot use; the message names each one."""


def describe(err: ValidationError) -> str:
    prefix = Settings.model_config.get("env_prefix", "")
    problems = []
    for problem in err.errors():
        name = f"{prefix}{'_'.join(str(part) for part in problem['loc'])}".upper()
        problems.append(f"{name}: {problem['msg']} (got {problem.get('input')!r})")
    return "; ".join(problems)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as err:
        raise ConfigError(describe(err)) from None
