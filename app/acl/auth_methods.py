"""Nomad's ACL auth methods and binding rules as values: checking what a request gives
(ACLAuthMethod.Validate, ACLBindingRule.Validate) and rendering what is stored. Pure: the
store keeps the checked values, the routes speak HTTP."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from app.acl import client_assertion
from app.bexpr import FilterError, compile_filter
from app.jobspec.durations import DurationError, duration_ns
from app.values.errors import FieldProblem, InvalidInput
from app.variables.rules import go_duration
from app.wire.acl import ACLAuthMethodConfig
from app.wire.json import JsonObject, JsonValue

NAME = re.compile(r"^[A-Za-z0-9-]{1,128}$")  # Nomad's ValidACLAuthMethod (and role/policy names)
TYPES = ("JWT", "OIDC")
LOCALITIES = ("local", "global")
BIND_TYPES = ("role", "policy", "management")
DEFAULT_TOKEN_NAME_FORMAT = "${auth_method_type}-${auth_method_name}"
MAX_DESCRIPTION = 256

_STRINGS = ("JWKSURL", "JWKSCACert", "OIDCDiscoveryURL", "OIDCClientID", "OIDCClientSecret")
_LISTS = (
    "JWTValidationPubKeys",
    "OIDCScopes",
    "BoundAudiences",
    "BoundIssuer",
    "AllowedRedirectURIs",
    "DiscoveryCaPem",
    "SigningAlgs",
)
_FLAGS = ("OIDCEnablePKCE", "OIDCDisableUserInfo", "VerboseLogging")
_DURATIONS = ("ExpirationLeeway", "NotBeforeLeeway", "ClockSkewLeeway")
_MAPS = ("ClaimMappings", "ListClaimMappings")


@dataclass(frozen=True)
class MethodSpec:
    name: str
    type: str
    token_locality: str
    token_name_format: str
    max_token_ttl_ns: int
    default: bool
    config: JsonObject  # the checked config, durations in nanoseconds


@dataclass(frozen=True)
class RuleSpec:
    description: str
    auth_method: str
    selector: str
    bind_type: str
    bind_name: str


def method_spec(body: JsonObject, min_ttl_s: float, max_ttl_s: float) -> MethodSpec:
    """Nomad's ACLAuthMethod.Canonicalize then Validate; every problem names its field."""
    problems: list[FieldProblem] = []
    name = body.get("Name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        problems.append(FieldProblem("Name", f"invalid name {name!r}: 1-128 letters, digits and '-'"))
    kind = body.get("Type")
    if kind not in TYPES:
        problems.append(FieldProblem("Type", f"invalid auth method type {kind!r}: JWT or OIDC"))
    locality = body.get("TokenLocality")
    if locality not in LOCALITIES:
        problems.append(FieldProblem("TokenLocality", f"invalid token locality {locality!r}: local or global"))
    name_format = body.get("TokenNameFormat") or DEFAULT_TOKEN_NAME_FORMAT
    if not isinstance(name_format, str):
        problems.append(FieldProblem("TokenNameFormat", "must be a string"))
    ttl_ns = _ttl(body.get("MaxTokenTTL"), min_ttl_s, max_ttl_s, problems)
    default = body.get("Default", False)
    if not isinstance(default, bool):
        problems.append(FieldProblem("Default", "must be a boolean"))
    config = _config(body.get("Config"), kind, problems)
    if problems:
        raise InvalidInput(problems)
    assert isinstance(name, str) and isinstance(kind, str) and isinstance(locality, str)
    assert isinstance(name_format, str) and isinstance(default, bool)
    return MethodSpec(name, kind, locality, name_format, ttl_ns, default, config)


def _ttl(raw: JsonValue, min_s: float, max_s: float, problems: list[FieldProblem]) -> int:
    try:
        ttl_ns = duration_ns(raw if raw is not None else 0)
    except DurationError as err:
        problems.append(FieldProblem("MaxTokenTTL", str(err)))
        return 0
    if not min_s <= ttl_ns / 1e9 <= max_s:
        problems.append(
            FieldProblem(
                "MaxTokenTTL",
                f"invalid MaxTokenTTL value {go_duration(ttl_ns)!r} "
                f"(should be between {go_duration(int(min_s * 1e9))} and {go_duration(int(max_s * 1e9))})",
            )
        )
    return ttl_ns


def _config(raw: JsonValue, kind: JsonValue, problems: list[FieldProblem]) -> JsonObject:
    if not isinstance(raw, dict):
        problems.append(FieldProblem("Config", "is required: the auth method's configuration object"))
        return {}
    config: JsonObject = {}
    for key in _STRINGS:
        value = raw.get(key) or ""
        if not isinstance(value, str):
            problems.append(FieldProblem(f"Config.{key}", "must be a string"))
        config[key] = value
    for key in _LISTS:
        items = raw.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            problems.append(FieldProblem(f"Config.{key}", "must be a list of strings"))
            items = []
        config[key] = items
    for key in _FLAGS:
        flag = raw.get(key) or False
        if not isinstance(flag, bool):
            problems.append(FieldProblem(f"Config.{key}", "must be a boolean"))
        config[key] = flag
    for key in _DURATIONS:
        try:
            config[key] = duration_ns(raw.get(key) or 0)
        except DurationError as err:
            problems.append(FieldProblem(f"Config.{key}", str(err)))
    for key in _MAPS:
        mapping = raw.get(key) or {}
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            problems.append(FieldProblem(f"Config.{key}", "must be a map of claim names to strings"))
            mapping = {}
        config[key] = mapping
    config["OIDCClientAssertion"] = client_assertion.checked(raw.get("OIDCClientAssertion"), config, problems)
    _check_sources(config, kind, problems)
    return config


def with_stored_secrets(body: JsonObject, stored: JsonObject) -> JsonObject:
    """An update's body with the secrets a read served as "redacted" (OIDCClientSecret, the
    assertion's PemKey) given their stored values again: `acl auth-method update` sends back
    what it read, and that must not replace a secret with the word. (Nomad's own update does.)"""
    raw = body.get("Config")
    if not isinstance(raw, dict):
        return body
    config = dict(raw)
    if config.get("OIDCClientSecret") == client_assertion.REDACTED and stored.get("OIDCClientSecret"):
        config["OIDCClientSecret"] = stored["OIDCClientSecret"]
    config["OIDCClientAssertion"] = client_assertion.restore_redacted(
        config.get("OIDCClientAssertion"), stored.get("OIDCClientAssertion")
    )
    return {**body, "Config": config}


def _check_sources(config: JsonObject, kind: JsonValue, problems: list[FieldProblem]) -> None:
    """Where the keys that verify a login come from: a JWT method needs exactly one source, an
    OIDC method a discovery URL and a client ID (Nomad's ACLAuthMethodConfig checks)."""
    for index, pem in enumerate(_pems(config)):
        try:
            serialization.load_pem_public_key(pem.encode())
        except (ValueError, TypeError, UnsupportedAlgorithm) as err:
            problems.append(
                FieldProblem(f"Config.JWTValidationPubKeys[{index}]", f"unable to parse public key for JWT auth: {err}")
            )
    if kind == "JWT":
        sources = [k for k in ("JWTValidationPubKeys", "JWKSURL", "OIDCDiscoveryURL") if config.get(k)]
        if len(sources) != 1:
            problems.append(
                FieldProblem(
                    "Config",
                    "a JWT auth method needs exactly one of JWTValidationPubKeys, JWKSURL or OIDCDiscoveryURL",
                )
            )
    elif kind == "OIDC":
        for key in ("OIDCDiscoveryURL", "OIDCClientID"):
            if not config.get(key):
                problems.append(FieldProblem(f"Config.{key}", "is required for an OIDC auth method"))


def _pems(config: JsonObject) -> list[str]:
    keys = config.get("JWTValidationPubKeys")
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []


def config_json(config: JsonObject) -> ACLAuthMethodConfig:
    """The stored config as Nomad serves it (durations as Go duration strings, secrets redacted as
    Nomad's ACLAuthMethod.Sanitize redacts them)."""

    def text(key: str) -> str:
        value = config.get(key)
        return value if isinstance(value, str) else ""

    def texts(key: str) -> list[str]:
        value = config.get(key)
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    def flag(key: str) -> bool:
        return config.get(key) is True

    def span(key: str) -> str:
        value = config.get(key)
        return go_duration(value if isinstance(value, int) else 0)

    def mapping(key: str) -> dict[str, str]:
        value = config.get(key)
        return {k: v for k, v in value.items() if isinstance(v, str)} if isinstance(value, dict) else {}

    return {
        "JWTValidationPubKeys": texts("JWTValidationPubKeys"),
        "JWKSURL": text("JWKSURL"),
        "JWKSCACert": text("JWKSCACert"),
        "OIDCDiscoveryURL": text("OIDCDiscoveryURL"),
        "OIDCClientID": text("OIDCClientID"),
        "OIDCClientSecret": client_assertion.REDACTED if text("OIDCClientSecret") else "",
        "OIDCClientAssertion": client_assertion.served(config.get("OIDCClientAssertion"), text("OIDCClientSecret")),
        "OIDCEnablePKCE": flag("OIDCEnablePKCE"),
        "OIDCDisableUserInfo": flag("OIDCDisableUserInfo"),
        "OIDCScopes": texts("OIDCScopes"),
        "BoundAudiences": texts("BoundAudiences"),
        "BoundIssuer": texts("BoundIssuer"),
        "AllowedRedirectURIs": texts("AllowedRedirectURIs"),
        "DiscoveryCaPem": texts("DiscoveryCaPem"),
        "SigningAlgs": texts("SigningAlgs"),
        "ExpirationLeeway": span("ExpirationLeeway"),
        "NotBeforeLeeway": span("NotBeforeLeeway"),
        "ClockSkewLeeway": span("ClockSkewLeeway"),
        "ClaimMappings": mapping("ClaimMappings"),
        "ListClaimMappings": mapping("ListClaimMappings"),
        "VerboseLogging": flag("VerboseLogging"),
    }


def rule_spec(body: JsonObject) -> RuleSpec:
    """Nomad's ACLBindingRule.Validate: a known bind type, a bind name unless management, a
    selector that parses, a short description. (That the method exists is the store's check.)"""
    problems: list[FieldProblem] = []
    description = body.get("Description") or ""
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        problems.append(FieldProblem("Description", f"description longer than {MAX_DESCRIPTION}"))
    method = body.get("AuthMethod")
    if not isinstance(method, str) or not method:
        problems.append(FieldProblem("AuthMethod", "auth method name is missing"))
    selector = body.get("Selector") or ""
    if not isinstance(selector, str):
        problems.append(FieldProblem("Selector", "must be a string"))
    elif selector:
        try:
            compile_filter(selector)
        except FilterError as err:
            problems.append(FieldProblem("Selector", f"selector is invalid: {err}"))
    bind_type = body.get("BindType")
    bind_name = body.get("BindName") or ""
    if bind_type not in BIND_TYPES:
        problems.append(FieldProblem("BindType", f"bind type is invalid: {bind_type!r}: role, policy or management"))
    if not isinstance(bind_name, str):
        problems.append(FieldProblem("BindName", "must be a string"))
    elif bind_type in ("role", "policy") and not bind_name:
        problems.append(FieldProblem("BindName", "bind name is missing"))
    if problems:
        raise InvalidInput(problems)
    assert isinstance(description, str) and isinstance(method, str) and isinstance(selector, str)
    assert isinstance(bind_type, str) and isinstance(bind_name, str)
    return RuleSpec(description, method, selector, bind_type, "" if bind_type == "management" else bind_name)
