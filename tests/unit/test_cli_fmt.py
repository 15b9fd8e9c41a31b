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


# Template sequences as hclwrite's format spaces them (hclwrite/format.go, spaceAfterToken): the
# outputs were checked against hclwrite's own (its format_test.go cases and `terraform fmt`, which
# formats through hclwrite), each case naming the rule that decides it.
TEMPLATE_CASES = [
    # `${` / `%{` count as open brackets and `}` as a close one: no blank inside them.
    ('a="hello ${ name }"', 'a = "hello ${name}"'),
    ('a="${b}${c}${ d } ${e}"', 'a = "${b}${c}${d} ${e}"'),
    # The `~` strip markers belong to the opener (`${~`, `%{~`) and closer (`~}`) tokens.
    ('a="hello ${~ name ~}"', 'a = "hello ${~name~}"'),
    ('g = "a ${~ b ~} c %{~ if d ~}e%{~ else ~}f%{~ endif ~}"', 'g = "a ${~b~} c %{~if d~}e%{~else~}f%{~endif~}"'),
    # A directive's words are ordinary tokens: one blank between them, the comma rule inside.
    ('"%{if true}${var.foo}%{endif}"', '"%{if true}${var.foo}%{endif}"'),
    ('f = "%{ for k,v in m ~}${ k }=${ v }%{ endfor ~}"', 'f = "%{for k, v in m~}${k}=${v}%{endfor~}"'),
    # An object right inside a sequence: a blank between the opener and `{`, and `}` and the closer.
    ('c="x${{a=1}}"', 'c = "x${ { a = 1 } }"'),
    ('j = "${ {a=1}.a }"', 'j = "${ { a = 1 }.a}"'),
    # A minus right after the opener is not after anything hclwrite takes for a negation's left:
    # it is spaced as a subtraction (hclwrite's heuristic), while `!` never is.
    ('e = "x${ -1 } ${ !x } ${ a - -1 }"', 'e = "x${- 1} ${!x} ${a - -1}"'),
    # The expression inside follows the usual rules: calls, indexes, splats, brackets, strings.
    ('e = "${ ( 1 ) } ${ [1,2] } ${ f( 1 ) } ${ a[0] }${ d[*].e }"', 'e = "${(1)} ${[1, 2]} ${f(1)} ${a[0]}${d[*].e}"'),
    ('h = "${ join(",",[ "a","b" ]) } \\"${ x }\\""', 'h = "${join(",", ["a", "b"])} \\"${x}\\""'),
    ('i = "x${ a ? "y${ b }" : "c" }"', 'i = "x${a ? "y${b}" : "c"}"'),
    # `$${` and `%%{` are literal text, not sequences: kept as written.
    ('d = "$${ x } %%{ y }"', 'd = "$${ x } %%{ y }"'),
]


@pytest.mark.parametrize(("source", "expected"), TEMPLATE_CASES)
def test_a_quoted_templates_sequences_are_spaced_as_hclwrite_spaces_them(source: str, expected: str) -> None:
    assert space_line(source) == expected
    assert space_line(expected) == expected


HEREDOCS = """task "t" {
template {
data = <<EOT
${ a }
  %{ for x in xs ~}
    ${ x }-${ upper( x ) }
  %{ endfor }
  $${ kept } %%{ kept }
  "${ q }" \\${ y }
EOT
destination="x"
}
template {
data = <<-EOH
  {{ range service "db" }}${ a+b }{{ end }}
  ${~ trimspace( x ) ~}
  ${{ blahblahblah = x }}
  EOH
}
}
"""

HEREDOCS_TIDY = """task "t" {
  template {
    data        = <<EOT
${a}
  %{for x in xs~}
    ${x}-${upper(x)}
  %{endfor}
  $${ kept } %%{ kept }
  "${q}" \\${y}
EOT
    destination = "x"
  }
  template {
    data = <<-EOH
  {{ range service "db" }}${a + b}{{ end }}
  ${~trimspace(x)~}
  ${ { blahblahblah = x } }
  EOH
  }
}
"""


def test_a_heredocs_sequences_are_spaced_and_its_text_kept() -> None:
    """hclwrite spaces a heredoc's template tokens as a quoted string's; its literal text (the
    lines' indentation, Go-template `{{ }}`, quotes, a backslash: no escapes in a heredoc) and
    its end marker are kept, and the lines are not indented."""
    assert format_hcl(HEREDOCS) == HEREDOCS_TIDY
    assert format_hcl(HEREDOCS_TIDY) == HEREDOCS_TIDY
    hcl2.load(io.StringIO(HEREDOCS_TIDY))  # still HCL (python-hcl2 keeps a heredoc's raw text)


def test_a_sequence_running_past_its_heredoc_line_is_kept_as_written() -> None:
    """hclwrite re-indents the lines of a `${` that spans lines; corral keeps such a sequence
    (and the heredoc's lines after it) as written rather than guess."""
    source = "a = <<EOT\n${ x }${ f(\n  1 ) } ${ y }\n${ z }\nEOT\nb=1\n"
    assert format_hcl(source) == "a = <<EOT\n${x}${ f(\n  1 ) } ${ y }\n${ z }\nEOT\nb = 1\n"
