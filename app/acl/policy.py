"""Nomad's ACL policy language, in HCL or JSON, parsed into a typed Policy.

    namespace "default" { policy = "read"  capabilities = ["submit-job"] }
    namespace "prod-*"  { policy = "deny" }
    node     { policy = "read" }
    agent    { policy = "read" }
    operator { policy = "read" }
    plugin   { policy = "list" }

A namespace's `policy` expands to a set of capabilities (read, write, scale, deny), merged with
its explicit `capabilities`. A namespace's `variables` block grants capabilities on variable
paths (globs allowed):

    namespace "default" {
      variables { path "nomad/jobs/*" { capabilities = ["read", "list"] } }
    }

Blocks corral has no objects for (host_volume, quota) are accepted and checked for shape, so
policies written for Nomad apply unchanged."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

import hcl2

from app.wire.json import JsonObject, JsonValue

DENY, READ, LIST, WRITE, SCALE = "deny", "read", "list", "write", "scale"

# Namespace capabilities (Nomad's acl/policy.go names).
LIST_JOBS = "list-jobs"
PARSE_JOB = "parse-job"
READ_JOB = "read-job"
SUBMIT_JOB = "submit-job"
DISPATCH_JOB = "dispatch-job"
READ_LOGS = "read-logs"
READ_FS = "read-fs"
ALLOC_EXEC = "alloc-exec"
ALLOC_NODE_EXEC = "alloc-node-exec"
ALLOC_LIFECYCLE = "alloc-lifecycle"
LIST_SCALING_POLICIES = "list-scaling-policies"
READ_SCALING_POLICY = "read-scaling-policy"
READ_JOB_SCALING = "read-job-scaling"
SCALE_JOB = "scale-job"
NAMESPACE_CAPABILITIES = frozenset(
    {
        DENY,
        LIST_JOBS,
        PARSE_JOB,
        READ_JOB,
        SUBMIT_JOB,
        DISPATCH_JOB,
        READ_LOGS,
        READ_FS,
        ALLOC_EXEC,
        ALLOC_NODE_EXEC,
        ALLOC_LIFECYCLE,
        "sentinel-override",
        "csi-register-plugin",
        "csi-write-volume",
        "csi-read-volume",
        "csi-list-volume",
        "csi-mount-volume",
        "host-volume-create",
        "host-volume-register",
        "host-volume-read",
        "host-volume-write",
        "host-volume-delete",
        LIST_SCALING_POLICIES,
        READ_SCALING_POLICY,
        READ_JOB_SCALING,
        SCALE_JOB,
        "submit-recommendation",
    }
)
_READ_SET = (
    LIST_JOBS,
    PARSE_JOB,
    READ_JOB,
    "csi-list-volume",
    "csi-read-volume",
    READ_JOB_SCALING,
    LIST_SCALING_POLICIES,
    READ_SCALING_POLICY,
    "host-volume-read",
)
EXPANSIONS: dict[str, tuple[str, ...]] = {
    DENY: (DENY,),
    READ: _READ_SET,
    WRITE: (
        *_READ_SET,
        SCALE_JOB,
        SUBMIT_JOB,
        DISPATCH_JOB,
        READ_LOGS,
        READ_FS,
        ALLOC_EXEC,
        ALLOC_LIFECYCLE,
        "csi-mount-volume",
        "csi-write-volume",
        "submit-recommendation",
        "host-volume-create",
        "host-volume-write",
        "host-volume-delete",
    ),
    SCALE: (LIST_SCALING_POLICIES, READ_SCALING_POLICY, READ_JOB_SCALING, SCALE_JOB),
}
# node_pool "name-or-glob" { policy = "..." capabilities = [...] }, as Nomad's: write may also
# delete the pool.
DELETE = "delete"
NODE_POOL_CAPABILITIES = frozenset({DENY, READ, WRITE, DELETE})
NODE_POOL_EXPANSIONS: dict[str, tuple[str, ...]] = {DENY: (DENY,), READ: (READ,), WRITE: (DELETE, READ, WRITE)}
COARSE = (DENY, READ, WRITE)  # node, agent, operator, quota
PLUGIN = (DENY, READ, LIST)
NAMESPACE_POLICIES = (DENY, READ, WRITE, SCALE)
# A namespace label: a name or a glob with '*'.
_NAMESPACE_LABEL = re.compile(r"^[A-Za-z0-9*_.-]{1,128}$")
_HCL_OPTIONS = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=True, with_comments=False)
_BOOKKEEPING = frozenset({"__is_block__", "__comments__", "__inline_comments__", "__start_line__", "__end_line__"})


# Variable path capabilities (Nomad's VariablesCapability*).
VARIABLE_CAPABILITIES = frozenset({"list", "read", "write", "destroy", DENY})


class PolicyError(ValueError):
    """The rules text is not a valid policy; the message names the block and the problem."""


@dataclass(frozen=True)
class VariablePathRule:
    path: str  # a path or a glob
    capabilities: frozenset[str]  # expanded: read brings list; deny alone


@dataclass(frozen=True)
class NamespaceRule:
    name: str  # a namespace or a glob
    policy: str  # "" when only capabilities were given
    capabilities: frozenset[str]
    variables: tuple[VariablePathRule, ...] = ()


@dataclass(frozen=True)
class NodePoolRule:
    name: str  # a node pool or a glob
    capabilities: frozenset[str]


@dataclass(frozen=True)
class Policy:
    namespaces: tuple[NamespaceRule, ...] = ()
    node_pools: tuple[NodePoolRule, ...] = ()
    node: str = ""
    agent: str = ""
    operator: str = ""
    plugin: str = ""


def parse(rules: str) -> Policy:
    """Parse Nomad policy rules (JSON when the text starts with '{', HCL otherwise)."""
    text = rules.strip()
    if not text:
        raise PolicyError("Rules: must not be empty")
    if text.startswith("{"):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as err:
            raise PolicyError(f"Rules: invalid JSON: {err}") from None
        if not isinstance(document, dict):
            raise PolicyError("Rules: must be a JSON object")
    else:
        try:
            document = hcl2.loads(text, serialization_options=_HCL_OPTIONS)
        # python-hcl2 raises lark's exception types and plain runtime errors for bad input.
        except Exception as err:
            raise PolicyError(
                f"Rules: invalid HCL: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
            ) from None
    return _policy(document)


def _policy(document: Mapping[str, JsonValue]) -> Policy:
    known = {"namespace", "node", "node_pool", "agent", "operator", "plugin", "quota", "host_volume"}
    unknown = sorted(set(document) - known - _BOOKKEEPING)
    if unknown:
        raise PolicyError(f"Rules: unknown block(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}")
    rules = [_namespace_rule(label, body) for label, body in _labelled(document.get("namespace"), "namespace")]
    seen: set[str] = set()
    for rule in rules:
        if rule.name in seen:
            raise PolicyError(f"namespace {rule.name!r}: defined twice")
        seen.add(rule.name)
    pools = [_node_pool_rule(label, body) for label, body in _labelled(document.get("node_pool"), "node_pool")]
    if len({rule.name for rule in pools}) != len(pools):
        raise PolicyError("node_pool: a pool is defined twice")
    for label, body in _labelled(document.get("host_volume"), "host_volume"):
        _namespace_like(f"host_volume {label!r}", body, (DENY, READ, WRITE), None)
    quota = _coarse(document.get("quota"), "quota", COARSE)
    del quota  # corral has no quotas; the block is checked so Nomad's policies still apply
    return Policy(
        namespaces=tuple(rules),
        node_pools=tuple(pools),
        node=_coarse(document.get("node"), "node", COARSE),
        agent=_coarse(document.get("agent"), "agent", COARSE),
        operator=_coarse(document.get("operator"), "operator", COARSE),
        plugin=_coarse(document.get("plugin"), "plugin", PLUGIN),
    )


def _bodies(value: object, where: str) -> list[JsonObject]:
    """A block as HCL gives it (a list of bodies) or as JSON does (one object)."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return list(value)
    raise PolicyError(f"{where}: must be a block")


