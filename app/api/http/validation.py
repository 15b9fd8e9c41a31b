"""Turning pydantic validation errors into field problems with Nomad-style paths."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.values.errors import FieldProblem, InvalidInput

M = TypeVar("M", bound=BaseModel)


def field_path(root: str, loc: tuple[int | str, ...]) -> str:
    path = root
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else part
    return path


def validate(model: type[M], data: Any, root: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise InvalidInput([FieldProblem(field_path(root, tuple(e["loc"])), e["msg"]) for e in err.errors()]) from err
