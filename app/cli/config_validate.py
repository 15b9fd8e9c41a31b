"""`corral config validate`: check configuration before starting anything, as Nomad's does:
the node agent's config files (JSON, as `corral client -config` reads them) and the CORRAL_*
environment the server roles read."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("config")
def config() -> None:
    """Check corral's configuration."""


@config.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
def validate(paths: tuple[str, ...]) -> None:
    """Validate the node agent config files at PATHs (a directory: every *.json in it) and the
    CORRAL_* environment. Prints every problem, naming the file or setting, and exits 1; prints
    "Configuration is valid!" and exits 0 when there is none."""
    problems = _environment_problems()
    for path in paths:
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
