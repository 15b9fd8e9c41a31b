"""Nomad's volume specification file (HCL) for `volume create|register`, as the API's Volume:
`type = "host"`, id, name, namespace, plugin_id, node_id, node_pool, host_path, capacity_min/max,
`constraint` and `capability` blocks and `parameters`."""

from __future__ import annotations

import re

import click

from app.wire.json import JsonObject, JsonValue

_BOOKKEEPING = frozenset({"__is_block__", "__comments__", "__inline_comments__", "__start_line__", "__end_line__"})
_STRINGS = {
    "id": "ID",
    "name": "Name",
    "namespace": "Namespace",
    "plugin_id": "PluginID",
    "node_id": "NodeID",
    "node_pool": "NodePool",
    "host_path": "HostPath",
}
_CAPACITIES = {"capacity": "CapacityBytes", "capacity_min": "RequestedCapacityMinBytes"}
_CAPACITIES["capacity_max"] = "RequestedCapacityMaxBytes"
_CONSTRAINT_KEYS = {"attribute", "operator", "value", "regexp", "set_contains", "version", "semver", "distinct_hosts"}
_CONSTRAINT_KEYS |= {"distinct_property"}
_CAPABILITY_KEYS = {"access_mode", "attachment_mode"}
# go-humanize's ParseBytes units: SI (1000) and IEC (1024); a bare number is bytes.
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3}
_UNITS |= {"t": 1000**4, "tb": 1000**4, "ki": 1024, "kib": 1024, "mi": 1024**2, "mib": 1024**2}
_UNITS |= {"gi": 1024**3, "gib": 1024**3, "ti": 1024**4, "tib": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


class SpecError(click.ClickException):
    def __init__(self, message: str) -> None:
        super().__init__(f"Error decoding the volume definition: {message}")


def parse_spec(text: str) -> tuple[str, JsonObject]:
    """(type, Volume) of a volume specification."""
    try:
        import hcl2  # only here: the CLI's start-up imports no parser (tests/unit/test_cli_imports.py)

        options = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=True, with_comments=False)
        document = hcl2.loads(text, serialization_options=options)
    except Exception as err:  # python-hcl2 raises lark's exceptions and plain errors for bad input
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise click.ClickException(f"Error parsing the volume specification: {first}") from None
    kind = document.get("type")
    if not isinstance(kind, str) or not kind:
        raise click.ClickException("Volume specification is missing the type")
    volume: JsonObject = {}
    for key, value in document.items():
        if key in _BOOKKEEPING or key == "type":
            continue
        volume.update(_setting(key, value))
    return kind, volume


def _setting(key: str, value: JsonValue) -> JsonObject:
    if key in _STRINGS:
        if not isinstance(value, str):
            raise SpecError(f"{key} must be a string")
        return {_STRINGS[key]: value}
    if key in _CAPACITIES:
        return {_CAPACITIES[key]: parse_bytes(key, value)}
    if key == "parameters":
        return {"Parameters": _parameters(value)}
    if key == "constraint":
        found = [_constraint(block) for block in _blocks(key, value)]
        return {"Constraints": [c for c in found if c is not None]}
    if key == "capability":
        return {"RequestedCapabilities": [_capability(block) for block in _blocks(key, value)]}
    raise SpecError(f"unknown setting {key!r}")


def parse_bytes(key: str, value: JsonValue) -> int:
    """go-humanize's ParseBytes: "10GiB", "20G", "512MB", a bare number of bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    found = _SIZE.match(value) if isinstance(value, str) else None
    unit = found.group(2).lower() if found else ""
    if found is None or unit not in _UNITS:
        raise SpecError(f'invalid {key}: {value!r} is not a size such as "10GiB" or "20G"')
    return int(float(found.group(1)) * _UNITS[unit])


def _blocks(key: str, value: JsonValue) -> list[dict[str, JsonValue]]:
    items = value if isinstance(value, list) else [value]
    blocks = [{k: v for k, v in item.items() if k not in _BOOKKEEPING} for item in items if isinstance(item, dict)]
    if len(blocks) != len(items):
        raise SpecError(f"{key} must be a block")
    return blocks


def _parameters(value: JsonValue) -> dict[str, JsonValue]:
    blocks = _blocks("parameters", value)
    block = blocks[0] if blocks else {}
    return {k: v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v) for k, v in block.items()}


def _constraint(block: dict[str, JsonValue]) -> JsonObject | None:
    """Nomad's parseConstraints: attribute/operator/value, or an operator named by its key."""
    unknown = sorted(set(block) - _CONSTRAINT_KEYS)
    if unknown:
        raise SpecError(f"invalid constraint: unknown key(s) {', '.join(unknown)}")
    out: JsonObject = {
        "LTarget": str(block.get("attribute", "")),
        "RTarget": str(block.get("value", "")),
        "Operand": str(block.get("operator", "") or "="),
    }
    for named in ("version", "semver", "regexp", "set_contains"):
        if named in block:
            out["Operand"], out["RTarget"] = named, str(block[named])
    if "distinct_hosts" in block:
        if str(block["distinct_hosts"]).lower() not in ("true", "false"):
            raise SpecError("invalid constraint: distinct_hosts should be set to true or false")
        if str(block["distinct_hosts"]).lower() == "false":
            return None  # Nomad skips a disabled distinct_hosts
        out["Operand"], out["RTarget"] = "distinct_hosts", "true"
    if "distinct_property" in block:
        out["Operand"], out["LTarget"] = "distinct_property", str(block["distinct_property"])
    return out


def _capability(block: dict[str, JsonValue]) -> JsonObject:
    unknown = sorted(set(block) - _CAPABILITY_KEYS)
    if unknown:
        raise SpecError(f"invalid capability: unknown key(s) {', '.join(unknown)}")
    return {"AccessMode": str(block.get("access_mode", "")), "AttachmentMode": str(block.get("attachment_mode", ""))}
