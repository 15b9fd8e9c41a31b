"""`corral status`, `version`, `server members` and `agent-info`: the top-level views, in
Nomad's layout, through the REST API."""

from __future__ import annotations

import click

from app.cli.allocs.alloc import status as alloc_status
from app.cli.deployment import status as deployment_status
from app.cli.evals.eval import status as eval_status
from app.cli.jobs.job_status import render_jobs
from app.cli.nodes.node import status as node_status
from app.cli.support import http
from app.cli.support.output import columns, format_options, formatted, key_values, listing


@click.command()
@click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs.")
@format_options
@click.argument("prefix", required=False)
@click.pass_context
def status(ctx: click.Context, prefix: str | None, verbose: bool, as_json: bool, template: str | None) -> None:
    """Without PREFIX, list the jobs. With PREFIX, show the one job, allocation, node,
    evaluation or deployment whose ID starts with it (jobs first), as its own status command does."""
    if prefix is None:
        jobs = http.get("/v1/jobs")
        if not formatted(jobs, as_json, template):
            click.echo(render_jobs(jobs))
        return
    formats = {"as_json": as_json, "template": template}
    jobs = [j for j in listing("/v1/jobs")(prefix) if j["ID"] == prefix] or listing("/v1/jobs")(prefix)
    if len(jobs) == 1:
        job_status = ctx.find_root().command.commands["job"].commands["status"]  # type: ignore[attr-defined]
        if as_json or template:
            formatted(http.get(f"/v1/job/{jobs[0]['ID']}"), as_json, template)
            return
        ctx.invoke(job_status, job_id=jobs[0]["ID"], verbose=verbose)
        return
    others: list[tuple[str, str, click.Command, dict[str, str]]] = [
        ("allocations", "/v1/allocations", alloc_status, {"alloc_id": prefix}),
        ("nodes", "/v1/nodes", node_status, {"node_id": prefix}),
        ("evaluations", "/v1/evaluations", eval_status, {"eval_id": prefix}),
        ("deployments", "/v1/deployments", deployment_status, {}),
    ]
    # IDs are UUIDs: a prefix that is not hex cannot name one (and the routes refuse it).
    searchable = len(jobs) <= 1 and all(c in "0123456789abcdefABCDEF-" for c in prefix)
    matched = [(kind, cmd, args) for kind, route, cmd, args in others if searchable and listing(route)(prefix)]
    if len(jobs) > 1 or len(matched) > 1:
        kinds = ["jobs"] if len(jobs) > 1 else [kind for kind, _, _ in matched]
        raise click.ClickException(f"Prefix {prefix!r} matched several {' and '.join(kinds)}; give more characters")
    if not matched:
        raise click.ClickException(f"No matches found for prefix {prefix!r}")
    kind, command, args = matched[0]
    if kind == "deployments":
        ctx.invoke(command, deployment_id=prefix, verbose=verbose)
        return
    ctx.invoke(command, verbose=verbose, **formats, **args)


@click.command()
def version() -> None:
    """Print the version of this corral installation."""
    from importlib.metadata import version as installed

    click.echo(f"Corral v{installed('corral')}")


def add_server_views(server: click.Group) -> None:
    server.add_command(members)


@click.command()
@click.option("-verbose", "--verbose", is_flag=True, help="Also show the member's tags.")
@format_options
def members(verbose: bool, as_json: bool, template: str | None) -> None:
    """List the servers, from /v1/agent/self (corral's API is one logical server on one
    database; there is no Raft membership)."""
    agent = http.get("/v1/agent/self")
    member = agent.get("member") or {}
    if formatted([member], as_json, template):
        return
    host, _, port = str((agent.get("config") or {}).get("BindAddr", "")).rpartition(":")
    tags = member.get("Tags") or {}
    rows = [["Name", "Address", "Port", "Status", "Leader", "Build", "Datacenter", "Region"]]
    rows.append(
        [
            str(member.get("Name", "")),
            host,
            port,
            str(member.get("Status", "")),
            "true",
            str(tags.get("build", "")),
            "dc1",
            "global",
        ]
    )
    lines = columns(rows)
    if verbose and tags:
        lines += ["", "Tags", *key_values(sorted(tags.items()))]
    click.echo("\n".join(lines))


@click.command("agent-info")
@format_options
def agent_info(as_json: bool, template: str | None) -> None:
    """Show the agent the CLI talks to (/v1/agent/self): version, bind address, database and
    its schema revision, and the state index."""
    agent = http.get("/v1/agent/self")
    if formatted(agent, as_json, template):
        return
    config = agent.get("config") or {}
    database = config.get("Database") or {}
    sections: list[tuple[str, list[tuple[str, object]]]] = [
        (
            "agent",
            [
                ("version", (config.get("Version") or {}).get("Version", "")),
                ("bind_addr", config.get("BindAddr", "")),
                ("server", str(bool((config.get("Server") or {}).get("Enabled"))).lower()),
            ],
        ),
        (
            "database",
            [
                ("embedded", str(bool(database.get("Embedded"))).lower()),
                ("schema_revision", database.get("SchemaRevision", "")),
                ("schema_head", database.get("SchemaHead", "")),
            ],
        ),
    ]
    # Nomad's agent-info prints each stats section (nomad, runtime, ...) under its own name.
    stats = agent.get("stats") or {}
    sections += [(str(name), sorted((values or {}).items())) for name, values in sorted(stats.items())]
    lines: list[str] = []
    for name, pairs in sections:
        lines.append(name)
        lines += [f"  {line}" for line in key_values(pairs)] if pairs else []
    click.echo("\n".join(lines))
