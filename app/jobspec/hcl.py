"""Conversion of Nomad HCL2 job files into the API's JSON job object.

The mapping follows Nomad's jobspec2: block and attribute names become the API's
PascalCase keys, repeated blocks become lists, and block labels become the field they
name (a group's label is its Name, a port's its Label). Nothing is validated or
defaulted here; ``normalize_job`` does that. Interpolations such as ``${attr.x}`` and
duration strings are passed through as strings, since only Nomad can evaluate the
former and ``normalize_job`` converts the latter. HCL variables (``variable`` and
``locals`` blocks, ``var.x`` and ``local.x`` references) are refused until supported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

import hcl2

from app.jobspec.errors import JobSpecError, quote

# python-hcl2 keeps quotes and drops block markers by default, which would make blocks
# indistinguishable from object-valued attributes; ask for the opposite.
_OPTIONS = hcl2.SerializationOptions(
    strip_string_quotes=True,
    explicit_blocks=True,
    with_comments=False,
    preserve_heredocs=False,
)
_BLOCK_MARKER = "__is_block__"
# Bookkeeping keys python-hcl2 may add to a block body; they are not attributes.
_METADATA_KEYS = frozenset({_BLOCK_MARKER, "__comments__", "__inline_comments__", "__start_line__", "__end_line__"})
_ACRONYMS = {
    "id": "ID",
    "cpu": "CPU",
    "mb": "MB",
    "mbits": "MBits",
    "dns": "DNS",
    "tls": "TLS",
    "ttl": "TTL",
    "ip": "IP",
    "cni": "CNI",
    "numa": "NUMA",
    "iops": "IOPS",
    "url": "URL",
    "grpc": "GRPC",
}

Body = Mapping[str, Any]
Converter = Callable[[Body, str], dict[str, Any] | None]
# Structured blocks always convert to an object; only a converter may drop a block.
FieldsConverter = Callable[[Body, str], dict[str, Any]]
Labeled = tuple[list[str], Body]


@dataclass(frozen=True)
class _Block:
    """How one HCL block type maps into its parent's API object."""

    key: str
    convert: Converter
    many: bool = False  # a list even when the block appears once
    label: str | None = None  # API field that receives the block's single label
    keyed: bool = False  # an object keyed by label instead of a list


def parse_hcl(text: str) -> dict[str, Any]:
    """Convert a Nomad HCL2 job file to the API JSON job object (not yet validated;
    callers pass the result to normalize_job). Raises JobSpecError(field="Job", ...) on
    HCL syntax errors or when there is not exactly one job block."""
    try:
        document = hcl2.loads(text, serialization_options=_OPTIONS)
    # python-hcl2 reports syntax errors with lark's exception types and some malformed
    # input with plain runtime errors; every one of them means "this is not valid HCL".
    except Exception as exc:
        raise JobSpecError.single("Job", f"invalid HCL: {_describe(exc)}") from None
    jobs = _block_items(document.get("job"))
    if len(jobs) != 1:
        raise JobSpecError.single("Job", f"must contain exactly one job block, found {len(jobs)}")
    _refuse_variables(document)
    labels, body = jobs[0]
    if len(labels) != 1:
        raise JobSpecError.single("Job", f"job block must have exactly one label (the job ID), got {len(labels)}")
    return {"ID": labels[0], "Name": labels[0], **_JOB(body, "Job")}


_UNSUPPORTED_VARIABLES = "HCL variables are not supported yet"
# A ${...} interpolation (not the $${...} escape) that mentions var.x or local.x.
_VARIABLE_REFERENCE = re.compile(r"(?<!\$)\$\{[^}]*?(?<![\w.])(?P<ref>(?:var|local)\.[A-Za-z_][\w-]*)")


def _refuse_variables(document: Mapping[str, Any]) -> None:
    """Until variables are evaluated, refuse them rather than pass "${var.x}" through as text."""
    for labels, _ in _block_items(document.get("variable")):
        name = f"var.{labels[0]}" if labels else "Job"
        raise JobSpecError.single(name, f"{_UNSUPPORTED_VARIABLES} (variable block)")
    if "variables" in document:
        raise JobSpecError.single("Job", f"{_UNSUPPORTED_VARIABLES} (variables block)")
    for _, body in _block_items(document.get("locals")):
        names = [name for name, _ in _attributes(body)]
        raise JobSpecError.single(f"local.{names[0]}" if names else "Job", f"{_UNSUPPORTED_VARIABLES} (locals block)")
    reference = _find_reference(document)
    if reference is not None:
        raise JobSpecError.single(reference, f"{_UNSUPPORTED_VARIABLES} (referenced as ${{{reference}}})")


def _find_reference(value: object) -> str | None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            match = _VARIABLE_REFERENCE.search(item)
            if match:
                return match["ref"]
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _describe(exc: Exception) -> str:
    """A one-line account of a parse failure, without lark's list of expected tokens."""
    token = getattr(exc, "token", None)
    if token is not None and getattr(token, "type", None) == "$END":
        summary = "unexpected end of file"
    elif token is not None:
        summary = f"unexpected {quote(str(token).strip())}"
    else:
        text = str(exc).strip()
        summary = text.splitlines()[0] if text else type(exc).__name__
    line = getattr(exc, "line", None)
    column = getattr(exc, "column", None)
    if isinstance(line, int) and isinstance(column, int) and line > 0:
        summary = re.sub(r"\s*at line \d+, column \d+\.?$", "", summary)
        return f"{summary} at line {line}, column {column}"
    return summary


