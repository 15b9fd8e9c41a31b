"""The HTTP API's settings: where it listens, its workers, its database pools and client
turns, its connection and request limits, and the browser origins and host names it answers."""

from __future__ import annotations

import ipaddress
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode

# A comma-separated list in its CORRAL_* variable (not JSON, as pydantic-settings would read it).
CommaList = Annotated[tuple[str, ...] | None, NoDecode]


class HttpSettings(BaseSettings):
    """The API server's part of Settings (app/settings/config.py), read the same way."""

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
