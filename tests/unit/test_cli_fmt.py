"""`corral fmt`: HCL's canonical layout, -check, -write, -list, stdin, invalid files."""

from __future__ import annotations

import io
from pathlib import Path

import hcl2
import pytest
from click.testing import CliRunner

from app.cli import main
from app.cli.local.hcl_format import format_hcl
from app.cli.local.hcl_spacing import space_line

pytestmark = pytest.mark.unit

MESSY = """job   "web"   {
datacenters=["dc1"]
   type = "service"

  group "g" {
    count=2
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "echo hi"]
      }
      template {
        data = <<EOT
  kept   as written
EOT
        destination = "local/x"
      }
      # a comment
      env {
        A = "1"
        LONGER_NAME = "x = y"
      }
    }
  }
}
"""

TIDY = """job "web" {
  datacenters = ["dc1"]
  type        = "service"

  group "g" {
    count = 2
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hi"]
      }
      template {
        data        = <<EOT
  kept   as written
EOT
        destination = "local/x"
      }
      # a comment
      env {
        A           = "1"
        LONGER_NAME = "x = y"
      }
    }
  }
}
"""


def test_the_layout_is_canonical_stable_and_means_the_same() -> None:
    assert format_hcl(MESSY) == TIDY
    assert format_hcl(TIDY) == TIDY
    assert hcl2.load(io.StringIO(MESSY)) == hcl2.load(io.StringIO(TIDY))


def test_check_write_and_list(tmp_path: Path) -> None:
    job = tmp_path / "web.nomad.hcl"
    job.write_text(MESSY)
    (tmp_path / "notes.txt").write_text("not hcl {")
    checked = CliRunner().invoke(main, ["fmt", "-check", str(tmp_path)])
    assert checked.exit_code == 1 and checked.output == f"{job}\n" and job.read_text() == MESSY
    printed = CliRunner().invoke(main, ["fmt", "-list=false", "-write=false", str(job)])
    assert printed.exit_code == 0 and printed.output == TIDY and job.read_text() == MESSY
    written = CliRunner().invoke(main, ["fmt", str(tmp_path)])
    assert written.exit_code == 0 and written.output == f"{job}\n" and job.read_text() == TIDY
    again = CliRunner().invoke(main, ["fmt", "-check", str(tmp_path)])
    assert again.exit_code == 0 and again.output == ""


def test_stdin_and_invalid_files(tmp_path: Path) -> None:
    piped = CliRunner().invoke(main, ["fmt", "-"], input=MESSY)
    assert piped.exit_code == 0 and piped.output == TIDY
    broken = tmp_path / "broken.hcl"
    broken.write_text('job "x" {\n  a = \n')
    refused = CliRunner().invoke(main, ["fmt", str(broken)])
    assert refused.exit_code == 1 and f"{broken}: invalid HCL" in refused.output
    assert broken.read_text() == 'job "x" {\n  a = \n'
    missing = CliRunner().invoke(main, ["fmt", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "No file or directory" in missing.output


SPACED = """variable "list" {
  default = [1,2,3]
}

job "web" {
  datacenters=["dc1","dc2"]
  meta={owner="ops",tier=2}
  group "g" {
    count=2+1
    task "t" {
      driver = "raw_exec"
      config {
        command="/bin/sh"
        args=[ "-c" , "echo ${NOMAD_ALLOC_ID}&&sleep ${1+1}" ]
        doubled=[for x in var.list: x*2 if x!=2]
        offset = -1
        mode = var.list[0]==1?"a":"b"
        label = format("%s-%d",  "a", length(var.list) -1)
        ids = var.list[*]
        none = {}
      }
      resources { cpu=100 }   # kept   as written
    }
  }
}
"""

SPACED_TIDY = """variable "list" {
  default = [1, 2, 3]
}

job "web" {
  datacenters = ["dc1", "dc2"]
  meta        = { owner = "ops", tier = 2 }
  group "g" {
    count = 2 + 1
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo ${NOMAD_ALLOC_ID}&&sleep ${1 + 1}"]
        doubled = [for x in var.list : x * 2 if x != 2]
        offset  = -1
        mode    = var.list[0] == 1 ? "a" : "b"
        label   = format("%s-%d", "a", length(var.list) - 1)
        ids     = var.list[*]
        none    = {}
      }
      resources { cpu = 100 } # kept   as written
    }
  }
}
"""
JOBSPECS = Path(__file__).resolve().parents[1] / "jobspecs"


def test_spacing_inside_expressions_is_hclwrites() -> None:
    """Operators, commas, brackets, braces, calls, indexes, negation and for expressions spaced
    as `nomad fmt` spaces them, inside a string's `${...}` too; a string's text and a comment's
    kept as written."""
    assert format_hcl(SPACED) == SPACED_TIDY
    assert format_hcl(SPACED_TIDY) == SPACED_TIDY
    assert hcl2.load(io.StringIO(SPACED)) == hcl2.load(io.StringIO(SPACED_TIDY))


@pytest.mark.parametrize("path", sorted(JOBSPECS.glob("*.hcl")), ids=lambda p: p.name)
def test_the_repository_job_files_are_already_canonical(path: Path) -> None:
    """Real job files written in Nomad's canonical form (a heredoc between aligned attributes
    included) come out unchanged."""
    source = path.read_text()
    assert format_hcl(source) == source


def test_an_unreadable_line_is_left_as_it_is() -> None:
    assert space_line('a = "open') == 'a = "open'
    assert space_line("a=1 # x=1") == "a = 1 # x=1"
    assert space_line("x = a-1") == "x = a-1"  # one identifier: HCL names may hold dashes


def test_trailing_comments_of_consecutive_lines_are_aligned() -> None:
    source = 'job "x" {\n  a=1 # one\n  bbbb = "${b}"   # two\n  # alone\n  c = 3  # three\n}\n'
    assert format_hcl(source) == (
        'job "x" {\n  a    = 1      # one\n  bbbb = "${b}" # two\n  # alone\n  c = 3 # three\n}\n'
    )


def test_a_strings_text_is_kept_and_its_interpolations_spaced() -> None:
    assert space_line('a="$${x+1} \\"q\\" ${ x+1 } ${f( 1,2 )}"') == 'a = "$${x+1} \\"q\\" ${x + 1} ${f(1, 2)}"'
    assert space_line('a = "${~ x ~}"') == 'a = "${~ x ~}"'  # a strip marker: left as written
