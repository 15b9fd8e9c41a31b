"""Nomad's volume specification as `corral volume create|register` reads it."""

from __future__ import annotations

import click
import pytest

from app.cli.nodes.volume_spec import parse_bytes, parse_spec

pytestmark = pytest.mark.unit


def test_sizes_are_go_humanize_bytes() -> None:
    assert parse_bytes("capacity", "10GiB") == 10 * 2**30
    assert parse_bytes("capacity", "20G") == 20 * 10**9
    assert parse_bytes("capacity", "1.5 MiB") == 3 * 2**19
    assert parse_bytes("capacity", 512) == 512
    with pytest.raises(click.ClickException, match="invalid capacity"):
        parse_bytes("capacity", "10 parsecs")


def test_a_full_specification_becomes_the_api_volume() -> None:
    kind, volume = parse_spec(
        """
        type = "host"
        id = "0b5c"
        name = "db"
        namespace = "prod"
        plugin_id = "mkdir"
        node_pool = "storage"
        capacity_min = "1GiB"
        constraint {
          attribute = "${attr.kernel.name}"
          value = "linux"
        }
        constraint {
          attribute = "${attr.os.version}"
          version = ">= 22"
        }
        constraint {
          distinct_hosts = false
        }
        capability {
          access_mode = "single-node-writer"
          attachment_mode = "file-system"
        }
        parameters {
          mode = "0750"
          uid = 1000
        }
        """
    )
    assert kind == "host"
    assert volume == {
        "ID": "0b5c",
        "Name": "db",
        "Namespace": "prod",
        "PluginID": "mkdir",
        "NodePool": "storage",
        "RequestedCapacityMinBytes": 2**30,
        "Constraints": [
            {"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="},
            {"LTarget": "${attr.os.version}", "RTarget": ">= 22", "Operand": "version"},
        ],
        "RequestedCapabilities": [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}],
        "Parameters": {"mode": "0750", "uid": "1000"},
    }


def test_unknown_keys_are_named() -> None:
    with pytest.raises(click.ClickException, match="unknown key"):
        parse_spec('type = "host"\ncapability {\n  mode = "rw"\n}\n')
    with pytest.raises(click.ClickException, match="unknown setting 'sizes'"):
        parse_spec('type = "host"\nsizes = 1\n')
