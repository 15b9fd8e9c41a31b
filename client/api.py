"""The REST calls a client makes to the servers; it never talks to Postgres."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from app.acl.client_link import LINK_KEY_FIELD
from app.settings.client_tls import client_tls
from app.wire.api.api_host_volumes import NodeHostVolumeJson
from app.wire.api.api_nodes import AllocUpdateJson, ClientAllocJson

NANOS = 1_000_000_000
# A client's watch on its allocations asks for no wait of its own, so it blocks for Nomad's
# default (DefaultBlockingRPCQueryTime, 5 minutes): a fleet of thousands re-polls rarely.
WATCH_WAIT_S = 300.0


class NodeGone(Exception):
    """The servers no longer know this node (or its secret): register again."""


class IdentityRefused(Exception):
    """The servers would not sign a task's workload identity."""


@dataclass(frozen=True)
class Heartbeat:
    ttl_s: float
    status: str
    force_gc_index: int


class ServerApi:
    def __init__(self, address: str, timeout_s: float = 10.0, token: str | None = None) -> None:
        self._http = httpx.Client(base_url=address.rstrip("/"), timeout=timeout_s, verify=client_tls())
        self.node_id: uuid.UUID | None = None
        self.secret = ""
        # The key of this node's link from the servers (app/acl/client_link.py), as their last
        # registration or heartbeat answer gave it: their requests to our endpoint are signed with it.
        self.link_key = ""
        # The introduction token (node:write) that registration needs when ACLs are on. Every
        # other call authenticates with the node's own secret.
        self.token = token if token is not None else os.environ.get("CORRAL_TOKEN") or os.environ.get("NOMAD_TOKEN", "")

    def close(self) -> None:
        self._http.close()

    def _auth(self) -> dict[str, str]:
        return {"X-Nomad-Token": self.secret}

    def register(self, node: dict[str, Any]) -> float:
        headers = {"X-Nomad-Token": self.token} if self.token else {}
        reply = self._http.put("/v1/node/register", json={"Node": node}, headers=headers)
        reply.raise_for_status()
        body = reply.json()
        self._take_link_key(body)
        return float(body["HeartbeatTTL"]) / NANOS

    def _take_link_key(self, body: dict[str, Any]) -> None:
        offered = body.get(LINK_KEY_FIELD)
        if isinstance(offered, str) and offered:
            self.link_key = offered

    def heartbeat(self, status: str) -> Heartbeat:
        reply = self._http.put(f"/v1/node/{self.node_id}/heartbeat", json={"Status": status}, headers=self._auth())
        if reply.status_code in (403, 404):
            raise NodeGone(reply.text)
        reply.raise_for_status()
        body = reply.json()
        self._take_link_key(body)
        return Heartbeat(body["HeartbeatTTL"] / NANOS, body["NodeStatus"], int(body.get("ForceGCIndex", 0)))

    def node_allocations(self, index: int, wait_s: float = WATCH_WAIT_S) -> tuple[list[ClientAllocJson], int]:
        """Blocking query: returns once the node's allocations may have changed past `index`;
        those the servers changed past it come whole (client_since), so a placement needs no
        second round trip."""
        reply = self._http.get(
            f"/v1/node/{self.node_id}/allocations",
            params={"index": index, "wait": f"{int(wait_s)}s", "client_since": index},
            headers=self._auth(),
            timeout=wait_s + wait_s / 16 + 10,
        )
        if reply.status_code in (403, 404):
            raise NodeGone(reply.text)
        reply.raise_for_status()
        listed: list[ClientAllocJson] = reply.json()
        return listed, int(reply.headers.get("X-Nomad-Index", "0"))

    def host_volumes(self, index: int, wait_s: float = WATCH_WAIT_S) -> tuple[list[NodeHostVolumeJson], int]:
        """Blocking query on the node's dynamic host volumes (corral's client protocol)."""
        reply = self._http.get(
            f"/v1/node/{self.node_id}/host-volumes",
            params={"index": index, "wait": f"{int(wait_s)}s"},
            headers=self._auth(),
            timeout=wait_s + wait_s / 16 + 10,
        )
        if reply.status_code in (403, 404):
            raise NodeGone(reply.text)
        reply.raise_for_status()
        listed: list[NodeHostVolumeJson] = reply.json()
        return listed, int(reply.headers.get("X-Nomad-Index", "0"))

    def allocation(self, alloc_id: str) -> dict[str, Any] | None:
        reply = self._http.get(f"/v1/allocation/{alloc_id}", headers=self._auth())
        if reply.status_code == 404:
            return None
        reply.raise_for_status()
        found: dict[str, Any] = reply.json()
        return found

    def update_allocations(self, updates: list[AllocUpdateJson]) -> None:
        reply = self._http.put(f"/v1/node/{self.node_id}/allocations", json={"Allocs": updates}, headers=self._auth())
        if reply.status_code == 404 or (reply.status_code == 403 and "X-Nomad-Token" in reply.text):
            raise NodeGone(reply.text)
        reply.raise_for_status()

    def sign_identities(self, wanted: list[dict[str, str]]) -> dict[str, dict[str, str]]:
        """The workload identities of an allocation's tasks, signed by the servers (Nomad's
        Alloc.SignIdentities): task -> identity name -> JWT. Raises IdentityRefused when the
        servers refuse one."""
        reply = self._http.put(f"/v1/node/{self.node_id}/identities", json={"Identities": wanted}, headers=self._auth())
        if reply.status_code in (403, 404):
            raise NodeGone(reply.text)
        reply.raise_for_status()
        body = reply.json()
        rejected = body.get("Rejections") or []
        if rejected:
            first = rejected[0]
            raise IdentityRefused(
                f"identity {first.get('IdentityName')!r} of task {first.get('TaskName')!r}: {first.get('Reason')}"
            )
        tokens: dict[str, dict[str, str]] = {}
        for signed in body.get("SignedIdentities") or []:
            tokens.setdefault(str(signed["TaskName"]), {})[str(signed["IdentityName"])] = str(signed["JWT"])
        return tokens

    def sync_services(self, allocs: dict[str, list[dict[str, Any]]]) -> None:
        """Set the Nomad service registrations of these allocations (an empty list: none)."""
        reply = self._http.put(f"/v1/node/{self.node_id}/services", json={"Allocs": allocs}, headers=self._auth())
        if reply.status_code == 404 or (reply.status_code == 403 and "X-Nomad-Token" in reply.text):
            raise NodeGone(reply.text)
        reply.raise_for_status()
