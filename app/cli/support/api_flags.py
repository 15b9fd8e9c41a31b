"""Nomad's flags that every API command takes: `-namespace` and `-region`. They are added to
the click tree once it is built, to every command that talks to a server (the roles that run
corral itself, and the database commands, take none), so that a command added later gets them
too. A command that declares its own `-namespace` keeps it (and its own meaning)."""

from __future__ import annotations

from collections.abc import Callable

import click

from app.cli.support import http

# Commands that run corral or manage its database: they never address a namespaced object.
LOCAL_COMMANDS = frozenset(
    {"agent", "server", "worker", "applier", "leader", "db", "client", "fleet", "version", "config"}
)


def _remember(key: str) -> Callable[[click.Context, click.Parameter, str | None], None]:
    def store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value:
            ctx.meta[key] = value

    return store


def namespace_option() -> click.Option:
    return click.Option(
        ["-namespace", "--namespace"],
        metavar="NAMESPACE",
        expose_value=False,
        is_eager=True,
        callback=_remember(http.NAMESPACE_KEY),
        help="The namespace to act in [default: CORRAL_NAMESPACE, NOMAD_NAMESPACE or the API's default].",
    )


def region_option() -> click.Option:
    return click.Option(
        ["-region", "--region"],
        metavar="REGION",
        expose_value=False,
        is_eager=True,
        callback=_remember(http.REGION_KEY),
        help="The region to send the request to (corral has one, `global`) [default: NOMAD_REGION].",
    )


def _declares(command: click.Command, flag: str) -> bool:
    return any(isinstance(p, click.Option) and flag in p.opts for p in command.params)


def add_api_flags(command: click.Command) -> None:
    """Give COMMAND and every command under it -namespace and -region, unless it has its own."""
    if not _declares(command, "-namespace"):
        command.params.append(namespace_option())
    if not _declares(command, "-region"):
        command.params.append(region_option())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            add_api_flags(sub)


def install(root: click.Group) -> None:
    """The flags on ROOT itself (`corral -namespace team-a job status`) and on every API command."""
    root.params += [namespace_option(), region_option()]
    for name, command in root.commands.items():
        if name not in LOCAL_COMMANDS:
            add_api_flags(command)
