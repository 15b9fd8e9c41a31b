"""ACL policies' variables blocks, and who may do what on a variable path: policies' exact
paths and globs, and a workload identity's implicit access to its own job's variables."""

from __future__ import annotations

import pytest

from app.acl import policy as pol
from app.acl.capabilities import MANAGEMENT, Acl, WorkloadClaim

pytestmark = pytest.mark.unit
RULES = """
namespace "default" {
  policy = "read"
  variables {
    path "nomad/jobs/*" { capabilities = ["read"] }
    path "team/a" { capabilities = ["write", "destroy"] }
    path "team/*" { capabilities = ["list"] }
    path "secret/*" { capabilities = ["deny"] }
  }
}
namespace "prod-*" {
  variables { path "*" { capabilities = ["read"] } }
}
"""


def test_variables_blocks_parse_in_hcl_and_json_with_nomads_expansions() -> None:
    parsed = pol.parse(RULES)
    default = next(r for r in parsed.namespaces if r.name == "default")
    paths = {v.path: v.capabilities for v in default.variables}
    assert paths["nomad/jobs/*"] == {"read", "list"}  # read brings list
    assert paths["secret/*"] == {"deny"}
    prod = next(r for r in parsed.namespaces if r.name == "prod-*")
    assert prod.policy == "" and prod.capabilities == frozenset() and len(prod.variables) == 1
    as_json = pol.parse('{"namespace": {"x": {"variables": {"path": {"a/*": {"capabilities": ["write"]}}}}}}')
    assert as_json.namespaces[0].variables == (pol.VariablePathRule("a/*", frozenset({"write"})),)


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ('namespace "d" { variables { path "a" { capabilities = ["fly"] } } }', "unknown capabilities fly"),
        ('namespace "d" { variables { path "/a" { capabilities = ["read"] } } }', "leading '/'"),
        ('namespace "d" { variables { } }', "no variable paths"),
        ('namespace "d" { variables { path "a" { caps = ["read"] } } }', "unknown setting"),
    ],
)
def test_bad_variables_blocks_are_refused(rules: str, message: str) -> None:
    with pytest.raises(pol.PolicyError, match=message):
        pol.parse(rules)


def test_variable_operations_follow_exact_paths_then_the_closest_glob() -> None:
    acl = Acl.compile([pol.parse(RULES)])
    assert acl.allow_variable_op("default", "nomad/jobs/web", "read")
    assert acl.allow_variable_op("default", "nomad/jobs/web", "list")
    assert not acl.allow_variable_op("default", "nomad/jobs/web", "write")
    assert acl.allow_variable_op("default", "team/a", "write")
    assert not acl.allow_variable_op("default", "team/a", "list")
    assert acl.allow_variable_op("default", "team/b", "list") and not acl.allow_variable_op("default", "team/b", "read")
    assert not acl.allow_variable_op("default", "secret/x", "read")
    assert acl.allow_variable_op("prod-eu", "anything/at/all", "read")
    assert not acl.allow_variable_op("other", "nomad/jobs/web", "read")
    assert not acl.allow_variable_op("default", "unlisted", "read")
    assert MANAGEMENT.allow_variable_op("any", "path", "destroy")


def test_deny_in_any_policy_wins() -> None:
    allow = pol.parse('namespace "d" { variables { path "a" { capabilities = ["read"] } } }')
    deny = pol.parse('namespace "d" { variables { path "a" { capabilities = ["deny"] } } }')
    assert not Acl.compile([allow, deny]).allow_variable_op("d", "a", "read")


def test_a_workload_reads_and_lists_its_own_job_paths_only() -> None:
    acl = Acl.compile([], workload=WorkloadClaim("default", "web", "g", "t"))
    for path in ("nomad/jobs", "nomad/jobs/web", "nomad/jobs/web/g", "nomad/jobs/web/g/t"):
        assert acl.allow_variable_op("default", path, "read") and acl.allow_variable_op("default", path, "list")
        assert not acl.allow_variable_op("default", path, "write")
    assert not acl.allow_variable_op("default", "nomad/jobs/db", "read")
    assert not acl.allow_variable_op("default", "nomad/jobs/web/other", "read")
    assert not acl.allow_variable_op("prod", "nomad/jobs/web", "read")
    assert acl.allow_service_read("default") and not acl.allow_service_read("prod")
    assert not acl.allow_namespace_op("default", "read-job")
