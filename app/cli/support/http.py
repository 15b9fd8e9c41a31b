"""The CLI's client for corral's REST API. The address comes from CORRAL_ADDR, then NOMAD_ADDR
(so Nomad users' environments work unchanged), then the dev agent's default; a token from
CORRAL_TOKEN or NOMAD_TOKEN is sent as X-Nomad-Token. The namespace comes from the command's
-namespace flag, then CORRAL_NAMESPACE, then NOMAD_NAMESPACE, and is sent as Nomad's API client
sends it: the `namespace` query parameter of every request (app/cli/support/api_flags.py adds the flag).
Failures become click errors that name the request and the HTTP problem, so every command
reports them the same way.

The standard library's http.client, not httpx: importing httpx and building its TLS context
cost a quarter of a second on every call, more than the whole call is allowed to take
(bench/cli_startup.py)."""

from __future__ import annotations

import http.client
import json
import os
import ssl
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

import click

DEFAULT_ADDR = "http://127.0.0.1:4646"
TIMEOUT_S = 30.0
CHUNK = 65536

# A query parameter's value as the API reads it: booleans as true/false, None as empty, and a
# list as the parameter repeated.
QueryValue = str | int | float | bool | None
QueryParams = Mapping[str, QueryValue | Sequence[QueryValue]]


class ApiError(click.ClickException):
    """An HTTP request that failed; status is 0 when the server could not be reached."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Answer:
    """A whole HTTP answer, read."""

    status_code: int
    reason_phrase: str
    content: bytes
    headers: Mapping[str, str] = field(default_factory=dict)  # e.g. X-Nomad-NextToken

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


def address() -> str:
    return (os.environ.get("CORRAL_ADDR") or os.environ.get("NOMAD_ADDR") or DEFAULT_ADDR).rstrip("/")


def token() -> str:
    return os.environ.get("CORRAL_TOKEN") or os.environ.get("NOMAD_TOKEN") or ""


NAMESPACE_KEY = "corral.namespace"  # where -namespace leaves its value, in the click context's meta
REGION_KEY = "corral.region"


def namespace() -> str | None:
    """The namespace the operator chose (-namespace, CORRAL_NAMESPACE, NOMAD_NAMESPACE); None: the API's default."""
    context = click.get_current_context(silent=True)
    chosen = context.meta.get(NAMESPACE_KEY) if context is not None else None
    return chosen or os.environ.get("CORRAL_NAMESPACE") or os.environ.get("NOMAD_NAMESPACE") or None


def region() -> str | None:
    """The region the operator named (-region, CORRAL_REGION, NOMAD_REGION): sent as Nomad sends it."""
    context = click.get_current_context(silent=True)
    chosen = context.meta.get(REGION_KEY) if context is not None else None
    return chosen or os.environ.get("CORRAL_REGION") or os.environ.get("NOMAD_REGION") or None


def scoped(params: QueryParams | None) -> QueryParams | None:
    """PARAMS with the chosen namespace and region. A command's own wildcard (`namespace=*`, which
    list and prefix lookups use when nobody chose) gives way to the operator's choice; a specific
    namespace a command names (that of an object it already holds) is kept."""
    chosen, named_region = namespace(), region()
    if not chosen and not named_region:
        return params
    merged = dict(params or {})
    if chosen and merged.get("namespace") in (None, "*"):
        merged["namespace"] = chosen
    if named_region and "region" not in merged:
        merged["region"] = named_region
    return merged


def auth_headers() -> dict[str, str]:
    """X-Nomad-Token from CORRAL_TOKEN or NOMAD_TOKEN, for every request the CLI makes."""
    secret = token()
    return {"X-Nomad-Token": secret} if secret else {}


def get(path: str, params: QueryParams | None = None) -> Any:
    return request("GET", path, params=params)


def put(path: str, body: object, params: QueryParams | None = None) -> Any:
    return request("PUT", path, params=params, body=body)


def post(path: str, body: object, params: QueryParams | None = None) -> Any:
    return request("POST", path, params=params, body=body)


