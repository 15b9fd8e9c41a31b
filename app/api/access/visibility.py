"""Which namespaces a list may show its caller, decided before the list is paged or filtered.

A list route that spans namespaces (a ListIn requirement) must skip what the caller may not read
before `per_page` cuts the page and before `?filter=` runs: otherwise X-Nomad-NextToken names a
hidden object and a filter answers yes/no questions about it. `app.api.http.listing.page` applies the
visibility of the ListQuery; a list paged in SQL restricts its namespaces with `readable()`. A
ListIn list answered without taking its visibility is refused (app/api/access/enforcement.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from flask import g
from sqlalchemy.orm import Session

from app.acl.capabilities import Acl
from app.api.access.callers import caller
from app.store import namespaces as namespace_store
from app.store.evaluation.evals import CORE


@dataclass(frozen=True)
class Visibility:
    """`acl` may list objects of the namespaces where it holds `capability`; None: every namespace
    (ACLs off, a management token, a list that is not a ListIn route's)."""

    acl: Acl | None = None
    capability: str = ""
    workload_namespace: str | None = None  # a workload identity listing its own namespace

    def allows(self, namespace: str) -> bool:
        if self.acl is None or namespace == self.workload_namespace:
            return True
        return self.acl.allow_namespace_op(namespace, self.capability)

    def within(self, namespaces: Iterable[str]) -> frozenset[str] | None:
        """Those of `namespaces` the caller may list; None when nothing is hidden."""
        if self.acl is None:
            return None
        return frozenset(name for name in namespaces if self.allows(name))


EVERYTHING = Visibility()


def list_visibility() -> Visibility:
    """This request's visibility, from the ListIn check of app/api/access/enforcement.py. Taking it
    records that the list honours it (enforcement refuses a ListIn list that did not)."""
    capability: str | None = g.get("corral_list_capability")
    if not capability:
        return EVERYTHING
    g.corral_list_visibility_taken = True
    acl = caller().acl
    return EVERYTHING if acl.management else Visibility(acl, capability, own_workload_namespace(acl))


def own_workload_namespace(acl: Acl) -> str | None:
    """The namespace a workload identity may list in on this request (a ListIn route with
    workload_may), else None."""
    if acl.workload is None or not g.get("corral_list_workload", False):
        return None
    return acl.workload.namespace


def readable(session: Session, visibility: Visibility) -> frozenset[str] | None:
    """The namespaces (and CORE, for core evaluations) a SQL-paged list may show; None: all. An
    object of a namespace that no longer exists is hidden from a restricted caller."""
    if visibility.acl is None:
        return None
    names = [row.name for row in namespace_store.list_namespaces(session)]
    return visibility.within([*names, CORE])
