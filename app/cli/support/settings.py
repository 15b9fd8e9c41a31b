"""The configuration as the commands see it, and the roles' own metrics endpoint.

Its own module (not the package's __init__) so that command modules can use it without
importing the package that imports them. Like every command module it imports only click at
top level: pydantic-settings and the metrics server load inside the functions that use them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from app.settings.config import Settings


def get_settings() -> Settings:
    """The validated configuration, for the commands that need it; a bad value is a usage error."""
    from app.settings.config import ConfigError
    from app.settings.config import get_settings as load

    try:
        return load()
    except ConfigError as err:
        raise click.ClickException(f"invalid configuration: {err}") from None


def reload_settings() -> Settings:
    """The configuration read again from the environment: for a command that has just set
    CORRAL_* values from its own flags (the agent's -data-dir, -bind, -log-level), after an
    earlier read cached the environment as it was."""
    from app.settings.config import get_settings as load

    load.cache_clear()
    return get_settings()


def serve_metrics(settings: Settings, role: str) -> None:
    """The role's own /v1/metrics on CORRAL_METRICS_BIND, if set; a bad address stops the role."""
    if not settings.metrics_bind:
        return
    from workers.metrics_http import MetricsBindError
    from workers.metrics_http import serve_metrics as serve

    try:
        serve(settings.metrics_bind, role)
    except MetricsBindError as err:
        raise click.ClickException(str(err)) from err
