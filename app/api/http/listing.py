"""filter=, per_page=, next_token= and reverse= on list routes, as Nomad's paginator applies them.

Nomad walks a table in its index order, skips what sorts before next_token, evaluates the filter
on each object (the full object, not the stub it returns), and stops after per_page matches: the
token of the first object past the page is X-Nomad-NextToken. The filter runs before the page is
cut, so a page holds per_page matches. Tokens are the object's sort key: the ID, "namespace.ID",
or "CreateIndex.ID"; a next_token need not name an object that still exists.

Before both, as Nomad's paginator does, objects of namespaces the caller may not read are skipped
(app/api/access/visibility.py): a token never names one and a filter never evaluates one."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from flask import Response

from app.api.access.visibility import Visibility, list_visibility
from app.api.http.params import MAX_PER_PAGE, arg, bool_arg, integer_arg
from app.bexpr import FilterError, Predicate, compile_filter
from app.values.errors import InvalidInput

T = TypeVar("T")


class Order(Enum):
    ID = "ID"  # nodes; evaluations, allocations and deployments listed by ID prefix
    NAMESPACE_ID = "namespace.ID"  # jobs
    CREATE_INDEX_ID = "CreateIndex.ID"  # evaluations, allocations, deployments


@dataclass(frozen=True)
class ListQuery:
    predicate: Predicate | None
    per_page: int | None
    next_token: str | None
    reverse: bool
    visibility: Visibility  # what the caller may see: applied before the filter and the page

    @property
    def plain(self) -> bool:
        """Neither a filter nor a page: the whole list, as the route always returned it."""
        return self.predicate is None and not self.per_page and not self.next_token


def predicate_arg() -> Predicate | None:
    """?filter=, compiled; a syntax error is a 400 naming its position."""
    raw = arg("filter")
    if not raw:
        return None
    try:
        return compile_filter(raw)
    except FilterError as err:
        raise InvalidInput.of("filter", f"invalid filter expression: {err.message}") from None


def list_query(*, reverse: bool = True) -> ListQuery:
    """The list parameters of this request; `reverse=False` for routes where Nomad ignores it."""
    return ListQuery(
        predicate=predicate_arg(),
        per_page=integer_arg("per_page", minimum=0, maximum=MAX_PER_PAGE) or None,
        next_token=arg("next_token") or None,
        reverse=bool_arg("reverse") if reverse else False,
        visibility=list_visibility(),
    )


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One listed object: its sort key, what the filter sees, and what the route returns."""

    namespace: str
    id: str
    create_index: int
    view: Callable[[], Mapping[str, object]]
    body: T

    def token(self, order: Order) -> str:
        if order is Order.ID:
            return self.id
        if order is Order.NAMESPACE_ID:
            return f"{self.namespace}.{self.id}"
        return f"{self.create_index}.{self.id}"

    def sort_key(self, order: Order) -> tuple[str, str] | tuple[int, str] | tuple[str]:
        if order is Order.ID:
            return (self.id,)
        if order is Order.NAMESPACE_ID:
            return (self.namespace, self.id)
        return (self.create_index, self.id)

    def compare(self, order: Order, target: str) -> int:
        """-1, 0 or 1 as this entry sorts before, at or after the token `target`."""
        token = self.token(order)
        if order is Order.CREATE_INDEX_ID:
            index, dot, rest = target.partition(".")
            if dot and index.isdigit():
                mine, theirs = (self.create_index, self.id), (int(index), rest)
                return (mine > theirs) - (mine < theirs)
        return (token > target) - (token < target)


def page(entries: Iterable[Entry[T]], order: Order, query: ListQuery) -> tuple[list[T], str | None]:
    """The page of `entries` (any order in; sorted here by Nomad's key, in code point order as
    Nomad's byte-wise indexes) and the next token, or None on the last page."""
    ordered = sorted(entries, key=lambda e: e.sort_key(order), reverse=query.reverse)
    found = query.next_token is None
    out: list[T] = []
    for entry in ordered:
        if not query.visibility.allows(entry.namespace):
            continue  # first: what the caller may not read neither counts, nor is filtered, nor is a token
        if not found:
            compared = entry.compare(order, query.next_token or "")
            if compared == (1 if query.reverse else -1):
                continue
        if query.predicate is not None and not matches(query.predicate, entry.view()):
            continue
        found = True
        if query.per_page and len(out) == query.per_page:
            return out, entry.token(order)
        out.append(entry.body)
    return out, None


def matches(predicate: Predicate, view: Mapping[str, object]) -> bool:
    """Whether `view` passes; a filter that does not fit the object (a field that does not
    exist, text that is not a number for a number field) is a 400, as in Nomad."""
    try:
        return predicate.matches(view)
    except FilterError as err:
        raise InvalidInput.of("filter", f"cannot evaluate the filter: {err.message}") from None


def filtered(predicate: Predicate | None, items: Sequence[T], views: Callable[[T], Mapping[str, object]]) -> list[T]:
    """`items` that pass the filter (all of them without one)."""
    if predicate is None:
        return list(items)
    return [item for item in items if matches(predicate, views(item))]


def with_token(response: Response, token: str | None) -> Response:
    if token:
        response.headers["X-Nomad-NextToken"] = token
    return response


def as_is(body: Mapping[str, object]) -> Callable[[], Mapping[str, object]]:
    """The view of an object whose listed form is already its full form."""
    return lambda: body


def merged(full: Mapping[str, object], stub: Mapping[str, object]) -> dict[str, object]:
    """What the filter sees: Nomad evaluates it on the full object; keys only the listed stub
    has (a job's JobSummary) are there too."""
    return {**stub, **full}
