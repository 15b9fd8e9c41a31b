"""How the simulated fleet (client/fleet/fleet.py) tells its failures apart and waits them out.

Every loop (registration, heartbeats, watch, status sync) waits out 429, 5xx and transport
errors with capped, jittered exponential backoff. Only a registration the servers refuse
outright (another 4xx: the node itself is wrong, and every node is built alike) ends the fleet."""

from __future__ import annotations

import random

import httpx

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
BACKOFF_BASE_S = 0.5
REGISTER_BACKOFF_CAP_S = 10.0
# A heartbeat retried later than a few seconds would eat into the servers' grace.
HEARTBEAT_BACKOFF_CAP_S = 4.0
WATCH_BACKOFF_CAP_S = 10.0


class NodeGone(Exception):
    """The servers no longer know this node or its secret: register again."""


class Refused(Exception):
    """The servers refused the node's registration outright (a 4xx other than 408/429)."""


class Retryable(Exception):
    """The servers are busy or failing (429, 5xx): try again later."""

    def __init__(self, what: str, reply: httpx.Response) -> None:
        super().__init__(f"{what}: HTTP {reply.status_code}")
        self.status = reply.status_code


def backoff_delay(attempt: int, rng: random.Random, cap_s: float, base_s: float = BACKOFF_BASE_S) -> float:
    """Capped exponential backoff with jitter (half to all of the step), so nodes that failed
    together do not all come back together."""
    return float(min(cap_s, base_s * 2 ** min(attempt, 30)) * rng.uniform(0.5, 1.0))
