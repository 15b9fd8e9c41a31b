"""The Go text/template engine: each construct, Go's builtins, and errors with positions."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from client.template import MissingDependency, Template, TemplateError
from client.template.values import Service, ServiceSnippet, VarMeta

pytestmark = pytest.mark.unit


class FakeData:
    def __init__(self) -> None:
        self.vars: dict[str, dict[str, str]] = {"nomad/jobs/web": {"greeting": "hello", "color": "blue"}}
        self.regs = {
            "web": [
                Service("a1", "web", "default", "dc1", "10.0.0.1", 8080, ("v1", "http"), "n1", "al1", "web"),
                Service("a2", "web", "default", "dc1", "10.0.0.2", 8081, (), "n2", "al2", "web"),
            ]
        }

    def variable(self, path: str) -> Mapping[str, str] | None:
        return self.vars.get(path)

    def variables(self, prefix: str) -> list[VarMeta]:
        return [VarMeta("default", p, 1, 2, 3, 4) for p in sorted(self.vars) if p.startswith(prefix)]

    def service(self, name: str) -> list[Service]:
        return self.regs.get(name, [])

    def services(self) -> list[ServiceSnippet]:
        return [ServiceSnippet(name, ("http",)) for name in sorted(self.regs)]


NOW = datetime(2024, 3, 5, 7, 8, 9, tzinfo=UTC)


def render(text: str, env: Mapping[str, str] | None = None, dot: Any = None, **kw: Any) -> str:
    left, right = kw.pop("left", "{{"), kw.pop("right", "}}")
    template = Template.parse("t", text, left, right)
    return template.render(FakeData(), env or {}, now=lambda: NOW, dot=dot, **kw)


def error(text: str, **kw: Any) -> TemplateError:
    with pytest.raises(TemplateError) as caught:
        render(text, **kw)
    return caught.value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text", "plain text"),
        ("a {{ 1 }} b", "a 1 b"),
        ("a  {{- 1 -}}  b", "a1b"),
        ("a \n {{- /* comment */ -}} \n b", "ab"),
        ("a{{/* comment */}}b", "ab"),
        ("{{ -3 }}", "-3"),
        ("{{ 1.5 }} {{ 0x1F }} {{ 1e6 }} {{ 'a' }}", "1.5 31 1e+06 97"),
        ('{{ "a\\tb\\u00e9" }}|{{ `raw\\n` }}', "a\tbé|raw\\n"),
        ("{{ true }} {{ false }} {{ nil }}", "true false <nil>"),
        ("{{ .Missing }}", "<no value>"),
    ],
)
def test_text_literals_and_trim_markers(text: str, expected: str) -> None:
    assert render(text, dot={}) == expected


def test_fields_on_maps_and_nested() -> None:
    assert render("{{ .a.b }} {{ .c }}", dot={"a": {"b": "x"}, "c": [1, 2]}) == "x [1 2]"


def test_variables_declare_assign_and_scope() -> None:
    text = "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ $y }}{{ end }}{{ $x }}"
    assert render(text) == "32"
    assert render("{{ $ }}", dot="root") == "root"
    assert render("{{ with .a }}{{ $.b }}{{ end }}", dot={"a": 1, "b": "top"}) == "top"


def test_variable_declared_in_if_is_not_visible_after_end() -> None:
    err = error("{{ if $x := 1 }}{{ $x }}{{ end }}{{ $x }}")
    assert (err.line, err.col) == (1, 37)
    assert "undefined variable" in str(err)


def test_if_else_if_else() -> None:
    text = "{{ if eq .n 1 }}one{{ else if eq .n 2 }}two{{ else }}many{{ end }}"
    assert [render(text, dot={"n": n}) for n in (1, 2, 3)] == ["one", "two", "many"]


@pytest.mark.parametrize("value", [0, "", [], {}, None, False])
def test_falsy_values(value: Any) -> None:
    assert render("{{ if . }}t{{ else }}f{{ end }}", dot=value) == "f"


def test_with_sets_dot_and_else() -> None:
    assert render("{{ with .a }}{{ . }}{{ else }}none{{ end }}", dot={"a": "x"}) == "x"
    assert render("{{ with .a }}{{ . }}{{ else }}none{{ end }}", dot={"a": ""}) == "none"
    assert render("{{ with .a }}A{{ else with .b }}{{ . }}{{ end }}", dot={"a": 0, "b": "B"}) == "B"


def test_range_forms() -> None:
    assert render("{{ range . }}[{{ . }}]{{ end }}", dot=["a", "b"]) == "[a][b]"
    assert render("{{ range $i, $v := . }}{{ $i }}={{ $v }};{{ end }}", dot=["a", "b"]) == "0=a;1=b;"
    assert render("{{ range $k, $v := . }}{{ $k }}={{ $v }};{{ end }}", dot={"b": 2, "a": 1}) == "a=1;b=2;"
    assert render("{{ range $v := . }}{{ $v }}{{ end }}", dot=[1, 2]) == "12"
    assert render("{{ range . }}x{{ else }}empty{{ end }}", dot=[]) == "empty"
    assert render("{{ range 3 }}{{ . }}{{ end }}") == "012"


def test_range_break_and_continue() -> None:
    text = "{{ range . }}{{ if eq . 2 }}{{ continue }}{{ end }}{{ if eq . 4 }}{{ break }}{{ end }}{{ . }}{{ end }}"
    assert render(text, dot=[1, 2, 3, 4, 5]) == "13"


def test_pipelines_feed_the_last_argument() -> None:
    assert render('{{ "a,b" | split "," | join "+" }}') == "a+b"
    assert render('{{ "x" | printf "%s-%s" "y" }}') == "y-x"
    assert render('{{ (split "," "a,b,c") | len }}') == "3"


def test_parenthesized_chain_field() -> None:
    assert render('{{ (index . "a").b }}', dot={"a": {"b": "deep"}}) == "deep"


def test_comparison_functions() -> None:
    assert render("{{ eq 1 1 }} {{ eq 1 2 3 1 }} {{ ne 1 2 }} {{ lt 1 2 }} {{ le 2 2 }}") == "true true true true true"
    assert render('{{ gt "b" "a" }} {{ ge 1.5 2.5 }}') == "true false"
    assert "incompatible types for comparison" in str(error('{{ eq 1 "1" }}'))
    assert "incompatible types for comparison" in str(error("{{ lt 1 1.5 }}"))


def test_and_or_not_short_circuit() -> None:
    assert render('{{ and 1 0 2 }} {{ and 1 2 }} {{ or 0 "" 3 }} {{ or 0 "" }} {{ not 0 }}') == "0 2 3  true"
    # `or` stops at the first truthy argument: the failing index is never evaluated.
    assert render("{{ or 1 (index . 5) }}", dot=[]) == "1"


def test_len_index_print() -> None:
    assert render('{{ len "abc" }} {{ len . }} {{ index . 1 }}', dot=["x", "y"]) == "3 2 y"
    assert render('{{ index . "k" 0 }}', dot={"k": ["v"]}) == "v"
    assert render('{{ print "a" 1 2 "b" }}|{{ println "a" 1 }}') == "a1 2b|a 1\n"
    assert "index out of range: 5" in str(error("{{ index . 5 }}", dot=[1]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{{ printf "%d|%5d|%-3d|%03d" 7 7 7 7 }}', "7|    7|7  |007"),
        ('{{ printf "%s|%q|%v|%t" "a" "b" 1.5 true }}', 'a|"b"|1.5|true'),
        ('{{ printf "%.2f|%f|%x|%X" 3.14159 1.0 255 255 }}', "3.14|1.000000|ff|FF"),
        ('{{ printf "%d%%" 50 }}', "50%"),
        ('{{ printf "%d" "s" }}', "%!d(string=s)"),
        ('{{ printf "%s %s" "a" }}', "a %!s(MISSING)"),
        ('{{ printf "%s" "a" "b" }}', "a%!(EXTRA string=b)"),
    ],
)
def test_printf_verbs(text: str, expected: str) -> None:
    assert render(text) == expected


def test_env_reads_the_task_environment_only() -> None:
    assert render('{{ env "NOMAD_ALLOC_ID" }}|{{ env "HOME" }}', env={"NOMAD_ALLOC_ID": "abc"}) == "abc|"


def test_string_functions() -> None:
    assert render('{{ "AbC" | toLower }} {{ "abc" | toUpper }} [{{ "  x \\n" | trimSpace }}]') == "abc ABC [x]"
    assert render('{{ "a.b.c" | replaceAll "." "_" }}') == "a_b_c"
    assert render('{{ "hello" | contains "ell" }} {{ contains "x" . }} {{ contains "z" . }}', dot=["x"]) == (
        "true true false"
    )
    assert render('{{ "" | split "," | len }}') == "0"


def test_encoding_functions() -> None:
    assert render('{{ "hi there" | base64Encode }}') == "aGkgdGhlcmU="
    assert render('{{ "aGkgdGhlcmU=" | base64Decode }}') == "hi there"
    assert "base64Decode" in str(error('{{ "!!!" | base64Decode }}'))


def test_json_functions() -> None:
    assert render('{{ (parseJSON "{\\"a\\": [1, 2]}").a }}') == "[1 2]"
    assert render("{{ toJSON . }}", dot={"b": 1, "a": [True, None]}) == '{"a":[true,null],"b":1}'
    assert "invalid JSON" in str(error('{{ parseJSON "{" }}'))


def test_parse_functions() -> None:
    assert render('{{ parseInt "42" | printf "%d" }} {{ parseBool "true" }} {{ parseFloat "1.5" }}') == "42 true 1.5"


def test_timestamp_layouts() -> None:
    assert render("{{ timestamp }}") == "2024-03-05T07:08:09Z"
    assert render('{{ timestamp "2006-01-02 15:04:05 Mon Jan" }}') == "2024-03-05 07:08:09 Tue Mar"
    assert render('{{ timestamp "unix" }}') == str(int(NOW.timestamp()))


def test_nomad_var_with_and_range_over_items() -> None:
    text = (
        '{{ with nomadVar "nomad/jobs/web" }}{{ .greeting }}{{ range $k, $v := . }} {{ $k }}={{ $v }}{{ end }}{{ end }}'
    )
    assert render(text) == "hello color=blue greeting=hello"
    text = '{{ range nomadVar "nomad/jobs/web" }}{{ .Key }}:{{ .Value }};{{ end }}'
    assert render(text) == "color:blue;greeting:hello;"
    assert render('{{ with nomadVar "nomad/jobs/web" }}{{ if eq .color "blue" }}ok{{ end }}{{ end }}') == "ok"


def test_nomad_var_missing_is_a_missing_dependency() -> None:
    with pytest.raises(MissingDependency, match="nomad/jobs/none"):
        render('{{ with nomadVar "nomad/jobs/none" }}x{{ end }}')


def test_nomad_var_exists_and_list() -> None:
    assert render('{{ nomadVarExists "nomad/jobs/web" }} {{ nomadVarExists "x" }}') == "true false"
    assert render('{{ range nomadVarList "nomad/" }}{{ .Path }}@{{ .ModifyIndex }}{{ end }}') == "nomad/jobs/web@2"


def test_nomad_service_fields() -> None:
    text = '{{ range nomadService "web" }}{{ .Address }}:{{ .Port }} {{ join "," .Tags }};{{ end }}'
    assert render(text) == "10.0.0.1:8080 v1,http;10.0.0.2:8081 ;"
    assert render("{{ range nomadServices }}{{ .Name }} {{ .Tags }}{{ end }}") == "web [http]"
    assert render('{{ range nomadService "none" }}x{{ else }}no instances{{ end }}') == "no instances"


def test_custom_delimiters() -> None:
    assert render('[[ env "A" ]] {{ literal }}', env={"A": "a"}, left="[[", right="]]") == "a {{ literal }}"
    assert render("<%- 1 -%> x", left="<%", right="%>") == "1x"


def test_missing_key_error() -> None:
    assert render("{{ .nope }}", dot={}) == "<no value>"
    err = error("{{ .nope }}", dot={}, missing_key_error=True)
    assert 'map has no entry for key "nope"' in str(err)


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("{{ if true }}x", (1, 4), "has no {{end}}"),
        ("a\n{{ end }}", (2, 4), "unexpected {{end}}"),
        ("ok\n  {{ nope 1 }}", (2, 6), 'function "nope" not defined'),
        ("{{ $x }}", (1, 4), "undefined variable"),
        ('{{ "open }}', (1, 4), "unterminated quoted string"),
        ("{{ 1 ", (1, 1), "unclosed action"),
        ("{{ break }}", (1, 4), "outside {{range}}"),
        ("{{ ) }}", (1, 4), "unexpected <)>"),
        ('{{ template "x" }}', (1, 4), "not supported"),
        ("{{ }}", (1, 4), "missing value"),
        ("{{ 1 | }}", (1, 8), 'unexpected "}}"'),
    ],
)
def test_parse_errors_name_line_and_column(text: str, position: tuple[int, int], message: str) -> None:
    err = error(text)
    assert (err.line, err.col) == position
    assert message in err.message
    assert str(err).startswith(f"template: t:{position[0]}:{position[1]}: ")


def test_execution_errors_have_positions() -> None:
    err = error("line\n{{ .a.b }}", dot={"a": 5})
    assert (err.line, err.col) == (2, 4)
    assert "can't evaluate field b in type int" in str(err)
    assert "wrong number of args for toLower" in str(error('{{ toLower "a" "b" }}'))
    assert "can't give argument to non-function" in str(error("{{ .a 1 }}", dot={"a": 1}))
    assert "range can't iterate over" in str(error('{{ range "s" }}{{ end }}'))
    assert "nil pointer evaluating" in str(error("{{ .a.b }}", dot={}))


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1.5, "1.5"), (3.0, "3"), (123456.0, "123456"), (1234567.0, "1.234567e+06"), (0.0001, "0.0001"), (1e-5, "1e-05")],
)
def test_floats_print_as_go_does(value: float, expected: str) -> None:
    assert render("{{ . }}", dot=value) == expected