def _labelled(value: object, where: str) -> list[tuple[str, JsonObject]]:
    """`namespace "x" {...}`: HCL gives [{"x": {...}}], JSON gives {"x": {...}}."""
    out: list[tuple[str, JsonObject]] = []
    for body in _bodies(value, where):
        for label, inner in body.items():
            if label in _BOOKKEEPING:
                raise PolicyError(f'{where}: needs a label, e.g. {where} "default" {{ ... }}')
            if not isinstance(inner, dict):
                raise PolicyError(f"{where} {label!r}: must be a block")
            out.append((str(label), inner))
    return out


def _namespace_rule(label: str, body: JsonObject) -> NamespaceRule:
    where = f"namespace {label!r}"
    if not _NAMESPACE_LABEL.fullmatch(label):
        raise PolicyError(f"{where}: a namespace name or glob of letters, digits, '-', '_', '.' and '*'")
    variables = _variables(where, body.get("variables"))
    if variables and "policy" not in body and "capabilities" not in body:
        unknown = sorted(set(body) - {"variables"} - _BOOKKEEPING)
        if unknown:
            raise PolicyError(f"{where}: unknown setting(s) {', '.join(unknown)}")
        return NamespaceRule(label, "", frozenset(), variables)  # Nomad allows a variables block alone
    policy, capabilities = _namespace_like(where, body, NAMESPACE_POLICIES, NAMESPACE_CAPABILITIES)
    expanded = set(EXPANSIONS.get(policy, ())) | capabilities
    return NamespaceRule(label, policy, frozenset(expanded), variables)


