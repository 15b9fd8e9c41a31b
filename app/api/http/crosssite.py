"""Cross-site protection: a web page the operator happens to open must not drive the API.

A browser sends a cross-origin "simple request" (POST with a text/plain, form or multipart body)
without asking first, and with DNS rebinding a page can even make its own origin's name point
at 127.0.0.1. With ACLs off (every dev agent) either would run jobs as the agent's user. So:

- writes take JSON (`application/json`), no Content-Type at all (Nomad's Go client sends none)
  or no body: no simple request qualifies (415 otherwise);
- a write or a WebSocket upgrade (alloc exec) carrying an `Origin` that is neither the API's
  own nor in CORRAL_HTTP_ALLOWED_ORIGINS is refused (403); curl, the CLI, Nomad's tools and
  the client agent send no Origin;
- an API listening on loopback answers only loopback names and addresses, its own bind host
  and CORRAL_HTTP_ALLOWED_HOSTS (421): a rebound name is none of them. Elsewhere (behind a load
  balancer, a compose service name) the host list applies only once it is set;
- every answer carries nosniff, the /ui pages a strict Content-Security-Policy, and answers
  that may hold a secret `Cache-Control: no-store`.

The decisions are pure functions of `Guard` (from the settings) and `Arrival` (the request).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

import structlog
from flask import Flask, Response, current_app, request

from app.api.http.context import state
from app.api.http.errors import problem
from app.settings.config import Settings
from app.values.errors import FieldProblem

log = structlog.get_logger(__name__)
WRITE_METHODS = frozenset({"POST", "PUT", "DELETE", "PATCH"})
JSON_TYPE = "application/json"
FORM_TYPE = "application/x-www-form-urlencoded"
DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}
SHOWN_CHARS = 120  # of an echoed header value
GUARD_KEY = "corral.crosssite"

# The pages load one stylesheet and one module script from /ui/static and call /v1 with
# fetch; the favicon is an empty data: URL. Nothing inline, nothing from elsewhere.
UI_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
        "base-uri 'none'",
    )
)
UI_HEADERS = {
    "Content-Security-Policy": UI_POLICY,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
# Routes whose answers may carry a SecretID (ACL tokens, a node's secret at registration).
SECRET_PREFIXES = ("/v1/acl/token", "/v1/acl/bootstrap", "/v1/node/register")


@dataclass(frozen=True)
class Guard:
    """What the settings allow beyond the API's own origin and loopback names."""

    bind_host: str
    allowed_origins: frozenset[str]
    allowed_hosts: frozenset[str]

    @classmethod
    def of(cls, settings: Settings) -> Guard:
        return cls(
            bind_host=bind_host(settings.bind),
            allowed_origins=frozenset(settings.http_allowed_origins or ()),
            allowed_hosts=frozenset(settings.http_allowed_hosts or ()),
        )

    @property
    def loopback(self) -> bool:
        return is_loopback_name(self.bind_host)


@dataclass(frozen=True)
class Arrival:
    """The parts of a request the checks read."""

    method: str
    scheme: str  # as the server saw it (http behind a TLS-terminating proxy)
    host: str  # the Host header
    origin: str | None
    content_type: str | None
    empty_body: bool
    upgrade: bool  # Upgrade: websocket


@dataclass(frozen=True)
class Refusal:
    status: int
    title: str
    field: str
    message: str


def bind_host(bind: str) -> str:
    """The host part of CORRAL_BIND (host:port, [v6]:port); "" for a wildcard or a unix socket."""
    if bind.startswith("unix:"):
        return ""
    name = normal_host(bind.rpartition(":")[0] if ":" in bind else bind)
    return "" if name in ("0.0.0.0", "::") else name


def normal_host(host: str) -> str:
    """A host name or address without port: lower case, no trailing dot, IPv6 without brackets."""
    name = host.strip().lower().rstrip(".")
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return name


def host_of(header: str) -> str:
    """The host of a Host header (name:port, [v6]:port, or without port)."""
    value = header.strip()
    if value.startswith("["):
        return normal_host(value[: value.find("]") + 1] if "]" in value else value)
    name, sep, port = value.rpartition(":")
    return normal_host(name if sep and port.isdigit() else value)


