"""ACL auth methods and binding rules (Nomad's ACLAuthMethod, ACLBindingRule), the
bindings a verified login gets from the rules of its method (Nomad's auth.Binder), and the
OIDC logins under way between auth-url and complete-auth."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Text, delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.acl.auth_methods import NAME, MethodSpec, RuleSpec
from app.acl.login import Claims, LoginError, interpolate, selector_matches, variables
from app.db.state_index import next_index
from app.models import AclAuthMethod, AclBindingRule, AclOidcRequest, AclPolicy, AclRole
from app.values.errors import CorralError, InvalidInput, NotFound

MAX_OIDC_REQUESTS = 1000  # Nomad's OIDC request cache refuses more logins under way than this


class TooManyLogins(CorralError):
    status = 429


@dataclass(frozen=True)
class Bindings:
    management: bool
    roles: tuple[uuid.UUID, ...]
    policies: tuple[str, ...]

    def none(self) -> bool:
        return not (self.management or self.roles or self.policies)


def upsert_method(session: Session, spec: MethodSpec, now: datetime) -> AclAuthMethod:
    """Create or replace the method named spec.name. Only one method of a type may be the
    default (Nomad: "default method for type ... already exists")."""
    index = next_index(session, ["acl_auth_methods"])
    if spec.default:
        other = session.scalar(
            select(AclAuthMethod.name).where(
                AclAuthMethod.type == spec.type, AclAuthMethod.is_default, AclAuthMethod.name != spec.name
            )
        )
        if other is not None:
            raise InvalidInput.of("Default", f"default method for type {spec.type} already exists: {other}")
    method = session.get(AclAuthMethod, spec.name, with_for_update=True)
    if method is None:
        method = AclAuthMethod(name=spec.name, create_time=now, create_index=index)
        session.add(method)
    method.type, method.token_locality = spec.type, spec.token_locality
    method.token_name_format, method.max_token_ttl_ns = spec.token_name_format, spec.max_token_ttl_ns
    method.is_default, method.config = spec.default, spec.config
    method.modify_time, method.modify_index = now, index
    session.flush()
    return method


def delete_method(session: Session, name: str) -> int:
    """Delete a method and, by the foreign key's cascade, its binding rules."""
    index = next_index(session, ["acl_auth_methods", "acl_binding_rules"])
    gone = session.execute(delete(AclAuthMethod).where(AclAuthMethod.name == name).returning(AclAuthMethod.name))
    if gone.first() is None:
        raise NotFound.of("Name", f"ACL auth method {name} not found")
    return index


def get_method(session: Session, name: str) -> AclAuthMethod:
    method = session.get(AclAuthMethod, name)
    if method is None:
        raise NotFound.of("Name", "ACL auth method not found")
    return method


def list_methods(session: Session) -> list[AclAuthMethod]:
    return list(session.scalars(select(AclAuthMethod).order_by(AclAuthMethod.name)))


def upsert_rule(session: Session, rule_id: uuid.UUID | None, spec: RuleSpec, now: datetime) -> AclBindingRule:
    """Create a rule (rule_id None: the server picks its ID) or replace the one with rule_id;
    its auth method must exist (Nomad's ACL.UpsertBindingRules)."""
    index = next_index(session, ["acl_binding_rules"])
    if session.get(AclAuthMethod, spec.auth_method) is None:
        raise InvalidInput.of("AuthMethod", f"ACL auth method {spec.auth_method} not found")
    if rule_id is None:
        rule = AclBindingRule(id=uuid.uuid4(), create_time=now, create_index=index)
        session.add(rule)
    else:
        found = session.get(AclBindingRule, rule_id, with_for_update=True)
        if found is None:
            raise NotFound.of("ID", f"cannot find binding rule {rule_id}")
        rule = found
    rule.description, rule.auth_method, rule.selector = spec.description, spec.auth_method, spec.selector
    rule.bind_type, rule.bind_name = spec.bind_type, spec.bind_name
    rule.modify_time, rule.modify_index = now, index
    session.flush()
    return rule


def delete_rule(session: Session, rule_id: uuid.UUID) -> int:
    index = next_index(session, ["acl_binding_rules"])
    gone = session.execute(delete(AclBindingRule).where(AclBindingRule.id == rule_id).returning(AclBindingRule.id))
    if gone.first() is None:
        raise NotFound.of("ID", "ACL binding rule not found")
    return index


