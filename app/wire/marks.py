"""Marks on the fields of app/wire's job TypedDicts (``Annotated[T, mark]``): what Nomad does
with a key beyond its JSON type. app.jobspec.shapes derives from them the zero values of Nomad's
canonical job and the keys a registration accepts; app.jobspec.hcl_schema is checked against
their HCL names. A field without marks is sent at Go's zero value for its type when unset, and
is spelt in a job file as its key in snake_case."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Zero:
    """Nomad sends this value for the key when it is unset (not Go's zero value: a default its
    Canonicalize fills in)."""

    value: object


@dataclass(frozen=True)
class Filled:
    """A struct Nomad always sends: its Canonicalize creates it, so an unset one is rendered
    from its own zero values."""


@dataclass(frozen=True)
class OmitEmpty:
    """Go encodes the key with ``omitempty``: sent only when it has a value."""


@dataclass(frozen=True)
class InputOnly:
    """A key of Nomad's api package that nomad/structs lacks: accepted on registration (and
    folded elsewhere), never sent back."""


@dataclass(frozen=True)
class Hcl:
    """The key's name in a job file, where it is not the key in snake_case."""

    name: str


@dataclass(frozen=True)
class AsSent:
    """A list of structs Nomad's job answer carries as the client wrote them (corral does not
    read them): not rendered with every key."""


@dataclass(frozen=True)
class NotInHcl:
    """A key no job file spells: set by the servers, or a block's label (a group's Name)."""
