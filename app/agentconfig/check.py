"""One file's settings against the schema: unknown keys are errors naming the file, block and
key; Nomad keys with no meaning here are warnings; every value corral acts on is checked."""

from __future__ import annotations

from pathlib import Path

from app.agentconfig.files import AgentConfigError
from app.agentconfig.schema import AGENT, OTHER_DRIVERS, PLUGIN_CONFIGS, Block, Key, plugin_block
from app.wire.json import JsonObject, JsonValue


def check_file(path: Path, document: JsonObject) -> list[str]:
    """The file's warnings; raises AgentConfigError on its first problem."""
    warnings: list[str] = []
    plugins = document.get("plugin")
    rest = {key: value for key, value in document.items() if key != "plugin"}
    _check_block(path, AGENT, rest, (), warnings)
    if plugins is not None:
        _check_plugins(path, plugins, warnings)
    return warnings


def where(keys: tuple[str, ...]) -> str:
    """A key's place as the file writes it: client.host_volume["data"].path -> client.host_volume.data.path."""
    return ".".join(keys) if keys else "top level"


def _check_block(path: Path, block: Block, body: JsonValue, at: tuple[str, ...], warnings: list[str]) -> None:
    if not isinstance(body, dict):
        raise AgentConfigError(f"{path}: {where(at)}: must be a block {{ ... }}, got {body!r}")
    if block.labeled:
        for label, inner in body.items():
            _check_block(path, Block(block.keys, block.ignored), inner, (*at, label), warnings)
        return
    for key, value in body.items():
        here = (*at, key)
        spec = block.keys.get(key)
        if spec is None:
            if key in block.ignored:
                warnings.append(f"{path}: {where(here)} has no meaning in corral; ignored")
                continue
            choices = ", ".join(sorted(block.keys)) or "none"
            block_name = f"block {where(at)!r}" if at else "the top level"
            raise AgentConfigError(f"{path}: unknown key {key!r} in {block_name} (corral knows: {choices})")
        if isinstance(spec, Block):
            _check_block(path, spec, value, here, warnings)
        else:
            check_value(path, spec, value, here)


def check_value(path: Path, key: Key, value: JsonValue, at: tuple[str, ...]) -> JsonValue:
    try:
        return key.convert(value)
    except ValueError as err:
        raise AgentConfigError(f"{path}: {where(at)}: {err}") from None


def _check_plugins(path: Path, plugins: JsonValue, warnings: list[str]) -> None:
    if not isinstance(plugins, dict):
        raise AgentConfigError(f'{path}: plugin: must be blocks plugin "name" {{ ... }}')
    for name, body in plugins.items():
        if name in PLUGIN_CONFIGS:
            _check_block(path, plugin_block(name), body, ("plugin", name), warnings)
        elif name in OTHER_DRIVERS:
            warnings.append(f"{path}: plugin.{name}: corral has no {name} driver; ignored")
        else:
            known = ", ".join(sorted(PLUGIN_CONFIGS))
            raise AgentConfigError(f"{path}: plugin {name!r}: unknown task driver (corral has: {known})")