def get_rule(session: Session, rule_id: uuid.UUID) -> AclBindingRule:
    rule = session.get(AclBindingRule, rule_id)
    if rule is None:
        raise NotFound.of("ID", "ACL binding rule not found")
    return rule


def list_rules(session: Session, prefix: str = "") -> list[AclBindingRule]:
    """Rules by ID prefix, in ID order (Nomad's iterator over its ID index)."""
    query = select(AclBindingRule).order_by(AclBindingRule.id)
    if prefix:
        query = query.where(AclBindingRule.id.cast(Text).startswith(prefix.lower(), autoescape=True))
    return list(session.scalars(query))


def bind(session: Session, method: AclAuthMethod, claims: Claims) -> Bindings:
    """Nomad's Binder.Bind: the method's rules whose selectors match the claims, their bind
    names interpolated (lowercased values) and looked up; a name that is not a role or policy
    that exists is skipped, a management rule wins outright."""
    rules = session.scalars(
        select(AclBindingRule).where(AclBindingRule.auth_method == method.name).order_by(AclBindingRule.create_index)
    )
    roles: list[uuid.UUID] = []
    policies: list[str] = []
    for rule in rules:
        if not selector_matches(rule.selector, claims):
            continue
        if rule.bind_type == "management":
            return Bindings(True, (), ())
        name = _bind_name(rule, claims)
        if rule.bind_type == "role":
            role_id = session.scalar(select(AclRole.id).where(AclRole.name == name))
            if role_id is not None and role_id not in roles:
                roles.append(role_id)
        elif session.get(AclPolicy, name) is not None and name not in policies:
            policies.append(name)
    return Bindings(False, tuple(roles), tuple(policies))


def _bind_name(rule: AclBindingRule, claims: Claims) -> str:
    try:
        name = interpolate(rule.bind_name, variables(claims), lowercase=True)
    except LoginError as err:
        problem = f"cannot compute {rule.bind_type!r} bind name for bind target: {err}"
        raise InvalidInput.of("BindName", problem) from None
    if not NAME.fullmatch(name):
        raise InvalidInput.of("BindName", f"computed {rule.bind_type!r} bind name for bind target is invalid: {name!r}")
    return name


@dataclass(frozen=True)
class OidcRequest:
    """An OIDC login started by auth-url (Nomad's cached cap/oidc request)."""

    client_nonce: str
    auth_method: str
    state: str
    redirect_uri: str
    code_verifier: str | None


def start_oidc_request(session: Session, wanted: OidcRequest, now: datetime, lifetime: timedelta) -> OidcRequest:
    """The login for `wanted.client_nonce`: a new one, or the one already started with that
    nonce (Nomad's LoadOrAdd: asking twice gives the same state). Expired logins are swept."""
    session.execute(delete(AclOidcRequest).where(AclOidcRequest.expires_at <= now))
    pending = session.scalar(select(func.count()).select_from(AclOidcRequest)) or 0
    if pending >= MAX_OIDC_REQUESTS and session.get(AclOidcRequest, wanted.client_nonce) is None:
        raise TooManyLogins.of("ClientNonce", f"too many auth requests: {pending} OIDC logins are under way")
    session.execute(
        insert(AclOidcRequest)
        .values(
            client_nonce=wanted.client_nonce,
            auth_method=wanted.auth_method,
            state=wanted.state,
            redirect_uri=wanted.redirect_uri,
            code_verifier=wanted.code_verifier,
            expires_at=now + lifetime,
        )
        .on_conflict_do_nothing()
    )
    row = session.get_one(AclOidcRequest, wanted.client_nonce)
    if (row.auth_method, row.redirect_uri) != (wanted.auth_method, wanted.redirect_uri):
        raise InvalidInput.of("ClientNonce", "nonce reuse detected: another login already uses this client nonce")
    return OidcRequest(row.client_nonce, row.auth_method, row.state, row.redirect_uri, row.code_verifier)


def take_oidc_request(session: Session, client_nonce: str, now: datetime) -> OidcRequest:
    """The login started with `client_nonce`, used up (Nomad's LoadAndDelete): a code is
    exchanged once, whatever the outcome."""
    row = session.execute(
        delete(AclOidcRequest).where(AclOidcRequest.client_nonce == client_nonce).returning(AclOidcRequest)
    ).scalar_one_or_none()
    if row is None or row.expires_at <= now:
        raise InvalidInput.of("ClientNonce", "no OIDC request found for client nonce (unknown, used or expired)")
    return OidcRequest(row.client_nonce, row.auth_method, row.state, row.redirect_uri, row.code_verifier)
