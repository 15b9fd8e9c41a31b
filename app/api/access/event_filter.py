"""Which events a stream subscriber receives: Nomad's topic/key filter, its namespace filter
and its ACL rules for the event stream (nomad/event_endpoint.go, nomad/stream/subscription.go).
Pure: no request, no database."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from app.acl import policy as pol
from app.acl.capabilities import Acl

ALL = "*"
# Topics whose events belong to a namespace and need namespace:read-job there (Nomad's rule).
NAMESPACED_TOPICS = frozenset({"Job", "Evaluation", "Allocation", "Deployment", "Service"})
NODE_TOPIC = "Node"
# Variables: any variables rule in the namespace to subscribe, then `list` on each event's path
# (Nomad's AllowVariableSearch, then its per-event filter).
VARIABLE_TOPIC = "Variable"


class TopicError(ValueError):
    """A ?topic= value that is not Topic or Topic:Key."""


def parse_topics(values: Iterable[str]) -> dict[str, list[str]]:
    """Nomad's parseEventTopics: each value is Topic or Topic:Key (Key defaults to '*');
    no value at all means every topic."""
    topics: dict[str, list[str]] = {}
    for raw in values:
        parts = raw.split(":")
        if len(parts) > 2 or not parts[0]:
            raise TopicError(f"Invalid key value pair for topic, topic: {raw}")
        key = parts[1] if len(parts) == 2 else ALL
        topics.setdefault(parts[0], []).append(key)
    return topics or {ALL: [ALL]}


def denied_topic(topics: Iterable[str], namespaces: Iterable[str], acl: Acl) -> str | None:
    """The first requested topic the token may not subscribe to (Nomad's validateNsOp, for each
    namespace asked for), or None. Topics corral does not publish (NodePool, ACLToken, ...)
    and the all-topics wildcard need a management token, as in Nomad."""
    names = list(namespaces)
    for topic in topics:
        if topic in NAMESPACED_TOPICS:
            if not all(acl.allow_namespace_op(ns, pol.READ_JOB) for ns in names):
                return topic
        elif topic == NODE_TOPIC:
            if not acl.allow("node", pol.READ):
                return topic
        elif topic == VARIABLE_TOPIC:
            if not all(acl.allow_variable_search(ns) for ns in names):
                return topic
        elif not acl.management:
            return topic
    return None


@dataclass
class Subscription:
    """What one stream asked for. `namespaces` None means every namespace (?namespace=*), each
    still subject to the token's read-job capability."""

    topics: dict[str, list[str]]
    namespaces: frozenset[str] | None
    acl: Acl
    _readable: dict[str, bool] = field(default_factory=dict)

    def wants(self, topic: str, key: str, namespace: str, filter_keys: Iterable[str] | None) -> bool:
        if topic == VARIABLE_TOPIC:
            if not self._variable_ok(namespace, key):
                return False
        elif namespace and not self._namespace_ok(namespace):
            return False
        if topic == NODE_TOPIC and not self.acl.allow("node", pol.READ):
            return False
        keys = self.topics.get(ALL, []) + self.topics.get(topic, [])
        if ALL in keys:
            return True
        related = set(filter_keys or ())
        return any(k == key or k in related for k in keys)

    def _variable_ok(self, namespace: str, path: str) -> bool:
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        return self.acl.allow_variable_op(namespace, path, pol.LIST)

    def _namespace_ok(self, namespace: str) -> bool:
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        found = self._readable.get(namespace)
        if found is None:
            found = self._readable[namespace] = self.acl.allow_namespace_op(namespace, pol.READ_JOB)
        return found
