"""`corral node pool init`: write an example node pool specification (HCL, or JSON with
-out json) that `corral node pool apply` accepts as it is, under Nomad's default file names."""

from __future__ import annotations

from pathlib import Path

import click

EXAMPLE_HCL = """\
# An example node pool. Create or update it with:
#
#   corral node pool apply pool.nomad.hcl
#
# Nodes join the pool with `corral client --node-pool example`; jobs run in it with
# `node_pool = "example"` in the job block.
node_pool "example" {
  # A short text shown by `corral node pool list` and `node pool info`.
  description = "An example node pool"

  # Free-form key/value pairs: the scheduler does not read them.
  meta {
    environment = "production"
    owner       = "sre"
  }
}
"""

EXAMPLE_JSON = """\
{
  "Name": "example",
  "Description": "An example node pool",
  "Meta": {
    "environment": "production",
    "owner": "sre"
  }
}
"""

FILES = {"hcl": ("pool.nomad.hcl", EXAMPLE_HCL), "json": ("pool.nomad.json", EXAMPLE_JSON)}


@click.command("init")
@click.option(
    "-out", "--out", "out", type=click.Choice(["hcl", "json"]), default="hcl", show_default=True, help="The format."
)
@click.option("-quiet", "--quiet", is_flag=True, help="Do not print the success message.")
@click.argument("file", required=False)
def init(file: str | None, out: str, quiet: bool) -> None:
    """Write an example node pool specification to FILE (default pool.nomad.hcl, or
    pool.nomad.json with -out json); an existing file is left alone."""
    default_name, content = FILES[out]
    path = Path(file or default_name)
    try:
        with path.open("x", encoding="utf-8") as written:
            written.write(content)
    except FileExistsError:
        raise click.ClickException(f'File "{path}" already exists') from None
    except OSError as err:
        raise click.ClickException(f'Failed to write "{path}": {err.strerror or err}') from None
    if not quiet:
        click.echo(f"Example node pool specification written to {path}")
