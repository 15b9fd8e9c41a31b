"""Job-spec rules for the blocks the client acts on around a task (volume, volume_mount,
artifact, logs) and the registration warnings for attributes nothing acts on."""

from __future__ import annotations

import pytest

from app.jobspec import normalize_job, parse_hcl
from app.jobspec.errors import JobSpecError
from app.jobspec.warnings import job_warnings

pytestmark = pytest.mark.unit


def _job(group_body: str = "", task_body: str = "") -> str:
    return (
        f'job "j" {{\n  group "g" {{\n{group_body}\n    task "t" {{\n      driver = "mock"\n'
        f"{task_body}\n    }}\n  }}\n}}\n"
    )


def _problems(text: str) -> dict[str, str]:
    with pytest.raises(JobSpecError) as caught:
        normalize_job(parse_hcl(text))
    return {error.field: error.message for error in caught.value.errors}


HOST_VOLUME = 'volume "data" {\n type = "host"\n source = "shared"\n read_only = true\n}'


def test_a_volume_mount_must_name_a_declared_volume() -> None:
    mount = 'volume_mount {\n volume = "nope"\n destination = "/data"\n}'
    problems = _problems(_job(HOST_VOLUME, mount))
    assert problems == {"Job.TaskGroups[0].Tasks[0].VolumeMounts[0].Volume": 'references undefined volume "nope"'}


def test_volume_requests_are_checked() -> None:
    text = _job('volume "a" {\n type = "host"\n}\nvolume "b" {\n type = "nfs"\n source = "x"\n}')
    problems = _problems(text)
    assert problems['Job.TaskGroups[0].Volumes["a"].Source'] == "volume has an empty source"
    assert problems['Job.TaskGroups[0].Volumes["b"].Type'] == 'volume has unrecognized type "nfs"'


def test_host_volumes_and_their_mounts_are_kept_and_not_warned_about() -> None:
    mount = 'volume_mount {\n volume = "data"\n destination = "/data"\n read_only = true\n}'
    spec = normalize_job(parse_hcl(_job(HOST_VOLUME, mount)))
    group = spec["TaskGroups"][0]
    assert group["Volumes"]["data"] == {
        "Name": "data",
        "Type": "host",
        "Source": "shared",
        "ReadOnly": True,
        "Sticky": False,
        "PerAlloc": False,
    }
    assert group["Tasks"][0]["VolumeMounts"] == [{"Volume": "data", "Destination": "/data", "ReadOnly": True}]
    assert job_warnings(spec) == []


@pytest.mark.parametrize(
    ("artifact", "field", "message"),
    [
        ('source = "https://x/a"\n mode = "tree"', "GetterMode", "must be one of"),
        ('source = "https://x/a"\n destination = "../../etc"', "RelativeDest", "destination escapes allocation"),
        ("", "GetterSource", "source must be specified"),
        (
            'source = "https://x/a"\n options {\n checksum = "sha256:abcd"\n}',
            "GetterOptions.checksum",
            "invalid sha256",
        ),
        ('source = "https://x/a"\n options {\n checksum = "crc:00"\n}', "GetterOptions.checksum", "unsupported"),
        ('source = "https://x/a"\n options {\n checksum = "deadbeef"\n}', "GetterOptions.checksum", '"type:value"'),
    ],
)
def test_artifacts_are_checked(artifact: str, field: str, message: str) -> None:
    problems = _problems(_job(task_body=f"artifact {{\n {artifact}\n}}"))
    assert message in problems[f"Job.TaskGroups[0].Tasks[0].Artifacts[0].{field}"], problems


def test_artifacts_get_nomads_defaults_and_may_reach_the_shared_alloc_dir() -> None:
    text = _job(
        task_body='artifact {\n source = "https://x/a.tgz"\n}\nartifact {\n source = "https://x/b"\n'
        ' destination = "../alloc/data"\n options {\n checksum = "md5:${NOMAD_META_sum}"\n}\n}'
    )
    first, second = normalize_job(parse_hcl(text))["TaskGroups"][0]["Tasks"][0]["Artifacts"]
    assert first["RelativeDest"] == "local/" and first["GetterMode"] == "any"
    assert second["RelativeDest"] == "../alloc/data"  # interpolated checksums are checked on the client


def test_logs_are_checked_against_the_disk() -> None:
    problems = _problems(_job(task_body="logs {\n max_files = 0\n max_file_size = 0\n}"))
    assert problems["Job.TaskGroups[0].Tasks[0].LogConfig.MaxFiles"] == "minimum number of files is 1; got 0"
    assert problems["Job.TaskGroups[0].Tasks[0].LogConfig.MaxFileSizeMB"] == "minimum file size is 1MB; got 0"
    too_big = _problems(_job(task_body="logs {\n max_files = 40\n max_file_size = 10\n}"))
    assert too_big["Job.TaskGroups[0].Tasks[0].LogConfig"] == (
        "log storage (400 MB) must be less than requested disk capacity (300 MB)"
    )
    spec = normalize_job(parse_hcl(_job(task_body="logs {\n max_files = 2\n max_file_size = 1\n}")))
    assert spec["TaskGroups"][0]["Tasks"][0]["LogConfig"] == {"MaxFiles": 2, "MaxFileSizeMB": 1, "Disabled": False}


def test_a_job_read_back_with_the_default_logs_registers_again_on_a_small_disk() -> None:
    """GET /v1/job serves LogConfig spelt out (Nomad's defaults, 100 MB); a job with a 10 MB
    disk that never set logs must register again from that, as `job start` and the UI do."""
    text = _job(
        group_body="ephemeral_disk {\n size = 10\n}", task_body="logs {\n max_files = 10\n max_file_size = 10\n}"
    )
    spec = normalize_job(parse_hcl(text))
    assert spec["TaskGroups"][0]["Tasks"][0]["LogConfig"]["MaxFiles"] == 10
    assert normalize_job(spec)["TaskGroups"][0]["EphemeralDisk"]["SizeMB"] == 10


def test_every_attribute_nothing_acts_on_is_named() -> None:
    group = (
        'max_run_duration = "1h"\nprevent_reschedule_on_lost = true\n'
        "ephemeral_disk {\n sticky = true\n migrate = true\n}\n"
        'network {\n port "http" {\n host_network = "public"\n }\n}'
    )
    warnings = job_warnings(normalize_job(parse_hcl(_job(group, 'kind = "connect-proxy:web"'))))
    suffix = "is accepted and kept, but corral does not act on it"
    assert warnings == [
        f'group "g": max_run_duration {suffix}',
        f'group "g": prevent_reschedule_on_lost {suffix}',
        f'group "g": ephemeral_disk.sticky {suffix}',
        f'group "g": ephemeral_disk.migrate {suffix}',
        f"group \"g\": port 'http' host_network {suffix}",
        f'task "t": kind {suffix}',
    ]


def test_what_corral_acts_on_draws_no_warning() -> None:
    group = 'shutdown_delay = "5s"\nstop_after_client_disconnect = "1m"\nnetwork {\n port "http" {}\n}'
    task = 'shutdown_delay = "2s"\nlogs {\n disabled = true\n}\nartifact {\n source = "https://x/a"\n}'
    assert job_warnings(normalize_job(parse_hcl(_job(group, task)))) == []