def is_loopback_name(host: str) -> bool:
    """localhost, *.localhost (RFC 6761 resolves them to loopback), 127.0.0.0/8 and ::1."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_refusal(guard: Guard, host_header: str) -> Refusal | None:
    host = host_of(host_header)
    if is_loopback_name(host) or (host and host == guard.bind_host) or host in guard.allowed_hosts:
        return None
    if not guard.loopback and not guard.allowed_hosts:
        return None
    where = f"this API listens on loopback ({guard.bind_host})" if guard.loopback else "this API"
    return Refusal(
        421,
        "Misdirected Request",
        "Host",
        f"{_shown(host_header)} is not a name {where} answers to: use localhost or 127.0.0.1, or add the "
        "name to CORRAL_HTTP_ALLOWED_HOSTS (a page whose own name was made to point here, DNS rebinding, "
        "is refused this way)",
    )


def same_origin(origin: str, scheme: str, host_header: str) -> bool:
    """Whether `origin` is the API's own: same host and port as the Host header, same scheme,
    or https for an API that sees http (TLS ended by a proxy that keeps Host)."""
    parts = urlsplit(origin.strip().lower())
    if parts.scheme != scheme.lower() and not (parts.scheme == "https" and scheme.lower() == "http"):
        return False
    return _authority(parts.scheme, parts.netloc) == _authority(parts.scheme, host_header.strip().lower())


def _authority(scheme: str, netloc: str) -> str:
    default = DEFAULT_PORTS.get(scheme)
    return netloc.removesuffix(f":{default}") if default else netloc


def origin_allowed(guard: Guard, origin: str, scheme: str, host_header: str) -> bool:
    """`Origin: null` (sandboxed frames, file: pages, some redirects) is never allowed."""
    key = origin.strip().lower().rstrip("/")
    if key == "null" or not key:
        return False
    return same_origin(key, scheme, host_header) or key in guard.allowed_origins


def origin_refusal(guard: Guard, arrival: Arrival) -> Refusal | None:
    if arrival.origin is None or not (arrival.method in WRITE_METHODS or arrival.upgrade):
        return None
    if origin_allowed(guard, arrival.origin, arrival.scheme, arrival.host):
        return None
    what = "open an exec session" if arrival.upgrade else "write"
    return Refusal(
        403,
        "Forbidden",
        "Origin",
        f"{_shown(arrival.origin)} is neither this API's origin nor in CORRAL_HTTP_ALLOWED_ORIGINS: a web page "
        f"from another origin may not {what} here",
    )


def content_type_refusal(arrival: Arrival) -> Refusal | None:
    """Writes take JSON or nothing: text/plain, form and multipart bodies are what a page can send
    cross-origin without asking, so none of them is read as JSON."""
    if arrival.method not in WRITE_METHODS or arrival.empty_body:
        return None
    raw = (arrival.content_type or "").strip()
    if not raw or raw.split(";", 1)[0].strip().lower() == JSON_TYPE:
        return None
    hint = " (curl -d sends that: add -H 'Content-Type: application/json')" if FORM_TYPE in raw.lower() else ""
    return Refusal(
        415,
        "Unsupported Media Type",
        "Content-Type",
        f"must be {JSON_TYPE} (or absent) on a request with a body, got {_shown(raw)}{hint}",
    )


def refusal(guard: Guard, arrival: Arrival) -> Refusal | None:
    return host_refusal(guard, arrival.host) or origin_refusal(guard, arrival) or content_type_refusal(arrival)


def response_headers(path: str) -> dict[str, str]:
    """The security headers of an answer to `path`."""
    headers = {"X-Content-Type-Options": "nosniff"}
    if path == "/ui" or path.startswith("/ui/"):
        headers.update(UI_HEADERS)
    if path.startswith(SECRET_PREFIXES):
        headers["Cache-Control"] = "no-store"
    return headers


def _shown(value: str) -> str:
    return repr(value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…")


# --- Flask ----------------------------------------------------------------------------------


def arrival() -> Arrival:
    length = request.content_length
    chunked = "chunked" in request.headers.get("Transfer-Encoding", "").lower()
    return Arrival(
        method=request.method,
        scheme=request.scheme,
        host=request.headers.get("Host") or request.host,  # as sent, so a refusal shows what came
        origin=request.headers.get("Origin"),
        content_type=request.headers.get("Content-Type"),
        empty_body=length == 0 or (length is None and not chunked),
        upgrade=request.headers.get("Upgrade", "").strip().lower() == "websocket",
    )


def guard() -> Guard:
    """The app's Guard, made from its settings on first use."""
    made = current_app.extensions.get(GUARD_KEY)
    if not isinstance(made, Guard):
        made = current_app.extensions[GUARD_KEY] = Guard.of(state().settings)
    return made


def install(app: Flask) -> None:
    """Check every request before anything else reads it, and add the headers to every answer.
    Registered before ACL enforcement, so a refused request costs no token lookup."""

    @app.before_request
    def _check() -> Response | None:
        found = refusal(guard(), arrival())
        if found is None:
            return None
        # Worth a line: either a page tried to drive the API, or a proxy or tool needs an allow-list entry.
        log.warning("cross-site request refused", path=request.path, status=found.status, reason=found.field)
        return problem(found.status, found.title, [FieldProblem(found.field, found.message)])

    @app.after_request
    def _headers(response: Response) -> Response:
        for name, value in response_headers(request.path).items():
            response.headers[name] = value  # policy: over whatever a route set
        return response
