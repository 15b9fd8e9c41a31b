"""Error types shared by every part of job specification handling."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class FieldError:
    """One problem with one field; ``field`` is a path rooted at ``Job``."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class JobSpecError(Exception):
    """A job specification was rejected; ``errors`` lists every problem found."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors: list[FieldError] = list(errors)
        if not self.errors:
            raise ValueError("JobSpecError needs at least one FieldError")
        super().__init__("; ".join(str(error) for error in self.errors))

    @classmethod
    def single(cls, field: str, message: str) -> JobSpecError:
        return cls([FieldError(field, message)])


def quote(text: str) -> str:
    """Quote a client-supplied string so empty or odd values stay visible in messages."""
    return json.dumps(text, ensure_ascii=False)


def json_type(value: object) -> str:
    """Name ``value``'s type the way a JSON client would think of it."""
    # bool first: it is a subclass of int, and clients must be told they sent a boolean.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    return type(value).__name__


def join_path(root: str, location: Sequence[str | int]) -> str:
    """Extend ``root`` with list indexes as ``[i]`` and object keys as ``.Key``."""
    path = root
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _IDENTIFIER.match(part):
            path += f".{part}"
        else:
            # Map keys such as Meta entries may hold dots or spaces; quoting keeps the path
            # unambiguous.
            path += f"[{quote(part)}]"
    return path


def is_within(path: str, ancestor: str) -> bool:
    """True when ``path`` is ``ancestor`` itself or lies underneath it."""
    if not path.startswith(ancestor):
        return False
    rest = path[len(ancestor) :]
    return rest == "" or rest[0] in ".["
