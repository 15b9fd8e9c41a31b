from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import FieldError, JobSpecError, normalize_job, parse_hcl

pytestmark = pytest.mark.unit

SECOND = 1_000_000_000

EXAMPLE = """
job "example" {
  datacenters = ["dc1"]
  type = "service"
  constraint { attribute = "${attr.kernel.name}"  value = "linux" }
  update { max_parallel = 1  min_healthy_time = "10s" }
  group "cache" {
    count = 3
    network { port "db" { to = 6379 }  port "http" { static = 8080 } }
    restart { attempts = 2 interval = "30m" delay = "15s" mode = "fail" }
    ephemeral_disk { size = 300 }
    task "redis" {
      driver = "docker"
      config { image = "redis:7" ports = ["db"] }
      env { FOO = "bar" }
      resources { cpu = 500  memory = 256 }
    }
  }
}
"""


def test_example_converts_to_api_shape() -> None:
    assert parse_hcl(EXAMPLE) == {
        "ID": "example",
        "Name": "example",
        "Datacenters": ["dc1"],
        "Type": "service",
        "Constraints": [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}],
        "Update": {"MaxParallel": 1, "MinHealthyTime": "10s"},
        "TaskGroups": [
            {
                "Name": "cache",
                "Count": 3,
                "Networks": [
                    {
                        "ReservedPorts": [{"Label": "http", "Value": 8080}],
                        "DynamicPorts": [{"Label": "db", "To": 6379}],
                    }
                ],
                "RestartPolicy": {"Attempts": 2, "Interval": "30m", "Delay": "15s", "Mode": "fail"},
                "EphemeralDisk": {"SizeMB": 300},
                "Tasks": [
                    {
                        "Name": "redis",
                        "Driver": "docker",
                        "Config": {"image": "redis:7", "ports": ["db"]},
                        "Env": {"FOO": "bar"},
                        "Resources": {"CPU": 500, "MemoryMB": 256},
                    }
                ],
            }
        ],
    }


def test_example_normalizes() -> None:
    out = normalize_job(parse_hcl(EXAMPLE))
    assert out["ID"] == out["Name"] == "example"
    assert out["Datacenters"] == ["dc1"]
    assert out["Constraints"] == [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}]
    assert out["Update"]["MinHealthyTime"] == 10 * SECOND
    cache = out["TaskGroups"][0]
    assert cache["Count"] == 3
    assert cache["Update"] == out["Update"]
    assert cache["Networks"] == [
        {
            "Mode": "host",
            "ReservedPorts": [{"Label": "http", "Value": 8080, "To": 0, "HostNetwork": "default"}],
            "DynamicPorts": [{"Label": "db", "Value": 0, "To": 6379, "HostNetwork": "default"}],
        }
    ]
    assert cache["RestartPolicy"] == {"Attempts": 2, "Interval": 1800 * SECOND, "Delay": 15 * SECOND, "Mode": "fail"}
    assert cache["EphemeralDisk"] == {"SizeMB": 300}
    redis = cache["Tasks"][0]
    assert redis["Resources"] == {"CPU": 500, "MemoryMB": 256, "MemoryMaxMB": 0, "Cores": 0}
    assert redis["Config"] == {"image": "redis:7", "ports": ["db"]}
    assert redis["Env"] == {"FOO": "bar"}


RICH = """
# comments are ignored
job "nightly" {
  type        = "batch"
  priority    = 70
  namespace   = "etl"
  region      = "eu"
  node_pool   = "big"
  all_at_once = true
  meta { owner = "data" retries = 3 }

  periodic {
    crons            = ["0 3 * * *"]
    prohibit_overlap = true
    time_zone        = "Europe/Berlin"
  }

  reschedule {
    attempts       = 2
    interval       = "2h"
    delay          = "30s"
    delay_function = "fibonacci"
    max_delay      = "10m"
    unlimited      = false
  }

  group "work" {
    constraint { distinct_hosts = true }
    constraint {
      distinct_property = "${meta.rack}"
      value             = "2"
    }
    constraint {
      attribute = "${attr.nomad.version}"
      version   = ">= 1.6"
    }
    constraint {
      attribute = "${attr.os.name}"
      operator  = "regexp"
      value     = "ubuntu|debian"
    }
    affinity {
      attribute = "${node.class}"
      value     = "compute"
      weight    = -40
    }
    spread {
      attribute = "${node.datacenter}"
      weight    = 80
      target "dc1" { percent = 60 }
      target "dc2" { percent = 40 }
    }
    disconnect {
      lost_after = "1h"
      replace    = true
    }

    task "extract" {
      driver         = "exec"
      kill_timeout   = "45s"
      shutdown_delay = "2s"
      config {
        command = "/bin/extract"
        args    = ["--since", "${NOMAD_META_since}"]
        mount {
          type   = "bind"
          target = "/data"
        }
      }
      env = { BATCH = 100 }
      template {
        data        = <<EOT
since={{ env "NOMAD_META_since" }}
EOT
        destination = "local/run.env"
      }
      resources {
        cores      = 2
        memory     = 1024
        memory_max = 2048
      }
      restart { attempts = 1 }
    }
  }
}
"""