def _variables(where: str, value: object) -> tuple[VariablePathRule, ...]:
    """`variables { path "..." { capabilities = [...] } }` as Nomad's parser checks it."""
    bodies = _bodies(value, f"{where} variables")
    if not bodies:
        return ()
    rules: list[VariablePathRule] = []
    for body in bodies:
        unknown = sorted(set(body) - {"path"} - _BOOKKEEPING)
        if unknown:
            raise PolicyError(f"{where} variables: unknown setting(s) {', '.join(unknown)}")
        for spec, inner in _labelled(body.get("path"), f"{where} variables path"):
            rules.append(_variable_path(where, spec, inner))
    if not rules:
        raise PolicyError(f'{where} variables: no variable paths (add path "..." {{ capabilities = [...] }})')
    return tuple(rules)


def _variable_path(where: str, spec: str, body: JsonObject) -> VariablePathRule:
    at = f"{where} variables path {spec!r}"
    if not spec:
        raise PolicyError(f"{where} variables: a path needs a label")
    if spec.startswith("/"):
        raise PolicyError(f"{at}: cannot start with a leading '/'")
    unknown = sorted(set(body) - {"capabilities"} - _BOOKKEEPING)
    if unknown:
        raise PolicyError(f"{at}: unknown setting(s) {', '.join(unknown)}")
    caps = _strings(body.get("capabilities", []), f"{at}: capabilities must be a list of strings")
    bad = sorted(set(caps) - VARIABLE_CAPABILITIES)
    if bad:
        raise PolicyError(
            f"{at}: unknown capabilities {', '.join(bad)}; choose from {', '.join(sorted(VARIABLE_CAPABILITIES))}"
        )
    return VariablePathRule(spec, expand_variable_capabilities(caps))


def _strings(value: JsonValue | None, problem: str) -> list[str]:
    if not isinstance(value, list):
        raise PolicyError(problem)
    found = [item for item in value if isinstance(item, str)]
    if len(found) != len(value):
        raise PolicyError(problem)
    return found


def expand_variable_capabilities(caps: list[str]) -> frozenset[str]:
    """Nomad's expandVariablesCapabilities: deny stands alone; read brings list."""
    if DENY in caps:
        return frozenset({DENY})
    return frozenset(caps) | ({LIST} if "read" in caps else set())


def _node_pool_rule(label: str, body: JsonObject) -> NodePoolRule:
    where = f"node_pool {label!r}"
    if not _NAMESPACE_LABEL.fullmatch(label):
        raise PolicyError(f"{where}: a node pool name or glob of letters, digits, '-', '_', '.' and '*'")
    policy, capabilities = _namespace_like(where, body, (DENY, READ, WRITE), NODE_POOL_CAPABILITIES, variables=False)
    return NodePoolRule(label, frozenset(set(NODE_POOL_EXPANSIONS.get(policy, ())) | capabilities))


def _namespace_like(
    where: str,
    body: JsonObject,
    policies: tuple[str, ...],
    capabilities: frozenset[str] | None,
    variables: bool = True,
) -> tuple[str, frozenset[str]]:
    with_variables = capabilities is not None and variables
    allowed = {"policy", "capabilities", "variables"} if with_variables else {"policy", "capabilities"}
    unknown = sorted(set(body) - allowed - _BOOKKEEPING)
    if unknown:
        raise PolicyError(f"{where}: unknown setting(s) {', '.join(unknown)}")
    policy = body.get("policy", "")
    if not isinstance(policy, str) or (policy and policy not in policies):
        raise PolicyError(f"{where}: policy must be one of {', '.join(policies)}, got {policy!r}")
    caps = _strings(body.get("capabilities", []), f"{where}: capabilities must be a list of strings")
    if capabilities is not None:
        bad = sorted(set(caps) - capabilities)
        if bad:
            raise PolicyError(f"{where}: unknown capabilities {', '.join(bad)}")
    if not policy and not caps:
        raise PolicyError(f"{where}: needs a policy or capabilities")
    return policy, frozenset(caps)


def _coarse(value: object, where: str, choices: tuple[str, ...]) -> str:
    bodies = _bodies(value, where)
    if not bodies:
        return ""
    if len(bodies) > 1:
        raise PolicyError(f"{where}: defined more than once")
    body = bodies[0]
    unknown = sorted(set(body) - {"policy"} - _BOOKKEEPING)
    if unknown:
        raise PolicyError(f"{where}: unknown setting(s) {', '.join(unknown)}")
    policy = body.get("policy")
    if policy not in choices:
        raise PolicyError(f"{where}: policy must be one of {', '.join(choices)}, got {policy!r}")
    return str(policy)
