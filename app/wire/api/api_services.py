"""GET /v1/services: per namespace, each service name with the union of its instances' tags
(Nomad's ServiceRegistrationListStub). A registration itself is app.store.services.RegistrationJson."""

from __future__ import annotations

from typing import TypedDict


class ServiceStubJson(TypedDict):
    ServiceName: str
    Tags: list[str]


class ServiceListJson(TypedDict):
    Namespace: str
    Services: list[ServiceStubJson]
