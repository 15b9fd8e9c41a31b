"""The CLI's HTTP client for the REST API: the address from CORRAL_ADDR (or NOMAD_ADDR), and
errors turned into click errors that say what the server answered."""

from __future__ import annotations

import os
from typing import Any

import click
import httpx

DEFAULT_ADDR = "http://127.0.0.1:4646"


def api_address() -> str:
    return (os.environ.get("CORRAL_ADDR") or os.environ.get("NOMAD_ADDR") or DEFAULT_ADDR).rstrip("/")


def call(method: str, path: str, *, timeout_s: float = 30.0, **kwargs: Any) -> Any:
    """Send one request and return its decoded JSON body (None when empty)."""
    url = f"{api_address()}{path}"
    try:
        response = httpx.request(method, url, timeout=timeout_s, **kwargs)
    except httpx.HTTPError as err:
        raise click.ClickException(f"cannot reach the corral API at {api_address()}: {err}") from err
    if response.status_code >= 400:
        raise click.ClickException(f"{method} {path} failed with HTTP {response.status_code}: {_problem(response)}")
    return response.json() if response.content else None


def _problem(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or response.reason_phrase
    problems = body.get("errors") if isinstance(body, dict) else None
    if problems:
        return "; ".join(f"{p.get('field')}: {p.get('message')}" for p in problems)
    return str(body.get("title") if isinstance(body, dict) else body)
