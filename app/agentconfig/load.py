"""`-config PATH...` to an AgentConfig: find the files, check each, merge them, translate."""

from __future__ import annotations

import json
from pathlib import Path

from app.agentconfig.check import check_file
from app.agentconfig.files import config_files, merge, parse_file
from app.agentconfig.flags import FLAGS_ORIGIN, AgentFlags, flag_document
from app.agentconfig.translate import AgentConfig, translate
from app.wire.json import JsonObject

AGENT_BLOCKS = ("client", "server", "plugin")


def load(paths: list[Path], *, client_only: bool = False, flags: AgentFlags | None = None) -> AgentConfig:
    """Raises AgentConfigError naming the file, block and key of the first problem. `client_only`:
    as `corral client -config` reads the files (see translate). `flags`: the agent's command-line
    flags, merged after every file."""
    files = config_files(paths)
    merged: JsonObject = {}
    warnings: list[str] = []
    for path in files:
        document = parse_file(path)
        warnings += check_file(path, document)
        merged = merge(merged, document)
    origins = [str(path) for path in files]
    if flags is not None and flags.given():
        overrides = flag_document(flags)
        warnings += check_file(Path(FLAGS_ORIGIN), overrides)
        merged = merge(merged, overrides)
        origins.append(FLAGS_ORIGIN)
    origin = ", ".join(origins)
    found = translate(merged, origin, client_only=client_only)
    found.warnings[:0] = warnings
    return found


def is_agent_config(path: Path) -> bool:
    """Whether `corral client -config` and `corral config validate` read PATH as Nomad's agent
    configuration rather than the client's flat JSON file: a directory holding such a file, an
    .hcl file, or JSON with a `client`, `server` or `plugin` object (keys the flat file has not)."""
    if path.is_dir():
        return any(is_agent_config(p) for p in path.iterdir() if p.suffix in (".hcl", ".json") and p.is_file())
    if path.suffix != ".json":
        return True
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False  # the flat file's loader reports what is wrong with it
    return isinstance(document, dict) and any(isinstance(document.get(k), dict | list) for k in AGENT_BLOCKS)
