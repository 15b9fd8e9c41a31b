"""The Docker daemon the `docker` driver talks to: where it is (Nomad's plugin option
`endpoint`, else DOCKER_HOST, else the default socket), a client for it, and the fingerprint a
node reports (`driver.docker`, its version and runtimes; Healthy only while it answers)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import requests.exceptions

DEFAULT_ENDPOINT = "unix:///var/run/docker.sock"
PING_TIMEOUT_S = 2
API_TIMEOUT_S = 60
# Every running task holds two connections (its exit wait and its log stream).
POOL_SIZE = 256
# What a call to an absent or failing daemon raises.
DAEMON_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)


def endpoint(configured: str = "") -> str:
    return configured or os.environ.get("DOCKER_HOST", "") or DEFAULT_ENDPOINT


def connect(address: str, timeout_s: float = API_TIMEOUT_S) -> docker.DockerClient:
    """A client speaking the daemon's API version (asks it: raises DAEMON_ERRORS when it is away)."""
    return docker.DockerClient(base_url=address, version="auto", timeout=round(timeout_s), max_pool_size=POOL_SIZE)


@dataclass(frozen=True)
class Daemon:
    """What a ping found: the daemon's version and runtimes, or why it did not answer."""

    version: str = ""
    runtimes: tuple[str, ...] = ()
    error: str = ""

    @property
    def healthy(self) -> bool:
        return not self.error

    def attributes(self) -> dict[str, str]:
        if not self.healthy:
            return {}
        return {
            "driver.docker": "1",
            "driver.docker.version": self.version,
            "driver.docker.runtimes": ",".join(self.runtimes),
        }

    def fingerprint(self) -> dict[str, Any]:
        """Node.Drivers["docker"] as Nomad reports it."""
        if not self.healthy:
            return {
                "Detected": False,
                "Healthy": False,
                "HealthDescription": f"Failed to connect to docker daemon: {self.error}",
                "Attributes": {},
            }
        return {"Detected": True, "Healthy": True, "HealthDescription": "Healthy", "Attributes": self.attributes()}


def probe(address: str) -> Daemon:
    """Ping the daemon (a short timeout: fingerprinting must not hang on a dead socket)."""
    try:
        client = docker.APIClient(base_url=address, version="auto", timeout=PING_TIMEOUT_S)
    except DAEMON_ERRORS as err:
        return Daemon(error=f"{address}: {err}")
    try:
        client.ping()
        info = client.info()
        version = client.version()
    except DAEMON_ERRORS as err:
        return Daemon(error=f"{address}: {err}")
    finally:
        client.close()
    runtimes = tuple(sorted((info.get("Runtimes") or {}).keys()))
    return Daemon(version=str(version.get("Version", "")), runtimes=runtimes)
