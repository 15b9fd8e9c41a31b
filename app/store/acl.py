"""ACL tokens, policies and the bootstrap record. Secrets are hashed before they are stored or
looked up; a token's secret leaves this module only in the result of its creation."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Text, cast, delete, func, select, true
from sqlalchemy.dialects.postgresql import ARRAY, aggregate_order_by, array
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.db.object_locks import ObjectKind, lock_object
from app.db.state_index import next_index
from app.models import AclBootstrap, AclPolicy, AclRole, AclToken
from app.values.errors import Conflict, InvalidInput, NotFound
from app.values.ids import secret_hash


@dataclass(frozen=True)
class TokenSpec:
    name: str
    type: str
    policies: tuple[str, ...]
    global_: bool
    expiration_time: datetime | None
    expiration_ttl_ns: int
    roles: tuple[uuid.UUID, ...] = ()  # IDs of linked ACL roles (client tokens)


@dataclass(frozen=True)
class Resolved:
    token: AclToken
    rules: list[str]  # the rules of each of its policies that exists, its roles' included
    policies: tuple[str, ...]  # its effective policy names: its own and its roles' (Nomad's)


def bootstrap(session: Session, reset_index: int, secret: str | None, now: datetime) -> tuple[AclToken, str]:
    """The first management token. Once done, only a request carrying the recorded bootstrap
    index as its reset index may bootstrap again (Nomad's reset procedure)."""
    index = next_index(session, ["acl_tokens"])
    lock_object(session, ObjectKind.ACL_BOOTSTRAP, "")  # the first bootstrap has no row to lock
    done = session.get(AclBootstrap, 1, with_for_update=True)
    if done is not None and reset_index != done.bootstrap_index:
        raise InvalidInput.of("", f"ACL bootstrap already done (reset index: {done.bootstrap_index})")
    session.execute(
        pg_insert(AclBootstrap)
        .values(id=1, bootstrap_index=index)
        .on_conflict_do_update(index_elements=["id"], set_={"bootstrap_index": index})
    )
    spec = TokenSpec("Bootstrap Token", "management", (), True, None, 0)
    return _insert_token(session, spec, index, now, secret)


def create_token(session: Session, spec: TokenSpec, now: datetime) -> tuple[AclToken, str]:
    index = next_index(session, ["acl_tokens"])
    return _insert_token(session, spec, index, now, None)


def _insert_token(
    session: Session, spec: TokenSpec, index: int, now: datetime, secret: str | None
) -> tuple[AclToken, str]:
    secret = secret or str(uuid.uuid4())
    if session.scalar(select(AclToken.accessor_id).where(AclToken.secret_hash == secret_hash(secret))) is not None:
        raise Conflict.of("BootstrapSecret", "is already the secret of a token")
    token = AclToken(
        accessor_id=uuid.uuid4(),
        secret_hash=secret_hash(secret),
        name=spec.name,
        type=spec.type,
        policies=list(spec.policies),
        roles=list(spec.roles),
        global_=spec.global_,
        create_time=now,
        expiration_time=spec.expiration_time,
        expiration_ttl_ns=spec.expiration_ttl_ns,
        create_index=index,
        modify_index=index,
    )
    session.add(token)
    session.flush()
    return token, secret


def update_token(
    session: Session,
    accessor: uuid.UUID,
    name: str,
    type_: str,
    policies: Sequence[str],
    roles: Sequence[uuid.UUID] = (),
) -> AclToken:
    index = next_index(session, ["acl_tokens"])
    token = session.get(AclToken, accessor, with_for_update=True)
    if token is None:
        raise NotFound.of("AccessorID", f"token {accessor} not found")
    token.name, token.type, token.policies, token.roles = name, type_, list(policies), list(roles)
    token.modify_index = index
    session.flush()
    return token


def delete_token(session: Session, accessor: uuid.UUID) -> int:
    index = next_index(session, ["acl_tokens"])
    gone = session.execute(delete(AclToken).where(AclToken.accessor_id == accessor).returning(AclToken.accessor_id))
    if gone.first() is None:
        raise NotFound.of("AccessorID", f"token {accessor} not found")
    return index


def get_token(session: Session, accessor: uuid.UUID) -> AclToken:
    token = session.get(AclToken, accessor)
    if token is None:
        raise NotFound.of("AccessorID", f"token {accessor} not found")
    return token


def list_tokens(session: Session, prefix: str = "") -> list[AclToken]:
    query = select(AclToken).order_by(AclToken.create_index, AclToken.accessor_id)
    if prefix:
        query = query.where(AclToken.accessor_id.cast(Text).startswith(prefix.lower(), autoescape=True))
    return list(session.scalars(query))


def resolve(session: Session, secret: str) -> Resolved | None:
    """The token with this secret, its effective policy names (its own and those of the roles
    it links that still exist) and their rules (one statement: it runs on every request when
    ACLs are on); None for an unknown secret. Expiry is the caller's decision (it owns the clock)."""
    role_policy = func.unnest(AclRole.policies).table_valued("name").render_derived()
    from_roles = (
        select(func.array_agg(role_policy.c.name))
        .select_from(AclRole)
        .join(role_policy, true())
        .where(AclRole.id == func.any(AclToken.roles))
        .scalar_subquery()
    )
    names = AclToken.policies.op("||")(func.coalesce(from_roles, cast(array([], type_=Text), ARRAY(Text))))
    rules = (
        select(func.array_agg(aggregate_order_by(AclPolicy.rules, AclPolicy.name)))
        .where(AclPolicy.name == func.any(names))
        .scalar_subquery()
    )
    row = session.execute(select(AclToken, rules, names).where(AclToken.secret_hash == secret_hash(secret))).first()
    if row is None:
        return None
    return Resolved(row[0], list(row[1] or []), tuple(dict.fromkeys(row[2] or [])))


def anonymous_rules(session: Session) -> list[str]:
    return list(session.scalars(select(AclPolicy.rules).where(AclPolicy.name == "anonymous")))


def upsert_policy(session: Session, name: str, description: str, rules: str) -> int:
    index = next_index(session, ["acl_policies"])
    session.execute(
        pg_insert(AclPolicy)
        .values(name=name, description=description, rules=rules, create_index=index, modify_index=index)
        .on_conflict_do_update(
            index_elements=["name"], set_={"description": description, "rules": rules, "modify_index": index}
        )
    )
    return index


def delete_policy(session: Session, name: str) -> int:
    index = next_index(session, ["acl_policies"])
    gone = session.execute(delete(AclPolicy).where(AclPolicy.name == name).returning(AclPolicy.name))
    if gone.first() is None:
        raise NotFound.of("Name", f"ACL policy {name!r} not found")
    return index


def get_policy(session: Session, name: str) -> AclPolicy:
    policy = session.get(AclPolicy, name)
    if policy is None:
        raise NotFound.of("Name", f"ACL policy {name!r} not found")
    return policy


def list_policies(session: Session, prefix: str = "") -> list[AclPolicy]:
    query = select(AclPolicy).order_by(AclPolicy.name)
    if prefix:
        query = query.where(AclPolicy.name.startswith(prefix, autoescape=True))
    return list(session.scalars(query))