def test_rich_job_converts() -> None:
    converted: Any = parse_hcl(RICH)
    assert converted["Meta"] == {"owner": "data", "retries": "3"}
    assert converted["Periodic"] == {"Specs": ["0 3 * * *"], "ProhibitOverlap": True, "TimeZone": "Europe/Berlin"}
    assert converted["Reschedule"] == {
        "Attempts": 2,
        "Interval": "2h",
        "Delay": "30s",
        "DelayFunction": "fibonacci",
        "MaxDelay": "10m",
        "Unlimited": False,
    }
    work = converted["TaskGroups"][0]
    assert work["Constraints"] == [
        {"Operand": "distinct_hosts"},
        {"LTarget": "${meta.rack}", "RTarget": "2", "Operand": "distinct_property"},
        {"LTarget": "${attr.nomad.version}", "RTarget": ">= 1.6", "Operand": "version"},
        {"LTarget": "${attr.os.name}", "Operand": "regexp", "RTarget": "ubuntu|debian"},
    ]
    assert work["Affinities"] == [{"LTarget": "${node.class}", "RTarget": "compute", "Weight": -40, "Operand": "="}]
    assert work["Spreads"] == [
        {
            "Attribute": "${node.datacenter}",
            "Weight": 80,
            "SpreadTarget": [{"Value": "dc1", "Percent": 60}, {"Value": "dc2", "Percent": 40}],
        }
    ]
    assert work["Disconnect"] == {"LostAfter": "1h", "Replace": True}
    extract = work["Tasks"][0]
    assert extract["Config"] == {
        "command": "/bin/extract",
        "args": ["--since", "${NOMAD_META_since}"],
        "mount": [{"type": "bind", "target": "/data"}],
    }
    assert extract["Env"] == {"BATCH": "100"}
    assert extract["Templates"] == [
        # An HCL2 heredoc keeps its last line's newline.
        {"EmbeddedTmpl": 'since={{ env "NOMAD_META_since" }}\n', "DestPath": "local/run.env"}
    ]
    assert extract["Resources"] == {"Cores": 2, "MemoryMB": 1024, "MemoryMaxMB": 2048}
    assert extract["RestartPolicy"] == {"Attempts": 1}
    assert (extract["KillTimeout"], extract["ShutdownDelay"]) == ("45s", "2s")


def test_rich_job_normalizes() -> None:
    out = normalize_job(parse_hcl(RICH))
    assert (out["Type"], out["Priority"], out["Namespace"], out["Region"]) == ("batch", 70, "etl", "eu")
    assert (out["NodePool"], out["AllAtOnce"]) == ("big", True)
    work = out["TaskGroups"][0]
    assert work["ReschedulePolicy"]["MaxDelay"] == 600 * SECOND
    assert work["Disconnect"] == {"LostAfter": 3600 * SECOND, "Replace": True}
    extract = work["Tasks"][0]
    assert extract["Resources"]["CPU"] == 0
    assert extract["RestartPolicy"] == {
        "Attempts": 1,
        "Interval": 24 * 3600 * SECOND,
        "Delay": 15 * SECOND,
        "Mode": "fail",
    }
    assert (extract["KillTimeout"], extract["ShutdownDelay"]) == (45 * SECOND, 2 * SECOND)
    assert normalize_job(out) == out


def test_group_level_policies_and_parameterized() -> None:
    converted: Any = parse_hcl(
        """
        job "dispatch" {
          type = "batch"
          parameterized {
            payload       = "required"
            meta_required = ["input"]
          }
          group "g" {
            reschedule { attempts = 0 }
            migrate { max_parallel = 2 }
            update { canary = 1 }
            meta = { tier = "gold" }
            task "t" {
              driver = "raw_exec"
              meta { enabled = true }
            }
          }
        }
        """
    )
    assert converted["ParameterizedJob"] == {"Payload": "required", "MetaRequired": ["input"]}
    g = converted["TaskGroups"][0]
    assert g["ReschedulePolicy"] == {"Attempts": 0}
    assert g["Migrate"] == {"MaxParallel": 2}
    assert g["Update"] == {"Canary": 1}
    assert g["Meta"] == {"tier": "gold"}
    assert g["Tasks"][0]["Meta"] == {"enabled": "true"}


