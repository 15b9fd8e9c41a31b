"""ACL roles (Nomad's ACLRole): named sets of policies that client tokens link. Tokens keep role
IDs; a link to a role that no longer exists is dropped when a token is read or resolved, as
Nomad's state store does, so deleting a role needs no sweep over the tokens."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Text, delete, select
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import AclPolicy, AclRole
from app.values.errors import FieldProblem, InvalidInput, NotFound


@dataclass(frozen=True)
class RoleSpec:
    name: str
    description: str
    policies: tuple[str, ...]


@dataclass(frozen=True)
class RoleLink:
    """A token's link to a role as the request gives it: by ID, by name, or both."""

    id: uuid.UUID | None
    name: str


def upsert_role(session: Session, role_id: uuid.UUID | None, spec: RoleSpec) -> AclRole:
    """Create a role (role_id None: the server picks its ID) or replace the one with role_id.
    Its policies must exist and its name must be free, as Nomad's ACL.UpsertRoles checks."""
    index = next_index(session, ["acl_roles"])
    _check_policies(session, spec.policies)
    taken = session.scalar(select(AclRole).where(AclRole.name == spec.name).with_for_update())
    if taken is not None and taken.id != role_id:
        raise InvalidInput.of("Name", f"ACL role with name {spec.name} already exists")
    if role_id is None:
        role = AclRole(id=uuid.uuid4(), create_index=index)
        session.add(role)
    else:
        found = session.get(AclRole, role_id, with_for_update=True)
        if found is None:
            raise NotFound.of("ID", f"cannot find ACL role {role_id}")
        role = found
    role.name, role.description, role.policies = spec.name, spec.description, list(spec.policies)
    role.modify_index = index
    session.flush()
    return role


def _check_policies(session: Session, names: Sequence[str]) -> None:
    known = set(session.scalars(select(AclPolicy.name).where(AclPolicy.name.in_(names))))
    missing = [n for n in names if n not in known]
    if missing:
        raise InvalidInput([FieldProblem("Policies", f"cannot find policy {n}") for n in missing])


def delete_role(session: Session, role_id: uuid.UUID) -> int:
    index = next_index(session, ["acl_roles"])
    gone = session.execute(delete(AclRole).where(AclRole.id == role_id).returning(AclRole.id))
    if gone.first() is None:
        raise NotFound.of("ID", "ACL role not found")
    return index


def get_role(session: Session, role_id: uuid.UUID) -> AclRole:
    role = session.get(AclRole, role_id)
    if role is None:
        raise NotFound.of("ID", "ACL role not found")
    return role


def get_role_by_name(session: Session, name: str) -> AclRole:
    role = session.scalar(select(AclRole).where(AclRole.name == name))
    if role is None:
        raise NotFound.of("Name", "ACL role not found")
    return role


def list_roles(session: Session, prefix: str = "") -> list[AclRole]:
    """Roles by ID prefix (Nomad's ?prefix= on /v1/acl/roles), in ID order as Nomad's iterator."""
    query = select(AclRole).order_by(AclRole.id)
    if prefix:
        query = query.where(AclRole.id.cast(Text).startswith(prefix.lower(), autoescape=True))
    return list(session.scalars(query))


def roles_by_id(session: Session, ids: Sequence[uuid.UUID]) -> list[AclRole]:
    """The roles among `ids` that still exist, in the order given."""
    if not ids:
        return []
    found = {r.id: r for r in session.scalars(select(AclRole).where(AclRole.id.in_(ids)))}
    return [found[i] for i in ids if i in found]


def link_roles(session: Session, links: Sequence[RoleLink]) -> tuple[uuid.UUID, ...]:
    """The IDs of the roles a token request links, each looked up by ID or else by name; an
    unknown role is refused (Nomad: "cannot find role")."""
    ids: list[uuid.UUID] = []
    problems: list[FieldProblem] = []
    for link in links:
        if link.id is not None:
            role = session.get(AclRole, link.id)
        else:
            role = session.scalar(select(AclRole).where(AclRole.name == link.name))
        if role is None:
            problems.append(FieldProblem("Roles", f"cannot find role {link.id or link.name}"))
        elif role.id not in ids:
            ids.append(role.id)
    if problems:
        raise InvalidInput(problems)
    return tuple(ids)
