"""`corral config validate`: check configuration before starting anything, as Nomad's does:
Nomad's agent configuration (HCL or JSON, as `corral agent -config` reads it), the node agent's
flat JSON config files (as `corral client -config` reads them) and the CORRAL_* environment the
server roles read."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("config")
def config() -> None:
    """Check corral's configuration."""


@config.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
def validate(paths: tuple[str, ...]) -> None:
    """Validate the configuration at PATHs and the CORRAL_* environment. An .hcl file, a Nomad
    agent JSON file (with a client, server or plugin block) or a directory is Nomad's agent
    configuration, checked as `corral agent -config` reads it (all of them together, merged);
    another .json file is the node agent's flat config file. Prints every problem, naming the
    file, block and key or setting, and exits 1; warnings name the Nomad keys that mean nothing
    here; prints "Configuration is valid!" and exits 0 when there is no problem."""
    from app.agentconfig.load import is_agent_config

    problems = _environment_problems()
    agent_files = [Path(path) for path in paths if is_agent_config(Path(path))]
    if agent_files:
        problems += _agent_problems(agent_files)
    for path in paths:
        if Path(path) not in agent_files:
            problems += _file_problems(Path(path))
    if problems:
        for problem in problems:
            click.echo(problem, err=True)
        raise SystemExit(1)
    click.echo("Configuration is valid!")


def _environment_problems() -> list[str]:
    from pydantic import ValidationError

    from app.settings.config import Settings, describe, tls_problem

    try:
        settings = Settings()  # read now, not the process's cached settings: this is the check
    except ValidationError as err:
        return [f"environment: {describe(err)}"]
    problem = tls_problem(settings)
    return [f"environment: {problem}"] if problem else []


def _file_problems(path: Path) -> list[str]:
    from client.config import ConfigError, build, load_file

    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            return [f"{path}: no *.json config files in this directory"]
        return [problem for file in files for problem in _file_problems(file)]
    try:
        build(load_file(path), {}, {})
    except ConfigError as err:
        message = str(err)
        return [message if message.startswith("config file") else f"{path}: {message}"]
    return []


def _agent_problems(paths: list[Path]) -> list[str]:
    from app.agentconfig.files import AgentConfigError
    from app.agentconfig.load import load
    from client.config import ConfigError, build

    try:
        found = load(paths)
        if found.client_enabled:
            build(found.client, {}, {})
    except AgentConfigError as err:
        return [str(err)]
    except ConfigError as err:
        return [f"{', '.join(map(str, paths))}: client: {err}"]
    for warning in found.warnings:
        click.echo(f"==> WARNING: {warning}", err=True)
    return []
