"""The event stream's subscription rules (app/api/access/event_filter.py): Nomad's topic parsing,
topic/key matching with FilterKeys and wildcards, namespaces and ACL capabilities."""

from __future__ import annotations

import pytest

from app.acl import policy as pol
from app.acl.capabilities import MANAGEMENT, Acl, WorkloadClaim
from app.api.access.event_filter import Subscription, TopicError, denied_topic, parse_topics

pytestmark = pytest.mark.unit


def acl(rules: str) -> Acl:
    return Acl.compile([pol.parse(rules)])


def test_parse_topics_as_nomad() -> None:
    assert parse_topics([]) == {"*": ["*"]}
    assert parse_topics(["Job", "Job:web", "Allocation:*", "*:x"]) == {
        "Job": ["*", "web"],
        "Allocation": ["*"],
        "*": ["x"],
    }
    for bad in ("Job:a:b", "", ":web"):
        with pytest.raises(TopicError):
            parse_topics([bad])


def test_keys_match_the_key_or_a_filter_key() -> None:
    sub = Subscription(parse_topics(["Allocation:web", "Job:api"]), frozenset({"default"}), MANAGEMENT)
    assert sub.wants("Allocation", "a1", "default", ["web", ""])
    assert not sub.wants("Allocation", "a1", "default", ["other", ""])
    assert sub.wants("Job", "api", "default", None)
    assert not sub.wants("Job", "web", "default", None)
    assert not sub.wants("Evaluation", "e1", "default", ["api", ""])  # a topic not asked for
    every_key = Subscription(parse_topics(["Job:web", "Job:*"]), frozenset({"default"}), MANAGEMENT)
    assert every_key.wants("Job", "anything", "default", None)
    any_topic = Subscription(parse_topics(["*:web"]), frozenset({"default"}), MANAGEMENT)
    assert any_topic.wants("Evaluation", "e1", "default", ["web", ""])
    assert not any_topic.wants("Evaluation", "e2", "default", ["api", ""])


def test_namespaces_filter_namespaced_events_only() -> None:
    sub = Subscription(parse_topics([]), frozenset({"prod"}), MANAGEMENT)
    assert sub.wants("Job", "web", "prod", None)
    assert not sub.wants("Job", "web", "default", None)
    assert sub.wants("Node", "n1", "", None)  # nodes belong to no namespace
    everywhere = Subscription(parse_topics([]), None, MANAGEMENT)
    assert everywhere.wants("Job", "web", "default", None) and everywhere.wants("Job", "web", "prod", None)


def test_acl_rules_for_subscribing_and_for_each_event() -> None:
    reader = acl('namespace "prod" { policy = "read" }')
    assert denied_topic(["Job", "Evaluation"], ["prod"], reader) is None
    assert denied_topic(["Job"], ["default"], reader) == "Job"
    assert denied_topic(["Node"], ["prod"], reader) == "Node"
    assert denied_topic(["*"], ["prod"], reader) == "*"
    assert denied_topic(["NodePool"], ["prod"], reader) == "NodePool"  # unpublished topics: management
    assert denied_topic(["*", "NodePool"], ["prod"], MANAGEMENT) is None
    nodes = acl('node { policy = "read" }')
    assert denied_topic(["Node"], ["default"], nodes) is None
    # Every namespace: the events of the namespaces the token cannot read are dropped.
    sub = Subscription(parse_topics(["Job"]), None, reader)
    assert sub.wants("Job", "web", "prod", None)
    assert not sub.wants("Job", "web", "default", None)
    assert not Subscription(parse_topics(["Node"]), None, reader).wants("Node", "n1", "", None)


def test_the_variable_topic_needs_a_variables_rule_then_list_per_path() -> None:
    rules = acl('namespace "default" { variables { path "app/*" { capabilities = ["list"] } } }')
    assert denied_topic(["Variable"], ["default"], rules) is None
    assert denied_topic(["Variable"], ["prod"], rules) == "Variable"  # no variables rule there
    assert denied_topic(["Variable"], ["default"], acl('namespace "default" { policy = "write" }')) == "Variable"
    sub = Subscription(parse_topics(["Variable"]), frozenset({"default"}), rules)
    assert sub.wants("Variable", "app/one", "default", None)
    assert not sub.wants("Variable", "secret/two", "default", None)  # no list on that path
    assert not sub.wants("Variable", "app/one", "prod", None)  # another namespace than asked for
    assert Subscription(parse_topics(["Variable:app/one"]), None, MANAGEMENT).wants("Variable", "app/one", "x", None)


def test_variable_search_over_namespace_globs_wildcards_and_workloads() -> None:
    globbed = acl('namespace "prod-*" { variables { path "*" { capabilities = ["read"] } } }')
    assert globbed.allow_variable_search("prod-eu") and not globbed.allow_variable_search("dev")
    assert globbed.allow_variable_search("*") and not acl('node { policy = "read" }').allow_variable_search("*")
    workload = Acl.compile([], workload=WorkloadClaim("default", "web", "g", "t"))
    assert workload.allow_variable_search("default") and not workload.allow_variable_search("prod")
    assert MANAGEMENT.allow_variable_search("anything")
