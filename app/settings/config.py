"""Settings shared by every corral process, read from CORRAL_* environment variables."""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# A comma-separated list in its CORRAL_* variable (not JSON, as pydantic-settings would read it).
CommaList = Annotated[tuple[str, ...] | None, NoDecode]


class Settings(BaseSettings):
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
    bind: str = Field(default="127.0.0.1:4646", description="host:port the HTTP API listens on.")
    http_workers: int = Field(
        default=2, ge=1, description="gunicorn worker processes (gevent: each serves many connections)."
    )
    http_worker_connections: int = Field(
        default=10000, ge=1, description="Most open connections one API worker process serves at once."
    )
    http_db_pool_size: int = Field(
        default=8,
        ge=1,
        description="Database connections per API worker for ordinary requests; requests queue for one "
        "(http_db_pool_timeout_s) instead of opening more. Waiting blocking queries hold none.",
    )
    http_node_pool_size: int = Field(
        default=4,
        ge=1,
        description="Database connections per API worker reserved for client traffic (heartbeats, allocation "
        "updates, node registration), so a flood of reads never delays a heartbeat.",
    )
    http_client_turns: int = Field(
        default=0,
        ge=0,
        description="Client writes (allocation updates, registrations, service syncs) and reads of nodes' "
        "allocation watches that hold a client connection at once in one API worker; the rest of "
        "http_node_pool_size serves heartbeats and health. 0: half of http_node_pool_size. Fewer keep a "
        "placement storm's heartbeats on time on a saturated server, at the cost of the writes' rate.",
    )
    http_client_write_queue: int = Field(
        default=256,
        ge=1,
        description="Client writes (allocation updates, registrations, service syncs) that may wait for a "
        "database turn in one API worker (they go before the reads of nodes' allocation watches); past it a "
        "client write is answered 503 with Retry-After at once instead of waiting longer than its client would.",
    )
    http_db_pool_timeout_s: float = Field(
        default=10.0, gt=0, description="How long a request waits for a database connection before a 503."
    )
    http_max_conns_per_client: int = Field(
        default=100,
        ge=0,
        description="Open connections one client address may hold per API worker process (Nomad's "
        "http_max_conns_per_client); over it a connection gets 429 and is closed. 0 turns the limit off.",
    )
    http_header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Time a connection has to send a request's line and headers (and to stay idle between "
        "keep-alive requests) before it is closed; extended, to at most 4 times, while the client's bytes wait "
        "unread for a busy worker.",
    )
    http_body_timeout_s: float = Field(
        default=30.0, gt=0, description="Longest pause while a request body is read before the request gets 408."
    )
    http_body_deadline_s: float = Field(
        default=30.0,
        gt=0,
        description="Time a request has to send its whole body, counted from the end of its headers, before it "
        "gets 408 and the connection is closed (however often it sends a byte).",
    )
    http_max_body_bytes: int = Field(
        default=1_048_576, ge=1024, description="Largest request body accepted (413 beyond it)."
    )
    http_graceful_timeout_s: float = Field(
        default=10.0,
        ge=0,
        description="On shutdown, how long running requests may finish; waiting blocking queries return at once.",
    )
    http_access_log: bool = Field(default=True, description="Log one line per request.")
    http_allowed_origins: CommaList = Field(
        default=None,
        description="Browser origins (scheme://host[:port], comma-separated) besides the API's own that may "
        "send writes and open exec sessions; unset: none.",
    )
    http_allowed_hosts: CommaList = Field(
        default=None,
        description="Host names or addresses (comma-separated, any port) the API answers to besides loopback "
        "ones while it listens on loopback; on another address, set: the only names it answers to.",
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

    @field_validator("http_client_turns")
    @classmethod
    def _client_turns(cls, turns: int, info: ValidationInfo) -> int:
        pool = info.data.get("http_node_pool_size")  # absent when it failed validation itself
        if turns and pool is not None and turns >= pool:
            raise ValueError(
                f"must be below http_node_pool_size ({pool}): a heartbeat must always find a client connection"
            )
        return turns

    @property
    def client_turns(self) -> int:
        """The client turns in effect: http_client_turns, or half the client pool (at least 1)."""
        return self.http_client_turns or max(1, self.http_node_pool_size // 2)

    @field_validator("oidc_issuer")
    @classmethod
    def _issuer(cls, value: str | None) -> str | None:
        if value and urlsplit(value).scheme not in ("http", "https"):
            raise ValueError(f"oidc_issuer must be an http(s) URL, got {value!r}")
        return value

    @field_validator("http_allowed_origins", mode="before")
    @classmethod
    def _origins(cls, value: object) -> object:
        return None if value is None else tuple(_origin(item) for item in _items(value))

    @field_validator("http_allowed_hosts", mode="before")
    @classmethod
    def _hosts(cls, value: object) -> object:
        return None if value is None else tuple(_host(item) for item in _items(value))


def _items(value: object) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple | set | frozenset):
        raise ValueError("must be a comma-separated list")
    return [str(item).strip() for item in items if str(item).strip()]


def _origin(text: str) -> str:
    """An origin as browsers send it in `Origin`: lower-case scheme://host[:port], no path."""
    parts = urlsplit(text.lower().rstrip("/"))
    if not parts.scheme or not parts.netloc or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"{text!r} is not an origin: write scheme://host[:port], e.g. http://localhost:3000")
    return f"{parts.scheme}://{parts.netloc}"


def _host(text: str) -> str:
    """A host name or address without port: lower case, no trailing dot, IPv6 without brackets."""
    name = text.lower().rstrip(".")
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        pass
    if not name or any(c in name for c in ":/@[] "):
        raise ValueError(f"{text!r} is not a host name or address (write it without scheme or port)")
    return name


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
