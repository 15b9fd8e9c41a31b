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
    from app.agentconfig.flags import AgentFlags
    from app.agentconfig.translate import AgentConfig

# The flags -dev takes (the others configure a production agent's roles).
DEV_FLAGS = ("bind", "data_dir", "log_level", "log_json")

# Written by the agent into its data directory for its client role (mode 0600).
CLIENT_FILE = "agent-client.json"


def load_agent_config(paths: list[Path], flags: AgentFlags | None = None) -> AgentConfig:
    """The files' configuration, or a CLI error naming the file, block and key. Warnings about
    Nomad keys that mean nothing here go to stderr."""
    from app.agentconfig.files import AgentConfigError
    from app.agentconfig.flags import FLAGS_ORIGIN
    from app.agentconfig.load import load
    from client.config import ConfigError, build

    try:
        found = load(paths, flags=flags)
        if found.client_enabled:
            build(found.client, {}, {})  # the client's own checks (volumes exist, subnet, ...)
    except AgentConfigError as err:
        raise click.ClickException(str(err)) from None
    except ConfigError as err:
        given = [FLAGS_ORIGIN] if flags is not None and flags.given() else []
        raise click.ClickException(f"{', '.join([*map(str, paths), *given])}: client: {err}") from None
    for warning in found.warnings:
        click.echo(f"==> WARNING: {warning}", err=True)
    return found


def dev_flag_env(flags: AgentFlags, bind: str) -> dict[str, str]:
    """-dev's flags as the CORRAL_* values the dev agent reads: -bind keeps the port of `bind`
    (CORRAL_BIND), as Nomad's -bind keeps ports.http. Every other flag is a usage error."""
    from dataclasses import asdict

    from app.agentconfig.values import log_level

    other = [name for name, value in asdict(flags).items() if value and name not in DEV_FLAGS]
    if other:
        names = ", ".join("-" + name.replace("_", "-") for name in other)
        raise click.UsageError(
            f"{names}: not with -dev (it runs every role on this host); use -config or leave -dev out"
        )
    env: dict[str, str] = {}
    if flags.bind:
        env["CORRAL_BIND"] = f"{flags.bind}:{bind.rpartition(':')[2]}"
    if flags.data_dir:
        env["CORRAL_DATA_DIR"] = flags.data_dir
    if flags.log_level:
        try:
            env["CORRAL_LOG_LEVEL"] = str(log_level(flags.log_level))
        except ValueError as err:
            raise click.UsageError(f"-log-level: {err}") from None
    if flags.log_json:
        env["CORRAL_LOG_FORMAT"] = "json"
    return env


def run_config_agent(paths: list[Path], acl_enabled: bool, flags: AgentFlags | None = None) -> int:
    """Apply the files' CORRAL_* values over the environment (the file wins; what it does not
    name keeps its variable or default), then run the roles the files enable."""
    from app.cli.support.settings import reload_settings
    from app.settings.logging import configure, resolve_format
    from workers.agent import config_plan, run_agent

    found = load_agent_config(paths, flags)
    os.environ.update(found.env)
    os.environ["CORRAL_AGENT_CONFIG"] = json.dumps({**found.summary, "Files": [str(p.resolve()) for p in paths]})
    if acl_enabled:
        os.environ["CORRAL_ACL_ENABLED"] = "true"
    settings = reload_settings()
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
