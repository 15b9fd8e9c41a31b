"""The Source that reads Nomad's HTTP API as a Nomad client's templates do: variables from
GET /v1/var/:path and /v1/vars?prefix=, services from GET /v1/service/:name and
/v1/services, each a blocking query (?index=&wait=) authenticated with the token given
(the task's workload identity when it has one, else the node's secret)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from client.template.values import Service, ServiceSnippet, VarMeta
from client.templating.source import SERVICE, SERVICES, VAR, VARS, Answer, Dependency, SourceError, Value

# consul-template's default blocking wait for Nomad queries.
DEFAULT_WAIT_S = 60.0


class HttpSource:
    def __init__(
        self,
        address: str,
        token: Callable[[], str],
        namespace: str = "default",
        verify: Any = True,
        client: httpx.Client | None = None,
    ) -> None:
        self._http = client or httpx.Client(base_url=address.rstrip("/"), verify=verify)
        self._own = client is None
        self.token, self.namespace = token, namespace

    def close(self) -> None:
        if self._own:
            self._http.close()

    def fetch(self, dependency: Dependency, index: int, wait_s: float) -> Answer:
        path, params = _route(dependency)
        params = {**params, "namespace": self.namespace}
        if index:
            params |= {"index": str(index), "wait": f"{max(1, int(wait_s))}s"}
        token = self.token()
        headers = {"X-Nomad-Token": token} if token else {}
        try:
            reply = self._http.get(path, params=params, headers=headers, timeout=wait_s + wait_s / 16 + 10)
        except httpx.HTTPError as err:
            raise SourceError(f"{dependency}: {err}") from None
        new_index = int(reply.headers.get("X-Nomad-Index") or 0)
        if reply.status_code == 404 and dependency.kind == VAR:
            return Answer(None, new_index)
        if reply.status_code != 200:
            raise SourceError(f"{dependency}: {reply.status_code} {reply.text.strip()[:200]}")
        try:
            return Answer(_decode(dependency.kind, reply.json()), new_index)
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise SourceError(f"{dependency}: unexpected answer: {err}") from None


def _route(dependency: Dependency) -> tuple[str, dict[str, str]]:
    if dependency.kind == VAR:
        return f"/v1/var/{quote(dependency.key, safe='/')}", {}
    if dependency.kind == VARS:
        return "/v1/vars", {"prefix": dependency.key}
    if dependency.kind == SERVICE:
        return f"/v1/service/{quote(dependency.key, safe='')}", {}
    return "/v1/services", {}


def _decode(kind: str, body: Any) -> Value:
    if kind == VAR:
        return {str(k): str(v) for k, v in (body.get("Items") or {}).items()}
    if kind == VARS:
        return [
            VarMeta(
                str(item.get("Namespace", "")),
                str(item["Path"]),
                int(item.get("CreateIndex", 0)),
                int(item.get("ModifyIndex", 0)),
                int(item.get("CreateTime", 0)),
                int(item.get("ModifyTime", 0)),
            )
            for item in body or []
        ]
    if kind == SERVICE:
        return [_service(item) for item in body or []]
    snippets: dict[str, set[str]] = {}
    for namespace in body or []:
        for item in namespace.get("Services") or []:
            snippets.setdefault(str(item["ServiceName"]), set()).update(str(t) for t in item.get("Tags") or ())
    return [ServiceSnippet(name, tuple(sorted(tags))) for name, tags in sorted(snippets.items())]


def _service(item: dict[str, Any]) -> Service:
    return Service(
        ID=str(item.get("ID", "")),
        Name=str(item.get("ServiceName", "")),
        Namespace=str(item.get("Namespace", "")),
        Datacenter=str(item.get("Datacenter", "")),
        Address=str(item.get("Address", "")),
        Port=int(item.get("Port", 0)),
        Tags=tuple(str(t) for t in item.get("Tags") or ()),
        NodeID=str(item.get("NodeID", "")),
        AllocID=str(item.get("AllocID", "")),
        JobID=str(item.get("JobID", "")),
    )


__all__ = ["DEFAULT_WAIT_S", "SERVICE", "SERVICES", "VARS", "HttpSource"]
