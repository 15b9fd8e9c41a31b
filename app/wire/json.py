"""JSON whose shape is not known yet: a request body before validation, a block carried through
untouched. Values are unions of JSON's own types, never an escape hatch, so a reader must narrow before use."""

from __future__ import annotations

JsonScalar = str | int | float | bool | None
JsonValue = JsonScalar | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject = dict[str, JsonValue]
JsonList = list[JsonValue]
