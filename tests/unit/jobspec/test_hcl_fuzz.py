"""Whatever text or bytes arrive, the HCL front end answers with JobSpecError, never a traceback."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.jobspec import JobSpecError, normalize_job, parse_hcl

pytestmark = pytest.mark.unit

PIECES = [
    'job "j" {',
    "}",
    'group "g" {',
    'task "t" {',
    'driver = "mock"',
    "count = ",
    "var.x",
    "local.y",
    'variable "x" {',
    "default = 1",
    "locals {",
    "y = 2",
    '"${',
    "${var.x}",
    "$${x}",
    "%{ if true }",
    "upper(",
    ")",
    "[",
    "]",
    "{",
    "for v in [1,2]: v",
    "? 1 : 2",
    "1 / 0",
    "-",
    "!",
    "<<EOF\n",
    "\nEOF\n",
    "<<-EOT\n  a ${var.x}\n  EOT\n",
    'file("x")',
    'jsondecode("{")',
    "element([], 0)",
    "range(1e9)",
    "\n",
    " ",
    "=",
    ",",
    ".",
    "[0]",
    "\\",
    '"',
    "#",
    "//",
    "/*",
    "\ufeff",
    "\x00",
    "é",
    "null",
    "true",
    'resources { cpu = "500" }',
    "lifecycle { hook = 1 }",
    "meta = { a = [1] }",
    "env { A = {} }",
]

texts = st.lists(st.sampled_from(PIECES), max_size=30).map(" ".join) | st.text(max_size=60)
blobs = st.binary(max_size=60)
EXPRESSIONS = [
    "1",
    '"2"',
    "var.x",
    "local.y",
    "var.nope",
    "x",
    "attr.a",
    '"${attr.a}"',
    '"${var.x + 1}"',
    "[1, 2]",
    "{ a = 1 }",
    "upper(1)",
    'format("%d", "a")',
    "1 / 0",
    "true ? 1 : 2",
    "1 ? 1 : 2",
    "-true",
    "!1",
    "[for v in var.x : v]",
    "{ for k, v in { a = 1 } : k => v }",
    "concat([1], 2)",
    "length(1)",
    'lookup({}, "k")',
    'split(",", "a,b")[5]',
    "null",
    "1.5",
    "1e400",
    "-0",
    '"${}"',
    "max()",
    'substr("abc", 5, 1)',
    'regex("(", "a")',
    'jsondecode("[1,")',
    'tonumber("x")',
    "range(-1e3)",
]
ARGUMENTS = ["count", "meta", "cout", "max_client_disconnect", "shutdown_delay", "prevent_reschedule_on_lost"]
structured = st.builds(
    lambda name, expression: (
        'variable "x" {\n  default = 1\n}\nlocals {\n  y = var.x\n}\n'
        f'job "j" {{\n  group "g" {{\n    {name} = {expression}\n'
        '    task "t" {\n      driver = "mock"\n    }\n  }\n}\n'
    ),
    st.sampled_from(ARGUMENTS),
    st.sampled_from(EXPRESSIONS) | st.lists(st.sampled_from(EXPRESSIONS), min_size=2, max_size=3).map(" + ".join),
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts | blobs | structured)
def test_parse_never_raises_anything_but_job_spec_error(source: str | bytes) -> None:
    try:
        job = parse_hcl(source, variables={}, environ={"NOMAD_VAR_x": "1"})
    except JobSpecError:
        return
    with contextlib.suppress(JobSpecError):
        normalize_job(job)
