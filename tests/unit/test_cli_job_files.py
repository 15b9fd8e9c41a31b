"""The CLI's job file handling before any request: one clear line for a bad file, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main

pytestmark = pytest.mark.unit

NOWHERE = {"CORRAL_ADDR": "http://127.0.0.1:9"}  # nothing listens: only parse errors can be printed


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'job "j" {\n  meta {\n    a = "\xff"\n  }\n}\n', "bad.nomad.hcl:3: is not valid UTF-8"),
        (b'\xef\xbb\xbfjob "j" {}\n', "byte order mark"),
        (b'job "j" {\n  group "g" {\n    cout = 3\n  }\n}\n', 'bad.nomad.hcl:3:5: unsupported argument "cout"'),
    ],
)
@pytest.mark.parametrize("command", ["validate", "run", "plan"])
def test_bad_job_files_give_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes, expected: str, command: str
) -> None:
    # Before: a non-UTF-8 file gave a 33-line traceback, and the typo was silently dropped.
    monkeypatch.chdir(tmp_path)
    Path("bad.nomad.hcl").write_bytes(content)
    result = CliRunner().invoke(main, ["job", command, "bad.nomad.hcl"], env=NOWHERE)
    assert result.exit_code != 0
    assert expected in result.output, result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, UnicodeError)


def test_init_writes_a_file_that_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(main, ["job", "init"]).exit_code == 0
    assert Path("example.nomad.hcl").read_text().startswith("# An example corral job")
    again = runner.invoke(main, ["job", "init"])
    assert again.exit_code != 0 and "already exists" in again.output
    assert runner.invoke(main, ["job", "init", "-force"]).exit_code == 0
