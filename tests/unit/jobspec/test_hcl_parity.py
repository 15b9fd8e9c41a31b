"""HCL parity with Nomad's job parser: positions and names for typos, HCL2 conversions,
variables, locals, functions, file(), encodings and the blocks corral only keeps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from app.jobspec import FieldError, JobSpecError, normalize_job, parse_hcl
from app.jobspec.warnings import format_warnings, job_warnings

pytestmark = pytest.mark.unit


def _job(group_body: str, task_body: str = 'driver = "mock"', top: str = "") -> str:
    return f'{top}job "j" {{\n  group "g" {{\n{group_body}\n    task "t" {{\n      {task_body}\n    }}\n  }}\n}}\n'


def errors(
    text: str | bytes,
    *,
    filename: str = "job.hcl",
    variables: Mapping[str, str] | None = None,
    var_files: Sequence[tuple[str, str]] = (),
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> list[FieldError]:
    """The errors parse_hcl (same keywords, same defaults) refuses TEXT with."""
    with pytest.raises(JobSpecError) as caught:
        parse_hcl(text, filename=filename, variables=variables, var_files=var_files, environ=environ, base_dir=base_dir)
    return caught.value.errors


def test_typo_argument_is_an_error_with_position_and_suggestion() -> None:
    # Before: `cout = 3` was silently dropped and the group ran with count 1.
    [error] = errors(_job("    cout = 3"), filename="web.hcl")
    assert error.field == "web.hcl:3:5"
    assert 'unsupported argument "cout" in group "g"' in error.message
    assert 'did you mean "count"' in error.message


def test_typo_block_is_an_error_with_position_and_suggestion() -> None:
    [error] = errors(_job("", 'driver = "mock"\n      resorces {\n        cpu = 100\n      }'))
    assert error.field == "job.hcl:6:7"
    assert 'unsupported block "resorces" in task "t"' in error.message and '"resources"' in error.message


def test_every_typo_is_reported() -> None:
    found = errors(_job("    cout = 3\n    colour = 1", 'driver = "mock"\n      drivr = "x"'))
    assert [e.field for e in found] == ["job.hcl:3:5", "job.hcl:4:5", "job.hcl:7:7"]


def test_quoted_numbers_and_bools_convert_where_the_schema_expects_them() -> None:
    text = _job(
        '    count = "2"\n    reschedule {\n      unlimited = "true"\n      attempts = "0"\n    }',
        'driver = "mock"\n      resources {\n        cpu = "500"\n        memory = "128"\n      }',
    )
    spec = normalize_job(parse_hcl(text))
    group = spec["TaskGroups"][0]
    assert group["Count"] == 2
    assert group["ReschedulePolicy"]["Unlimited"] is True
    assert group["Tasks"][0]["Resources"]["CPU"] == 500
    assert group["Tasks"][0]["Resources"]["MemoryMB"] == 128


def test_meta_and_env_values_stay_strings() -> None:
    spec: Any = parse_hcl(
        _job("    meta {\n      n = 3\n      ok = true\n    }", 'driver = "mock"\n      env {\n        N = 1\n      }')
    )
    assert spec["TaskGroups"][0]["Meta"] == {"n": "3", "ok": "true"}
    assert spec["TaskGroups"][0]["Tasks"][0]["Env"] == {"N": "1"}


def test_task_directly_in_job_becomes_a_group_of_that_name() -> None:
    spec = normalize_job(parse_hcl('job "j" {\n  task "solo" {\n    driver = "mock"\n  }\n}\n'))
    [group] = spec["TaskGroups"]
    assert group["Name"] == "solo" and [t["Name"] for t in group["Tasks"]] == ["solo"]


def test_group_max_client_disconnect_from_hcl_is_stored_as_nanoseconds() -> None:
    spec = normalize_job(parse_hcl(_job('    max_client_disconnect = "1h"')))
    assert spec["TaskGroups"][0]["MaxClientDisconnect"] == 3600 * 10**9


VARIABLES = """
variable "count" {
  type    = number
  default = 1
}
variable "image" {
  default = "redis"
}
variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}
locals {
  tag   = "${var.image}:${local.ver}"
  ver   = "7"
  names = [for dc in var.dcs : upper(dc)]
}
job "j" {
  datacenters = var.dcs
  meta {
    tag   = local.tag
    names = join(",", local.names)
  }
  group "g" {
    count = var.count
    task "t" {
      driver = "mock"
    }
  }
}
"""


def test_variables_defaults_and_locals() -> None:
    spec: Any = parse_hcl(VARIABLES)
    assert spec["TaskGroups"][0]["Count"] == 1
    assert spec["Datacenters"] == ["dc1"]
    assert spec["Meta"] == {"tag": "redis:7", "names": "DC1"}


def test_variable_precedence_default_env_var_file_then_var() -> None:
    environ = {"NOMAD_VAR_count": "2", "NOMAD_VAR_image": "from-env"}
    spec: Any = parse_hcl(VARIABLES, environ=environ)
    assert spec["TaskGroups"][0]["Count"] == 2
    files = [("prod.hcl", 'count = 3\ndcs = ["a", "b"]\n')]
    spec = parse_hcl(VARIABLES, environ=environ, var_files=files)
    assert spec["TaskGroups"][0]["Count"] == 3 and spec["Datacenters"] == ["a", "b"]
    assert spec["Meta"]["tag"] == "from-env:7"
    spec = parse_hcl(VARIABLES, environ=environ, var_files=files, variables={"count": "4", "image": "x"})
    assert spec["TaskGroups"][0]["Count"] == 4 and spec["Meta"]["tag"] == "x:7"


def test_variable_errors() -> None:
    [error] = errors(VARIABLES, variables={"nope": "1"})
    assert "no variable 'nope'" in error.message
    [error] = errors(VARIABLES, variables={"count": "many"})
    assert 'variable "count"' in error.message
    [error] = errors('variable "x" {}\njob "j" {}\n')
    assert error.field == "job.hcl:1:1" and "NOMAD_VAR_x" in error.message
    [error] = errors('job "j" {\n  datacenters = [var.missing]\n}\n')
    assert error.field.startswith("job.hcl:2:") and "var.missing" in error.message


def test_functions_nomad_job_files_use() -> None:
    text = """
