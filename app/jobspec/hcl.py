"""Conversion of Nomad HCL2 job files into the API's JSON job object.

The mapping follows Nomad's jobspec2: block and attribute names become the API's
PascalCase keys, repeated blocks become lists, and block labels become the field they
name (a group's label is its Name, a port's its Label). Nothing is validated or
defaulted here; ``normalize_job`` does that. Expressions, ``variable`` and ``locals``
blocks and functions are evaluated by ``hcl_eval``; interpolations only the client can
fill in (``${attr.x}``) and duration strings pass through as strings. Unknown arguments
and blocks are errors at their ``file:line:col`` (``hcl_schema``); quoted numbers and
booleans are converted where the job model expects them (``coerce``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from lark import Token, Tree

from app.jobspec import model
from app.jobspec.coerce import coerce_scalars
from app.jobspec.errors import FieldError, JobSpecError, quote
from app.jobspec.hcl_eval import Block, Evaluator, HCLError, Pos, Scope, name_of, parse_tree, position, subtrees
from app.jobspec.hcl_eval import Body as HCLBody
from app.jobspec.hcl_functions import FunctionError, to_text, tobool, tonumber
from app.jobspec.hcl_schema import OPAQUE, SCHEMAS
from app.wire.json import JsonList, JsonObject

_BLOCK_MARKER = "__is_block__"
# Keys that are bookkeeping in a block body (_to_dict marks blocks), not attributes.
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
Converter = Callable[[Body, str], JsonObject | None]
# Structured blocks always convert to an object; only a converter may drop a block.
FieldsConverter = Callable[[Body, str], JsonObject]
Labeled = tuple[list[str], Body]


@dataclass(frozen=True)
class _Block:
    """How one HCL block type maps into its parent's API object."""

    key: str
    convert: Converter
    many: bool = False  # a list even when the block appears once
    label: str | None = None  # API field that receives the block's single label
    keyed: bool = False  # an object keyed by label instead of a list


