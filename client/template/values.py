"""What Nomad's template functions return, shaped as consul-template's Go types so that
templates written for Nomad read the same fields (.Key, .Value, .Address, .Port, .Tags ...),
and how Go prints and judges values."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from decimal import Decimal


@dataclass(frozen=True)
class VarItem:
    """One item of a variable: prints as its value (consul-template's NomadVarItem)."""

    Key: str
    Value: str

    def __str__(self) -> str:
        return self.Value


class VarItems(dict[str, VarItem]):
    """A variable's items by key: `.name` reads one, `range $k, $v := .` walks them sorted."""

    @classmethod
    def of(cls, items: Mapping[str, str]) -> VarItems:
        return cls({key: VarItem(key, str(value)) for key, value in items.items()})


@dataclass(frozen=True)
class VarMeta:
    """A variable as nomadVarList lists it (consul-template's NomadVarMeta)."""

    Namespace: str
    Path: str
    CreateIndex: int
    ModifyIndex: int
    CreateTime: int
    ModifyTime: int

    def __str__(self) -> str:
        return self.Path


@dataclass(frozen=True)
class Service:
    """One registration, as nomadService returns it (consul-template's NomadService)."""

    ID: str
    Name: str
    Namespace: str
    Datacenter: str
    Address: str
    Port: int
    Tags: tuple[str, ...]
    NodeID: str
    AllocID: str
    JobID: str


@dataclass(frozen=True)
class ServiceSnippet:
    """One service name and its tags, as nomadServices lists them."""

    Name: str
    Tags: tuple[str, ...]


class _Missing:
    """A map key that is not there: prints as Go prints it."""

    def __repr__(self) -> str:
        return "<no value>"


MISSING = _Missing()


def go_str(value: object) -> str:
    """A value as Go's fmt prints it with %v."""
    if value is MISSING:
        return "<no value>"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, (str, int, VarItem, VarMeta)):
        return str(value)
    if isinstance(value, Mapping):
        inner = " ".join(f"{go_str(k)}:{go_str(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
        return f"map[{inner}]"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(go_str(v) for v in value) + "]"
    if is_dataclass(value) and not isinstance(value, type):
        return "{" + " ".join(go_str(getattr(value, f.name)) for f in fields(value)) + "}"
    return str(value)


def _go_float(value: float) -> str:
    """Go's %v for a float64: the shortest digits, in exponent form when the exponent is
    below -4 or at least 6 (strconv's 'g' with the shortest precision)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    number = Decimal(repr(value))
    exponent = number.adjusted()
    if -4 <= exponent < 6:
        return format(number.normalize(), "f")
    sign, digits, _ = number.as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def truth(value: object) -> bool:
    """Go's template truth: false, 0, nil and empty strings, lists and maps are false."""
    if value is None or value is MISSING:
        return False
    if isinstance(value, (bool, int, float, str, list, tuple, dict)):
        return bool(value)
    return True