locals {
  parts = split(",", "a,b,c")
}
job "j" {
  meta {
    a = upper(format("%s-%03d", "web", 7))
    b = join("-", reverse(local.parts))
    c = base64encode("hi")
    d = jsonencode({ x = 1 })
    e = length(local.parts) > 2 ? "many" : "few"
    f = lookup({ k = "v" }, "k", "d")
    g = trimspace("  t  ")
    h = replace("a.b", ".", "_")
    i = tostring(max(1, 5, 3))
    j = element(concat(local.parts, ["d"]), 3)
    k = substr("corral", 0, 3)
    l = "${var_free}"
  }
}
"""
    meta: Any = parse_hcl(text.replace('"${var_free}"', '"x"'))["Meta"]
    assert meta == {
        "a": "WEB-007",
        "b": "c-b-a",
        "c": "aGk=",
        "d": '{"x":1}',
        "e": "many",
        "f": "v",
        "g": "t",
        "h": "a_b",
        "i": "5",
        "j": "d",
        "k": "cor",
        "l": "x",
    }


def test_runtime_interpolations_are_kept_verbatim() -> None:
    spec: Any = parse_hcl(
        _job(
            "",
            'driver = "raw_exec"\n      config {\n        args = ["${NOMAD_ALLOC_ID}", '
            '"${node.unique.name}-${attr.kernel.name}", "$${literal}"]\n      }',
        )
    )
    assert spec["TaskGroups"][0]["Tasks"][0]["Config"]["args"] == [
        "${NOMAD_ALLOC_ID}",
        "${node.unique.name}-${attr.kernel.name}",
        "${literal}",
    ]


def test_file_reads_relative_to_the_job_file(tmp_path: Path) -> None:
    (tmp_path / "motd.txt").write_text("hello\n")
    text = 'job "j" {\n  meta {\n    motd = file("motd.txt")\n  }\n}\n'
    assert parse_hcl(text, base_dir=tmp_path)["Meta"] == {"motd": "hello\n"}
    [error] = errors(text)  # the API route: no file access
    assert "file() is not available" in error.message and error.field.startswith("job.hcl:3:")
    [error] = errors(text.replace("motd.txt", "absent.txt"), base_dir=tmp_path)
    assert "cannot read 'absent.txt'" in error.message


def test_bom_and_invalid_utf8_give_one_clear_error() -> None:
    # Before: a 33-line traceback.
    [error] = errors(b'\xef\xbb\xbfjob "j" {}\n', filename="bom.hcl")
    assert error.field == "bom.hcl" and "byte order mark" in error.message
    [error] = errors(b'job "j" {\n  meta {\n    a = "\xff"\n  }\n}\n', filename="bad.hcl")
    assert error.field == "bad.hcl:3" and "not valid UTF-8" in error.message
    [error] = errors("\ufeffjob {}")
    assert "byte order mark" in error.message


IGNORED = """
job "j" {
  group "g" {
    volume "data" {
      type   = "csi"
      source = "data"
    }
    service {
      name = "web"
      port = "http"
      check {
        type     = "http"
        path     = "/"
        interval = "10s"
        timeout  = "2s"
      }
    }
    task "t" {
      driver = "mock"
      template {
        data        = "x={{ env \\"x\\" }}"
        destination = "local/x.env"
        env         = true
      }
      vault {
        policies = ["p"]
      }
      consul {
        namespace = "n"
      }
      csi_plugin {
        id   = "p"
        type = "node"
      }
    }
  }
}
"""


def test_blocks_corral_does_not_act_on_are_kept_and_warned_about() -> None:
    spec = normalize_job(parse_hcl(IGNORED))
    group = spec["TaskGroups"][0]
    task = group["Tasks"][0]
    assert group["Volumes"]["data"]["Type"] == "csi"
    assert group["Services"][0]["Checks"][0]["Path"] == "/"
    assert task["Templates"][0]["DestPath"] == "local/x.env"
    assert task["Vault"] == {"Policies": ["p"]}
    assert task["CSIPluginConfig"] == {"ID": "p", "Type": "node"}
    warnings = job_warnings(spec)
    assert not any("template block" in line for line in warnings)  # the client renders templates
    for block in ("service", "vault", "consul", "csi_plugin"):
        assert any(f"{block} block" in line for line in warnings), block
    assert "group \"g\": volume 'data' (type csi) is accepted and kept, but corral does not act on it" in warnings
    assert format_warnings(warnings).startswith(f"{len(warnings)} warnings:\n\n* ")
    assert job_warnings(normalize_job(parse_hcl(_job("")))) == []


def test_lifecycle_kill_and_payload_fields_carry_nomads_names() -> None:
    text = _job(
        "",
        'driver = "mock"\n      kill_timeout = "20s"\n      kill_signal = "SIGINT"\n'
        '      lifecycle {\n        hook = "poststart"\n        sidecar = true\n      }\n'
        '      dispatch_payload {\n        file = "in.json"\n      }\n      meta {\n        m = "1"\n      }',
        top="",
    )
    task = normalize_job(parse_hcl(text))["TaskGroups"][0]["Tasks"][0]
    assert task["KillTimeout"] == 20 * 10**9 and task["KillSignal"] == "SIGINT"
    assert task["Lifecycle"] == {"Hook": "poststart", "Sidecar": True}
    assert task["DispatchPayload"] == {"File": "in.json"} and task["Meta"] == {"m": "1"}


def test_numbers_convert_to_strings_where_the_schema_expects_text() -> None:
    spec = normalize_job(
        parse_hcl('job "j" {\n  datacenters = [1]\n  task "t" {\n    driver = "mock"\n    user = 1000\n  }\n}\n')
    )
    assert spec["Datacenters"] == ["1"] and spec["TaskGroups"][0]["Tasks"][0]["User"] == "1000"