def parse_hcl(
    text: str | bytes,
    *,
    filename: str = "job.hcl",
    variables: Mapping[str, str] | None = None,
    var_files: Sequence[tuple[str, str]] = (),
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> JsonObject:
    """Convert a Nomad HCL2 job file to the API JSON job object (not yet validated;
    callers pass the result to normalize_job).

    ``variables`` are ``-var`` values, ``var_files`` (name, text) pairs of ``-var-file``
    contents, ``environ`` the environment ``NOMAD_VAR_*`` values come from, and
    ``base_dir`` the directory ``file()`` reads from (``None`` disables ``file()``).
    Raises JobSpecError whose fields are ``file:line:col`` positions for problems in the
    file itself."""
    source = _decode(text, filename)
    try:
        tree = parse_tree(source)
        scope = Scope(base_dir=base_dir)
        evaluator = Evaluator(source, scope)
        root = subtrees(tree)[0]
        _check_root(root)
        scope.variables = _variables(root, evaluator, variables or {}, var_files, environ or {}, filename)
        scope.locals = _locals(root, evaluator)
        jobs = [
            evaluator.block(child) for child in subtrees(root) if child.data == "block" and _block_type(child) == "job"
        ]
    except HCLError as exc:
        raise JobSpecError.single(_where(filename, exc.pos), exc.message) from None
    if len(jobs) != 1:
        raise JobSpecError.single("Job", f"must contain exactly one job block, found {len(jobs)}")
    job = jobs[0]
    if len(job.labels) != 1:
        raise JobSpecError.single(
            _where(filename, job.pos), f"job block must have exactly one label (the job ID), got {len(job.labels)}"
        )
    _tasks_into_groups(job.body)
    problems = list(_check_schema(job, "job", filename))
    if problems:
        raise JobSpecError(problems)
    converted = {"ID": job.labels[0], "Name": job.labels[0], **_JOB(_to_dict(job.body), "Job")}
    coerced: JsonObject = coerce_scalars(converted, model.Job)
    return coerced


def _decode(text: str | bytes, filename: str) -> str:
    if isinstance(text, bytes):
        if text.startswith(b"\xef\xbb\xbf"):
            raise JobSpecError.single(filename, _BOM)
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raw = exc.object
            line = raw[: exc.start].count(b"\n") + 1
            raise JobSpecError.single(
                f"{filename}:{line}", f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
            ) from None
    if text.startswith("\ufeff"):
        raise JobSpecError.single(filename, _BOM)
    if "\x00" in text:
        raise JobSpecError.single(filename, "contains a NUL character; job files are UTF-8 text")
    return text


_BOM = "starts with a UTF-8 byte order mark (BOM); save the file as UTF-8 without BOM"


def _where(filename: str, pos: Pos | None) -> str:
    return f"{filename}:{pos.line}:{pos.column}" if pos is not None and pos.line else filename


def _block_type(tree: Tree[Token]) -> str:
    return name_of(subtrees(tree)[0])


def _check_root(root: Tree[Token]) -> None:
    for child in subtrees(root):
        if child.data == "attribute":
            name = name_of(subtrees(child)[0])
            raise HCLError(position(child), f'unsupported argument "{name}" at the top level; expected a job block')
        kind = _block_type(child)
        if kind not in SCHEMAS["root"].blocks:
            raise HCLError(position(child), _unknown("block", kind, SCHEMAS["root"].blocks, "at the top level"))


def _variables(
    root: Tree[Token],
    evaluator: Evaluator,
    given: Mapping[str, str],
    var_files: Sequence[tuple[str, str]],
    environ: Mapping[str, str],
    filename: str,
) -> JsonObject:
    declared: dict[str, tuple[str, Any, Pos]] = {}  # name -> (type source, default or _UNSET, position)
    for child in subtrees(root):
        if child.data != "block" or _block_type(child) != "variable":
            continue
        parts = subtrees(child)
        labels = [name_of(part) for part in parts[1:-1]]
        if len(labels) != 1:
            raise HCLError(position(child), "a variable block takes one label, its name")
        type_source, default = "", _UNSET
        for item in subtrees(parts[-1]):
            if item.data == "block":
                continue  # validation blocks are accepted; their conditions are not evaluated
            name = name_of(subtrees(item)[0])
            expression = subtrees(item)[-1]
            if name not in SCHEMAS["variable"].attributes:
                raise HCLError(
                    position(item), _unknown("argument", name, SCHEMAS["variable"].attributes, "in variable")
                )
            if name == "type":
                type_source = evaluator.source(expression).strip()
            elif name == "default":
                default = evaluator.value(expression, Scope())
        declared[labels[0]] = (type_source, default, position(child))
    values: JsonObject = {name: default for name, (_, default, _) in declared.items()}
    for name in declared:
        if f"NOMAD_VAR_{name}" in environ:
            values[name] = _from_text(environ[f"NOMAD_VAR_{name}"], declared[name][0])
    for var_file, var_text in var_files:
        values.update(_var_file(var_file, var_text, declared))
    for name, text in given.items():
        if name not in declared:
            raise HCLError(None, f"-var {name}: no variable {name!r} is declared in {filename}")
        values[name] = _from_text(text, declared[name][0])
    for name, (type_source, _, pos) in declared.items():
        if values[name] is _UNSET:
            raise HCLError(pos, f'variable "{name}" has no value: set it with -var, -var-file or NOMAD_VAR_{name}')
        values[name] = _convert(values[name], type_source, name, pos)
    return values


_UNSET: Any = object()


def _var_file(var_file: str, text: str, declared: Mapping[str, tuple[str, Any, Pos]]) -> JsonObject:
    try:
        tree = parse_tree(_decode(text, var_file))
        evaluator = Evaluator(text, Scope())
        body = evaluator.body(subtrees(tree)[0])
    except HCLError as exc:
        raise HCLError(None, f"{_where(var_file, exc.pos)}: {exc.message}") from None
    if body.blocks:
        raise HCLError(None, f"{_where(var_file, body.blocks[0].pos)}: a variable file holds only name = value lines")
    for name, attribute in body.attributes.items():
        if name not in declared:
            raise HCLError(None, f"{_where(var_file, attribute.pos)}: no variable {name!r} is declared")
    return {name: attribute.value for name, attribute in body.attributes.items()}


def _from_text(text: str, type_source: str) -> Any:
    """A -var or NOMAD_VAR_ value: text for string variables, an HCL expression otherwise."""
    if type_source in ("", "string", "any"):
        return text
    if type_source in ("number", "bool"):
        return text
    try:
        tree = parse_tree(f"__v = {text}")
        return Evaluator(f"__v = {text}", Scope()).body(subtrees(tree)[0]).attributes["__v"].value
    except HCLError as exc:
        raise HCLError(None, f"invalid value {text!r} for a {type_source} variable: {exc.message}") from None


def _convert(value: Any, type_source: str, name: str, pos: Pos) -> Any:
    try:
        if type_source == "number":
            return tonumber(value)
        if type_source == "bool":
            return tobool(value)
        if type_source == "string" and not isinstance(value, str):
            return to_text(value)
    except FunctionError as exc:
        raise HCLError(pos, f'variable "{name}": {exc}') from None
    if type_source.startswith(("list", "set", "tuple")) and not isinstance(value, list):
        raise HCLError(pos, f'variable "{name}" must be a list')
    if type_source.startswith(("map", "object")) and not isinstance(value, dict):
        raise HCLError(pos, f'variable "{name}" must be a map')
    return value


def _locals(root: Tree[Token], evaluator: Evaluator) -> JsonObject:
    pending = [
        item
        for child in subtrees(root)
        if child.data == "block" and _block_type(child) == "locals"
        for item in subtrees(subtrees(child)[-1])
    ]
    values: JsonObject = {}
    while pending:
        waiting, first_error = [], None
        for item in pending:
            if item.data != "attribute":
                raise HCLError(position(item), "a locals block holds only name = value lines")
            name = name_of(subtrees(item)[0])
            try:
                values[name] = evaluator.value(subtrees(item)[-1], evaluator.scope)
                evaluator.scope.locals = values
            except HCLError as exc:
                waiting.append(item)
                first_error = first_error or exc
        if len(waiting) == len(pending):
            assert first_error is not None
            raise first_error
        pending = waiting
    return values


def _tasks_into_groups(body: HCLBody) -> None:
    """A task directly in the job becomes a group of the same name holding it, as in Nomad."""
    for block in list(body.blocks):
        if block.type == "task":
            group = Block("group", list(block.labels), HCLBody(blocks=[block]), block.pos)
            body.blocks[body.blocks.index(block)] = group


def _check_schema(block: Block, schema_name: str, filename: str) -> Iterator[FieldError]:
    schema = SCHEMAS[schema_name]
    where = f"in {block.type}{''.join(f' {quote(label)}' for label in block.labels)}"
    for name, attribute in block.body.attributes.items():
        if name not in schema.attributes and name not in schema.blocks:
            yield FieldError(_where(filename, attribute.pos), _unknown("argument", name, schema.attributes, where))
    for child in block.body.blocks:
        kind = schema.blocks.get(child.type)
        if kind is None:
            yield FieldError(_where(filename, child.pos), _unknown("block", child.type, schema.blocks, where))
        elif kind in SCHEMAS and kind not in OPAQUE:
            yield from _check_schema(child, kind, filename)


def _unknown(what: str, name: str, valid: Iterable[str], where: str) -> str:
    names = sorted(valid)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(quote(c) for c in close)}?" if close else ""
    listing = f" (valid: {', '.join(names)})" if names else ""
    return f"unsupported {what} {quote(name)} {where}{hint}{listing}"


