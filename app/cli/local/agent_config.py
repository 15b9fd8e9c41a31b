"""`corral agent -config PATH...`: Nomad's agent configuration files translated into what the
roles already read (CORRAL_* variables for the server roles, a client config file for the
client) and run with the dev agent's launcher (workers/agent.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from app.agentconfig.translate import AgentConfig

# Written by the agent into its data directory for its client role (mode 0600).
CLIENT_FILE = "agent-client.json"


def load_agent_config(paths: list[Path]) -> AgentConfig:
    """The files' configuration, or a CLI error naming the file, block and key. Warnings about
    Nomad keys that mean nothing here go to stderr."""
    from app.agentconfig.files import AgentConfigError
    from app.agentconfig.load import load
    from client.config import ConfigError, build

    try:
        found = load(paths)
        if found.client_enabled:
            build(found.client, {}, {})  # the client's own checks (volumes exist, subnet, ...)
    except AgentConfigError as err:
        raise click.ClickException(str(err)) from None
    except ConfigError as err:
        raise click.ClickException(f"{', '.join(map(str, paths))}: client: {err}") from None
    for warning in found.warnings:
        click.echo(f"==> WARNING: {warning}", err=True)
    return found


def run_config_agent(paths: list[Path], acl_enabled: bool) -> int:
    """Apply the files' CORRAL_* values over the environment (the file wins; what it does not
    name keeps its variable or default), then run the roles the files enable."""
    from app.cli.support.settings import get_settings
    from app.settings.logging import configure, resolve_format
    from workers.agent import config_plan, run_agent

    found = load_agent_config(paths)
    os.environ.update(found.env)
    os.environ["CORRAL_AGENT_CONFIG"] = json.dumps({**found.summary, "Files": [str(p.resolve()) for p in paths]})
    if acl_enabled:
        os.environ["CORRAL_ACL_ENABLED"] = "true"
    settings = get_settings()
    settings = settings.model_copy(update={"log_format": resolve_format(settings.log_format)})
    configure("agent", settings.log_level, settings.log_format)
    token = None if found.server_enabled else os.environ.get("CORRAL_TOKEN") or os.environ.get("NOMAD_TOKEN")
    plan = config_plan(
        found.server_enabled,
        found.client if found.client_enabled else None,
        Path(settings.data_dir) / CLIENT_FILE,
        found.client_env,
        token,
    )
    return run_agent(settings, plan)
