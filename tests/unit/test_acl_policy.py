"""Nomad's policy language (app.acl.policy) and the capability checks (app.acl.capabilities):
HCL and JSON forms, expansion of read/write/scale, glob namespaces, merging with deny winning."""

from __future__ import annotations

import pytest

from app.acl import policy as pol
from app.acl.capabilities import MANAGEMENT, Acl

pytestmark = pytest.mark.unit

HCL = """
namespace "default" {
  policy       = "read"
  capabilities = ["submit-job"]
}
namespace "prod-*" { policy = "write" }
namespace "prod-secret" { policy = "deny" }
node { policy = "read" }
agent { policy = "write" }
operator { policy = "deny" }
plugin { policy = "list" }
"""


def test_hcl_policy_expands_namespace_policies_and_capabilities() -> None:
    parsed = pol.parse(HCL)
    rules = {r.name: r for r in parsed.namespaces}
    assert rules["default"].capabilities == frozenset({*pol.EXPANSIONS["read"], "submit-job"})
    assert pol.READ_LOGS in rules["prod-*"].capabilities
    assert rules["prod-secret"].capabilities == frozenset({"deny"})
    assert (parsed.node, parsed.agent, parsed.operator, parsed.plugin) == ("read", "write", "deny", "list")


def test_json_policy_reads_like_hcl() -> None:
    text = '{"namespace": {"default": {"policy": "read", "capabilities": ["submit-job"]}}, "node": {"policy": "read"}}'
    assert pol.parse(text).namespaces == pol.parse(HCL).namespaces[:1]
    assert pol.parse(text).node == "read"


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ('namespace "x" { policy = "admin" }', "policy must be one of"),
        ('namespace "x" { capabilities = ["fly"] }', "unknown capabilities fly"),
        ('namespace "x" { }', "needs a policy or capabilities"),
        ('node { policy = "scale" }', "node: policy must be one of"),
        ('plugin { policy = "write" }', "plugin: policy must be one of"),
        ('keyring { policy = "read" }', "unknown block(s) keyring"),
        ('namespace "a/b" { policy = "read" }', "namespace name or glob"),
        ("namespace {", "invalid HCL"),
        ("{not json", "invalid JSON"),
        ("", "must not be empty"),
    ],
)
def test_bad_rules_name_the_block_and_problem(rules: str, message: str) -> None:
    with pytest.raises(pol.PolicyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pol.parse(rules)


def test_exact_name_beats_glob_and_closest_glob_wins() -> None:
    acl = Acl.compile([pol.parse(HCL)])
    assert acl.allow_namespace_op("prod-web", pol.SUBMIT_JOB)
    assert not acl.allow_namespace_op("prod-secret", pol.READ_JOB)  # exact deny beats the glob
    assert acl.allow_namespace_op("default", pol.SUBMIT_JOB)
    assert not acl.allow_namespace_op("default", pol.READ_LOGS)
    assert not acl.allow_namespace_op("staging", pol.READ_JOB)
    closest = Acl.compile([pol.parse('namespace "*" { policy = "read" }\nnamespace "team-*" { policy = "deny" }')])
    assert closest.allow_namespace_op("other", pol.READ_JOB)
    assert not closest.allow_namespace_op("team-a", pol.READ_JOB)


def test_policies_merge_and_deny_wins() -> None:
    reader = pol.parse('namespace "default" { policy = "read" }\nnode { policy = "read" }')
    writer = pol.parse('namespace "default" { capabilities = ["submit-job"] }\nnode { policy = "write" }')
    merged = Acl.compile([reader, writer])
    assert merged.allow_namespace_op("default", pol.SUBMIT_JOB) and merged.allow_namespace_op("default", pol.READ_JOB)
    assert merged.allow("node", "write")
    denied = Acl.compile(
        [reader, writer, pol.parse('namespace "default" { policy = "deny" }\nnode { policy = "deny" }')]
    )
    assert not denied.allow_namespace_op("default", pol.READ_JOB) and not denied.allow_namespace("default")
    assert not denied.allow("node", "read")


def test_coarse_levels_and_management() -> None:
    acl = Acl.compile([pol.parse(HCL)])
    assert acl.allow("node", "read") and not acl.allow("node", "write")
    assert acl.allow("agent", "write") and acl.allow("agent", "read")
    assert not acl.allow("operator", "read")
    assert acl.allow("plugin", "list") and not acl.allow("plugin", "read")
    assert MANAGEMENT.allow("operator", "write") and MANAGEMENT.allow_namespace_op("any", pol.SUBMIT_JOB)
    assert not Acl.compile([]).allow_namespace("default")


def test_scale_policy_grants_only_scaling() -> None:
    acl = Acl.compile([pol.parse('namespace "default" { policy = "scale" }')])
    assert acl.allow_namespace_op("default", pol.SCALE_JOB)
    assert not acl.allow_namespace_op("default", pol.SUBMIT_JOB)
    assert not acl.allow_namespace_op("default", pol.READ_JOB)


def test_node_pool_rules_expand_match_globs_and_deny_wins() -> None:
    acl = Acl.compile(
        [
            pol.parse('node_pool "gpu" { policy = "read" }\nnode_pool "team-*" { policy = "write" }'),
            pol.parse('node_pool "team-secret" { policy = "deny" }\nnode_pool "batch" { capabilities = ["delete"] }'),
        ]
    )
    assert acl.allow_node_pool_op("gpu", pol.READ) and not acl.allow_node_pool_op("gpu", pol.WRITE)
    assert all(acl.allow_node_pool_op("team-a", c) for c in (pol.READ, pol.WRITE, pol.DELETE))
    assert not acl.allow_node_pool("team-secret") and not acl.allow_node_pool_op("team-secret", pol.READ)
    assert acl.allow_node_pool_op("batch", pol.DELETE) and not acl.allow_node_pool_op("batch", pol.READ)
    assert not acl.allow_node_pool("default") and not acl.allow_node_pool_op("default", pol.READ)
    assert MANAGEMENT.allow_node_pool_op("anything", pol.DELETE) and MANAGEMENT.allow_node_pool("x")
    json_rules = pol.parse('{"node_pool": {"gpu": {"policy": "read"}}}')
    assert json_rules.node_pools == pol.parse('node_pool "gpu" { policy = "read" }').node_pools


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ('node_pool "x" { policy = "scale" }', "node_pool 'x': policy must be one of deny, read, write"),
        ('node_pool "x" { capabilities = ["submit-job"] }', "unknown capabilities submit-job"),
        ('node_pool "x" { variables { } }', "unknown setting"),
        ('node_pool "a/b" { policy = "read" }', "node pool name or glob"),
        ('node_pool "x" { policy = "read" }\nnode_pool "x" { policy = "write" }', "defined twice"),
    ],
)
def test_bad_node_pool_rules_name_the_problem(rules: str, message: str) -> None:
    with pytest.raises(pol.PolicyError, match=message):
        pol.parse(rules)