def _pascal(name: str) -> str:
    return "".join(_ACRONYMS.get(part, part[:1].upper() + part[1:]) for part in name.split("_"))


def _is_block_item(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get(_BLOCK_MARKER) is True:
        return True
    # A labelled block is nested one object per label around the marked body.
    return len(item) == 1 and _is_block_item(next(iter(item.values())))


def _is_block_list(value: object) -> TypeGuard[list[dict[str, Any]]]:
    return isinstance(value, list) and bool(value) and all(_is_block_item(i) for i in value)


def _block_items(value: object) -> list[Labeled]:
    """Split each block into its labels and body; an object attribute counts as one body."""
    if isinstance(value, dict):
        return [([], value)]
    if not _is_block_list(value):
        return []
    items: list[Labeled] = []
    for item in value:
        labels: list[str] = []
        node: Body = item
        while node.get(_BLOCK_MARKER) is not True:
            label, node = next(iter(node.items()))
            labels.append(label)
        items.append((labels, node))
    return items


def _attributes(body: Body) -> list[tuple[str, Any]]:
    return [(name, value) for name, value in body.items() if name not in _METADATA_KEYS]


def _fields(renames: Mapping[str, str | _Block]) -> FieldsConverter:
    """A converter for a structured block: renamed attributes, nested blocks by table."""

    def convert(body: Body, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in _attributes(body):
            rule = renames.get(name)
            is_body = isinstance(value, dict) or _is_block_list(value)
            if isinstance(rule, _Block) and is_body:
                _add_block(out, rule, name, value, path)
            elif rule is None and _is_block_list(value):
                _add_block(out, _unknown_block(name, value), name, value, path)
            elif isinstance(rule, _Block):
                # Not a block at all; pass it on for normalize_job to reject by its path.
                out[rule.key] = value
            else:
                out[rule or _pascal(name)] = value
        return out

    return convert


def _unknown_block(name: str, value: object) -> _Block:
    # Without a schema, a block given once is taken as an object and a repeated one as a
    # list, and a label, if any, as the item's Name.
    return _Block(_pascal(name), _fields({}), many=len(_block_items(value)) > 1, label="Name")


def _add_block(out: dict[str, Any], block: _Block, name: str, value: object, path: str) -> None:
    items = _block_items(value)
    converted: list[tuple[str | None, dict[str, Any]]] = []
    for index, (labels, body) in enumerate(items):
        item_path = f"{path}.{block.key}[{index}]" if block.many else f"{path}.{block.key}"
        label = _single_label(block, name, labels, item_path)
        result = block.convert(body, item_path)
        if result is None:
            continue
        if label is not None and block.label is not None:
            result = {block.label: label, **result}
        converted.append((label, result))
    if block.keyed:
        out.setdefault(block.key, {}).update({label: result for label, result in converted})
    elif converted and (block.many or len(converted) > 1):
        out.setdefault(block.key, []).extend(result for _, result in converted)
    elif converted:
        out[block.key] = converted[0][1]


def _single_label(block: _Block, name: str, labels: list[str], path: str) -> str | None:
    if block.label is None and labels:
        raise JobSpecError.single(path, f"{name} block does not take a label")
    if block.label is not None and len(labels) > 1:
        raise JobSpecError.single(path, f"{name} block takes one label, got {len(labels)}")
    if block.keyed and not labels:
        raise JobSpecError.single(path, f"{name} block needs a label")
    return labels[0] if labels else None


def _verbatim(body: Body, path: str) -> dict[str, Any]:
    """Driver config and the like: keys are the driver's own, so nothing is renamed.

    Without the driver's schema a nested block cannot be told apart from a repeatable
    one, so nested blocks always become lists, which Nomad's HCL-JSON decoding accepts
    for both.
    """
    out: dict[str, Any] = {}
    for name, value in _attributes(body):
        if _is_block_list(value):
            out[name] = [_nest(labels, _verbatim(inner, path)) for labels, inner in _block_items(value)]
        else:
            out[name] = value
    return out


def _nest(labels: list[str], body: dict[str, Any]) -> dict[str, Any]:
    for label in reversed(labels):
        body = {label: body}
    return body


def _strings(body: Body, path: str) -> dict[str, Any]:
    """Meta and env maps; like Nomad, scalars are decoded as strings (``3`` -> ``"3"``)."""
    out: dict[str, Any] = {}
    for name, value in _attributes(body):
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, int | float):
            out[name] = str(value)
        else:
            out[name] = value
    return out


_OPERAND_SHORTHANDS = (
    "regexp",
    "version",
    "semver",
    "set_contains",
    "set_contains_any",
    "set_contains_all",
)
_CONSTRAINT_RENAMES = {"attribute": "LTarget", "value": "RTarget", "operator": "Operand"}


def _constraint(body: Body, path: str) -> dict[str, Any] | None:
    """Constraints and affinities, including shorthands like ``distinct_hosts = true``."""
    out: dict[str, Any] = {}
    shorthands: list[tuple[str, Any]] = []
    for name, value in _attributes(body):
        if name in _OPERAND_SHORTHANDS or name in ("distinct_hosts", "distinct_property"):
            shorthands.append((name, value))
        else:
            out[_CONSTRAINT_RENAMES.get(name) or _pascal(name)] = value
    for name, value in shorthands:
        out["Operand"] = name
        if name == "distinct_hosts":
            # "distinct_hosts = false" asks for nothing, so there is no constraint at all.
            if value is not True and value != "true":
                return None
        elif name == "distinct_property":
            out["LTarget"] = value
        else:
            out["RTarget"] = value
    out.setdefault("Operand", "=")
    return out


_PORT = _fields({"static": "Value"})


def _network(body: Body, path: str) -> dict[str, Any]:
    """Ports with a static number are reserved; the rest are assigned dynamically."""
    out = _fields({"dns": _Block("DNS", _fields({})), "cni": _Block("CNI", _fields({}))})(
        {name: value for name, value in body.items() if name != "port"}, path
    )
    reserved: list[dict[str, Any]] = []
    dynamic: list[dict[str, Any]] = []
    for labels, port_body in _block_items(body.get("port")):
        if len(labels) != 1:
            raise JobSpecError.single(path, f"port block takes one label, got {len(labels)}")
        port = {"Label": labels[0], **_PORT(port_body, path)}
        (reserved if "Value" in port else dynamic).append(port)
    if reserved:
        out["ReservedPorts"] = reserved
    if dynamic:
        out["DynamicPorts"] = dynamic
    return out


def _many(key: str, convert: Converter, label: str | None = None) -> _Block:
    return _Block(key, convert, many=True, label=label)


def _one(key: str, convert: Converter | None = None) -> _Block:
    return _Block(key, convert or _fields({}))


_CONSTRAINTS = _many("Constraints", _constraint)
_AFFINITIES = _many("Affinities", _constraint)
_SPREADS = _many("Spreads", _fields({"target": _many("SpreadTarget", _fields({}), "Value")}))
_META = _one("Meta", _strings)
_SERVICES = _many(
    "Services",
    _fields({"port": "PortLabel", "check": _many("Checks", _fields({"port": "PortLabel"}))}),
)

_TASK = _fields(
    {
        "config": _one("Config", _verbatim),
        "env": _one("Env", _strings),
        "meta": _META,
        "constraint": _CONSTRAINTS,
        "affinity": _AFFINITIES,
        "resources": _one(
            "Resources",
            _fields(
                {
                    "cpu": "CPU",
                    "memory": "MemoryMB",
                    "memory_max": "MemoryMaxMB",
                    "device": _many("Devices", _fields({}), "Name"),
                }
            ),
        ),
        "restart": _one("RestartPolicy"),
        "service": _SERVICES,
        "template": _many(
            "Templates",
            _fields(
                {
                    "data": "EmbeddedTmpl",
                    "destination": "DestPath",
                    "source": "SourcePath",
                    "env": "Envvars",
                    "left_delimiter": "LeftDelim",
                    "right_delimiter": "RightDelim",
                }
            ),
        ),
        "artifact": _many(
            "Artifacts",
            _fields(
                {
                    "source": "GetterSource",
                    "destination": "RelativeDest",
                    "mode": "GetterMode",
                    "options": _one("GetterOptions", _strings),
                    "headers": _one("GetterHeaders", _strings),
                }
            ),
        ),
        "logs": _one("LogConfig", _fields({"max_file_size": "MaxFileSizeMB"})),
        "volume_mount": _many("VolumeMounts", _fields({})),
    }
)

_GROUP = _fields(
    {
        "task": _many("Tasks", _TASK, "Name"),
        "constraint": _CONSTRAINTS,
        "affinity": _AFFINITIES,
        "spread": _SPREADS,
        "network": _many("Networks", _network),
        "restart": _one("RestartPolicy"),
        "reschedule": _one("ReschedulePolicy"),
        "ephemeral_disk": _one("EphemeralDisk", _fields({"size": "SizeMB"})),
        "update": _one("Update"),
        "migrate": _one("Migrate"),
        "disconnect": _one("Disconnect"),
        "scaling": _one("Scaling"),
        "meta": _META,
        "service": _SERVICES,
        "volume": _Block("Volumes", _fields({}), label="Name", keyed=True),
    }
)

_JOB = _fields(
    {
        "group": _many("TaskGroups", _GROUP, "Name"),
        "constraint": _CONSTRAINTS,
        "affinity": _AFFINITIES,
        "spread": _SPREADS,
        "update": _one("Update"),
        "reschedule": _one("Reschedule"),
        "migrate": _one("Migrate"),
        "periodic": _one("Periodic", _fields({"cron": "Spec", "crons": "Specs"})),
        "parameterized": _one("ParameterizedJob"),
        "meta": _META,
    }
)
