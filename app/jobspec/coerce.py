"""HCL2's type conversion: where the job model expects a number or a bool, a string that
spells one is converted (``cpu = "500"``, ``unlimited = "true"``), and where it expects a
string, a number or bool becomes its text (``user = 1000``), as Nomad's parser does. JSON
payloads do not go through here: Nomad's API refuses a quoted number too."""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Union

from pydantic import BaseModel

_INTEGER = re.compile(r"[+-]?\d+\Z")


def coerce_scalars(data: Any, model: type[BaseModel]) -> Any:
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key in out and not info.metadata:  # Annotated validators (durations) take strings themselves
            out[key] = _coerce(out[key], info.annotation)
    return out


def _coerce(value: Any, annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _coerce(value, options[0]) if len(options) == 1 else value
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(annotation)
        return [_coerce(element, item) for element in value]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return coerce_scalars(value, annotation)
    if annotation is bool and value in ("true", "false"):
        return value == "true"
    if annotation is int and isinstance(value, str) and _INTEGER.match(value.strip()):
        return int(value.strip())
    if annotation is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if annotation is str and isinstance(value, bool):
        return "true" if value else "false"
    if annotation is str and isinstance(value, int | float):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    return value
