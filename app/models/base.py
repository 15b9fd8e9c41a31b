"""Declarative base: naming convention and the Python-to-Postgres type map."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, MetaData, Text, func
from sqlalchemy.dialects.postgresql import ARRAY, TIMESTAMP, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        list[str]: ARRAY(Text),
        list[uuid.UUID]: ARRAY(UUID(as_uuid=True)),
        list[int]: ARRAY(BigInteger),
        datetime: TIMESTAMP(timezone=True),
        uuid.UUID: UUID(as_uuid=True),
        str: Text,
        int: BigInteger,
    }


def create_index_column() -> Mapped[int]:
    return mapped_column(comment="State index of the write that created the row.")


def modify_index_column() -> Mapped[int]:
    return mapped_column(comment="State index of the last write to the row (X-Nomad-Index).")


def created_at_column() -> Mapped[datetime]:
    return mapped_column(server_default=func.now(), comment="Wall-clock time the row was created.")


def updated_at_column() -> Mapped[datetime]:
    return mapped_column(server_default=func.now(), comment="Wall-clock time of the last write to the row.")