def request(
    method: str,
    path: str,
    *,
    params: QueryParams | None = None,
    body: object = None,
    timeout_s: float = TIMEOUT_S,
    base: str | None = None,
) -> Any:
    """A JSON request and its JSON answer. `base` overrides the address (a command's -address)."""
    answer = _exchange(method, path, params, body, timeout_s, base)
    if answer.status_code >= 400:
        raise ApiError(f"{method} {path}: {answer.status_code} {problem_text(answer)}", answer.status_code)
    return answer.json()


def problem_text(response: Answer) -> str:
    """The API's problem+json detail (which names the field), or the raw body."""
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase + (f": {response.text.strip()}" if response.text.strip() else "")
    if isinstance(body, dict):
        title, detail = body.get("title") or response.reason_phrase, body.get("detail")
        return f"{title}: {detail}" if detail else str(title)
    return str(body)


def get_text(path: str, params: QueryParams | None = None, timeout_s: float = TIMEOUT_S) -> bytes:
    """A GET whose answer is not JSON (plain log text); errors as `request` reports them."""
    answer = _exchange("GET", path, params, None, timeout_s, None)
    if answer.status_code >= 400:
        raise ApiError(f"GET {path}: {answer.status_code} {problem_text(answer)}", answer.status_code)
    return answer.content


def stream_text(path: str, params: QueryParams | None = None) -> Iterator[bytes]:
    """A GET whose answer keeps coming (a followed log), chunk by chunk as it arrives; no read
    timeout once the answer has begun, as the stream may be quiet for long."""
    url = address() + path + query_string(scoped(params))
    connection = _connection(url, TIMEOUT_S)
    try:
        response = _send(connection, "GET", url, None, auth_headers())
        if response.status >= 400:
            answer = Answer(response.status, response.reason, response.read())
            raise ApiError(f"GET {path}: {answer.status_code} {problem_text(answer)}", answer.status_code)
        if connection.sock is not None:
            connection.sock.settimeout(None)
        while chunk := response.read1(CHUNK):
            yield chunk
    except (OSError, http.client.HTTPException) as err:
        raise ApiError(f"GET {url}: cannot reach corral ({err}); is CORRAL_ADDR right?", 0) from err
    finally:
        connection.close()


def query_string(params: QueryParams | None) -> str:
    """`?a=1&b=x` as httpx wrote it: booleans as true/false, None as empty, lists repeated."""
    if not params:
        return ""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        items: Sequence[QueryValue] = value if isinstance(value, list | tuple) else [_scalar(value)]
        pairs.extend((key, _query_value(item)) for item in items)
    return "?" + urlencode(pairs)


def _scalar(value: QueryValue | Sequence[QueryValue]) -> QueryValue:
    """A value that is not a list or tuple: a scalar (a str is a Sequence only to the type checker)."""
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def _query_value(value: QueryValue) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    return "" if value is None else str(value)


def _exchange(
    method: str, path: str, params: QueryParams | None, body: object, timeout_s: float, base: str | None
) -> Answer:
    url = (base.rstrip("/") if base else address()) + path + query_string(scoped(params))
    return send(method, url, body, auth_headers(), timeout_s)


def send(method: str, url: str, body: object, headers: dict[str, str], timeout_s: float) -> Answer:
    """One request, its answer read whole: the seam the CLI's integration tests replace with
    the Flask test client."""
    connection = _connection(url, timeout_s)
    try:
        response = _send(connection, method, url, body, headers)
        return Answer(response.status, response.reason, response.read(), dict(response.getheaders()))
    except (OSError, http.client.HTTPException) as err:
        raise ApiError(f"{method} {url}: cannot reach corral ({err}); is CORRAL_ADDR right?", 0) from err
    finally:
        connection.close()


def _connection(url: str, timeout_s: float) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError(f"{url}: the address must be http:// or https:// and name a host (CORRAL_ADDR)", 0)
    if parts.scheme == "http":
        return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    return http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout_s, context=_tls_context())


def _send(
    connection: http.client.HTTPConnection, method: str, url: str, body: object, headers: dict[str, str]
) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = dict(headers)
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection.request(method, target, body=payload, headers=headers)
    return connection.getresponse()


def _tls_context() -> ssl.SSLContext:
    """The CLI's TLS verification (CORRAL_CACERT and friends); the system's trust store when none is set."""
    from app.settings.client_tls import client_tls

    configured = client_tls()
    return configured if isinstance(configured, ssl.SSLContext) else ssl.create_default_context()
