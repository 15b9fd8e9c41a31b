"""The CLI's client for corral's REST API. The address comes from CORRAL_ADDR, then NOMAD_ADDR
(so Nomad users' environments work unchanged), then the dev agent's default; a token from
CORRAL_TOKEN or NOMAD_TOKEN is sent as X-Nomad-Token. Failures become click errors that name
the request and the HTTP problem, so every command reports them the same way."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import httpx


DEFAULT_ADDR = "http://127.0.0.1:4646"
TIMEOUT_S = 30.0


class ApiError(click.ClickException):
    """An HTTP request that failed; status is 0 when the server could not be reached."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def address() -> str:
    return (os.environ.get("CORRAL_ADDR") or os.environ.get("NOMAD_ADDR") or DEFAULT_ADDR).rstrip("/")


def token() -> str:
    return os.environ.get("CORRAL_TOKEN") or os.environ.get("NOMAD_TOKEN") or ""


def auth_headers() -> dict[str, str]:
    """X-Nomad-Token from CORRAL_TOKEN or NOMAD_TOKEN, for every request the CLI makes."""
    secret = token()
    return {"X-Nomad-Token": secret} if secret else {}


def get(path: str, params: dict[str, Any] | None = None) -> Any:
    return request("GET", path, params=params)


def put(path: str, body: Any, params: dict[str, Any] | None = None) -> Any:
    return request("PUT", path, params=params, body=body)


def post(path: str, body: Any, params: dict[str, Any] | None = None) -> Any:
    return request("POST", path, params=params, body=body)


def request(
    method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None, timeout_s: float = TIMEOUT_S
) -> Any:
    import httpx  # here, not at the top: most of the CLI's start-up time was imports

    url = address() + path
    headers = auth_headers()
    try:
        response = httpx.request(
            method, url, params=params, json=body, headers=headers, timeout=timeout_s, verify=_tls()
        )
    except httpx.HTTPError as err:
        raise ApiError(f"{method} {url}: cannot reach corral ({err}); is CORRAL_ADDR right?", 0) from err
    if response.status_code >= 400:
        raise ApiError(f"{method} {path}: {response.status_code} {problem_text(response)}", response.status_code)
    return response.json()


def problem_text(response: httpx.Response) -> str:
    """The API's problem+json detail (which names the field), or the raw body."""
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase + (f": {response.text.strip()}" if response.text.strip() else "")
    if isinstance(body, dict):
        title, detail = body.get("title") or response.reason_phrase, body.get("detail")
        return f"{title}: {detail}" if detail else str(title)
    return str(body)


def get_text(path: str, params: dict[str, Any] | None = None, timeout_s: float = TIMEOUT_S) -> bytes:
    """A GET whose answer is not JSON (plain log text); errors as `request` reports them."""
    import httpx

    url = address() + path
    try:
        response = httpx.request("GET", url, params=params, headers=auth_headers(), timeout=timeout_s, verify=_tls())
    except httpx.HTTPError as err:
        raise ApiError(f"GET {url}: cannot reach corral ({err}); is CORRAL_ADDR right?", 0) from err
    if response.status_code >= 400:
        raise ApiError(f"GET {path}: {response.status_code} {problem_text(response)}", response.status_code)
    return response.content


def stream_text(path: str, params: dict[str, Any] | None = None) -> Iterator[bytes]:
    """A GET whose answer keeps coming (a followed log), chunk by chunk as it arrives; no read
    timeout, as the stream may be quiet for long. Errors as `request` reports them."""
    import httpx

    url = address() + path
    timeout = httpx.Timeout(TIMEOUT_S, read=None)
    try:
        with httpx.stream(
            "GET", url, params=params, headers=auth_headers(), timeout=timeout, verify=_tls()
        ) as response:
            if response.status_code >= 400:
                response.read()
                raise ApiError(f"GET {path}: {response.status_code} {problem_text(response)}", response.status_code)
            yield from response.iter_bytes()
    except httpx.HTTPError as err:
        raise ApiError(f"GET {url}: cannot reach corral ({err}); is CORRAL_ADDR right?", 0) from err


def _tls() -> Any:
    """The CLI's TLS verification (CORRAL_CACERT and friends), imported on first use: app.config
    loads pydantic-settings, which every CLI call would otherwise pay for at start-up."""
    from app.config import client_tls

    return client_tls()