def _to_dict(body: HCLBody) -> JsonObject:
    """The shape python-hcl2 gives a body, which the conversion tables below read."""
    out: JsonObject = {name: attribute.value for name, attribute in body.attributes.items()}
    for block in body.blocks:
        item: JsonObject = {**_to_dict(block.body), _BLOCK_MARKER: True}
        for label in reversed(block.labels):
            item = {label: item}
        _list_at(out, block.type).append(item)
    return out


def _list_at(out: JsonObject, key: str) -> JsonList:
    """The list under `key`, started if absent (blocks repeat; attributes never share their name)."""
    found = out.get(key)
    if not isinstance(found, list):
        found = out[key] = []
    return found


def _object_at(out: JsonObject, key: str) -> JsonObject:
    found = out.get(key)
    if not isinstance(found, dict):
        found = out[key] = {}
    return found


def _pascal(name: str) -> str:
    return "".join(_ACRONYMS.get(part, part[:1].upper() + part[1:]) for part in name.split("_"))


def _is_block_item(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    if item.get(_BLOCK_MARKER) is True:
        return True
    # A labelled block is nested one object per label around the marked body.
    return len(item) == 1 and _is_block_item(next(iter(item.values())))


def _is_block_list(value: object) -> TypeGuard[list[JsonObject]]:
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

    def convert(body: Body, path: str) -> JsonObject:
        out: JsonObject = {}
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


def _add_block(out: JsonObject, block: _Block, name: str, value: object, path: str) -> None:
    items = _block_items(value)
    converted: list[tuple[str | None, JsonObject]] = []
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
        _object_at(out, block.key).update({label: result for label, result in converted if label is not None})
    elif converted and (block.many or len(converted) > 1):
        _list_at(out, block.key).extend(result for _, result in converted)
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


def _verbatim(body: Body, path: str) -> JsonObject:
    """Driver config and the like: keys are the driver's own, so nothing is renamed.

    Without the driver's schema a nested block cannot be told apart from a repeatable
    one, so nested blocks always become lists, which Nomad's HCL-JSON decoding accepts
    for both.
    """
    out: JsonObject = {}
    for name, value in _attributes(body):
        if _is_block_list(value):
            out[name] = [_nest(labels, _verbatim(inner, path)) for labels, inner in _block_items(value)]
        else:
            out[name] = value
    return out


def _nest(labels: list[str], body: JsonObject) -> JsonObject:
    for label in reversed(labels):
        body = {label: body}
    return body


def _strings(body: Body, path: str) -> JsonObject:
    """Meta and env maps; like Nomad, scalars are decoded as strings (``3`` -> ``"3"``)."""
    out: JsonObject = {}
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


def _constraint(body: Body, path: str) -> JsonObject | None:
    """Constraints and affinities, including shorthands like ``distinct_hosts = true``."""
    out: JsonObject = {}
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


def _network(body: Body, path: str) -> JsonObject:
    """Ports with a static number are reserved; the rest are assigned dynamically."""
    out = _fields({"dns": _Block("DNS", _fields({})), "cni": _Block("CNI", _fields({}))})(
        {name: value for name, value in body.items() if name != "port"}, path
    )
    reserved: JsonList = []
    dynamic: JsonList = []
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
    _fields(
        {
            "port": "PortLabel",
            "meta": _META,
            "task": "TaskName",
            "check": _many("Checks", _fields({"port": "PortLabel", "task": "TaskName"})),
        }
    ),
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
                    "error_on_missing_key": "ErrMissingKey",
                    "change_script": _one("ChangeScript"),
                    "wait": _one("Wait"),
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
        "csi_plugin": _one("CSIPluginConfig"),
        "lifecycle": _one("Lifecycle"),
        "dispatch_payload": _one("DispatchPayload"),
        "action": _many("Actions", _fields({}), "Name"),
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
        # Nomad 1.9+: ui { description = "..." link { label = "..." url = "..." } }
        "ui": _one("UI", _fields({"link": _many("Links", _fields({}))})),
    }
)
