"""Reading an auth method's stored configuration (a JSON object checked when it was written):
a string field, or a list of strings, with anything else read as empty."""

from __future__ import annotations

from app.wire.json import JsonObject


def str_field(config: JsonObject, key: str) -> str:
    value = config.get(key)
    return value if isinstance(value, str) else ""


def str_list(config: JsonObject, key: str) -> list[str]:
    value = config.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
