"""`corral job init`: write an example job file that runs on the dev agent as it is."""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_FILE = "example.nomad.hcl"

EXAMPLE = """\
# An example corral job, in Nomad's HCL2 job file format.
# Run it on a dev agent (`corral agent -dev`) with:
#
#   corral job validate example.nomad.hcl
#   corral job plan example.nomad.hcl
#   corral job run example.nomad.hcl
#   corral job status example
#
# Variables can be set with -var greeting=hi, -var-file FILE or NOMAD_VAR_greeting.
variable "greeting" {
  type    = string
  default = "hello from corral"
}

locals {
  # HCL expressions and functions are evaluated when the file is read.
  message = upper(var.greeting)
}

job "example" {
  # service jobs run until stopped; batch jobs run to completion.
  type        = "service"
  datacenters = ["*"]

  meta {
    owner = "example"
  }

  group "app" {
    # How many allocations of this group to place.
    count = 1

    restart {
      attempts = 2
      delay    = "5s"
      interval = "1m"
      mode     = "fail"
    }

    task "server" {
      # raw_exec runs a command on the node itself; the dev agent enables it.
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        # ${NOMAD_ALLOC_ID} is filled in by the client when the task starts.
        args = ["-c", "echo \\"${local.message} in ${NOMAD_ALLOC_ID}\\"; exec sleep 3600"]
      }

      env {
        GREETING = var.greeting
      }

      # What the scheduler reserves on the node for this task.
      resources {
        cpu    = 100 # MHz
        memory = 64  # MB
      }

      kill_timeout = "5s"
    }
  }
}
"""


@click.command()
@click.option("-force", "--force", "force", is_flag=True, help="Overwrite the file if it exists.")
@click.argument("file", default=DEFAULT_FILE, required=False)
def init(file: str, force: bool) -> None:
    """Write an example job file (default example.nomad.hcl) with comments; it validates,
    plans and runs on a dev agent as it is."""
    path = Path(file)
    if path.exists() and not force:
        raise click.ClickException(f"{file} already exists; use -force to overwrite it")
    path.write_text(EXAMPLE, encoding="utf-8")
    click.echo(f"Example job file written to {file}")