def test_periodic_cron_and_multiple_groups() -> None:
    converted: Any = parse_hcl(
        """
        job "j" {
          periodic { cron = "@hourly" }
          group "a" { task "t" { driver = "exec" } }
          group "b" { task "t" { driver = "exec" } }
        }
        """
    )
    assert converted["Periodic"] == {"Spec": "@hourly"}
    assert [g["Name"] for g in converted["TaskGroups"]] == ["a", "b"]


def test_distinct_hosts_false_adds_no_constraint() -> None:
    converted: Any = parse_hcl('job "j" {\n constraint { distinct_hosts = false }\n}')
    assert "Constraints" not in converted


def test_unknown_attributes_and_blocks_become_pascal_case() -> None:
    converted: Any = parse_hcl(
        """
        job "j" {
          vault_token = "x"
          group "g" {
            stop_after_client_disconnect = "5m"
            task "t" {
              driver = "docker"
              kill_signal = "SIGINT"
              lifecycle {
                hook    = "prestart"
                sidecar = false
              }
              identity {
                env = true
              }
            }
          }
        }
        """
    )
    assert converted["VaultToken"] == "x"
    assert converted["TaskGroups"][0]["StopAfterClientDisconnect"] == "5m"
    t = converted["TaskGroups"][0]["Tasks"][0]
    assert t["KillSignal"] == "SIGINT"
    assert t["Lifecycle"] == {"Hook": "prestart", "Sidecar": False}
    assert t["Identity"] == {"Env": True}


@pytest.mark.parametrize(
    "text",
    [
        'job "broken" {',
        'job "x" { count = }',
        "}}}",
        'job "x" { driver = "unterminated }',
    ],
)
def test_syntax_errors_raise_job_spec_error(text: str) -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_hcl(text)
    [error] = caught.value.errors
    assert error.field.startswith("job.hcl:")
    assert error.message.startswith("invalid HCL: ")


def test_syntax_error_names_the_position() -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_hcl('job "x" {\n  group "g" {\n')
    assert caught.value.errors == [FieldError("job.hcl:3:1", "invalid HCL: unexpected end of file")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "must contain exactly one job block, found 0"),
        ('variable "v" {\n default = 1\n}', "must contain exactly one job block, found 0"),
        ('job "a" {}\njob "b" {}', "must contain exactly one job block, found 2"),
    ],
)
def test_job_block_count(text: str, message: str) -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_hcl(text)
    assert caught.value.errors == [FieldError("Job", message)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("job {}", "job block must have exactly one label (the job ID), got 0"),
        ('job "a" "b" {}', "job block must have exactly one label (the job ID), got 2"),
    ],
)
def test_job_block_label(text: str, message: str) -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_hcl(text)
    assert caught.value.errors == [FieldError("job.hcl:1:1", message)]


def test_misplaced_labels_are_reported_with_a_path() -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_hcl('job "j" {\n group "a" "b" {}\n}')
    assert caught.value.errors == [FieldError("Job.TaskGroups[0]", "group block takes one label, got 2")]
    with pytest.raises(JobSpecError) as caught:
        parse_hcl('job "j" {\n constraint "c" {}\n}')
    assert caught.value.errors == [FieldError("Job.Constraints[0]", "constraint block does not take a label")]


def test_missing_group_label_is_left_for_validation() -> None:
    converted: Any = parse_hcl('job "j" {\n group {\n task "t" {\n driver = "exec"\n }\n }\n}')
    with pytest.raises(JobSpecError) as caught:
        normalize_job(converted)
    assert caught.value.errors == [FieldError("Job.TaskGroups[0].Name", "is required")]


def test_invalid_values_surface_in_normalize() -> None:
    converted: Any = parse_hcl(
        'job "j" {\n priority = "high"\n group "g" {\n count = 1.5\n task "t" { driver = "x" }\n }\n}'
    )
    with pytest.raises(JobSpecError) as caught:
        normalize_job(converted)
    assert caught.value.errors == [
        FieldError("Job.Priority", "must be an integer, got string"),
        FieldError("Job.TaskGroups[0].Count", "must be an integer, got number"),
    ]


def test_runtime_interpolations_are_not_mistaken_for_variables() -> None:
    out: Any = parse_hcl('job "x" {\n  meta {\n    a = "${attr.kernel.name}"\n    b = "${node.unique.name}"\n  }\n}\n')
    assert out["Meta"] == {"a": "${attr.kernel.name}", "b": "${node.unique.name}"}
