"""Nomad's filter= grammar (app.bexpr): every operator, go-bexpr's value coercion, selectors into
maps and lists, any/all, and errors that name the problem and its position; hypothesis checks
that no input makes the parser or evaluator raise anything but FilterError."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.bexpr import FilterError, FilterEvalError, FilterSyntaxError, compile_filter

pytestmark = pytest.mark.unit

JOB: dict[str, Any] = {
    "ID": "web-api",
    "Name": "web-api",
    "Status": "running",
    "Type": "service",
    "Priority": 50,
    "Stop": False,
    "Weight": 0.5,
    "Meta": {"team": "blue", "cost.center": "42", "empty": ""},
    "Datacenters": ["dc1", "dc2"],
    "Ports": [80, 443],
    "TaskGroups": [
        {"Name": "api", "Count": 3, "Tasks": [{"Name": "server", "Driver": "mock"}]},
        {"Name": "cache", "Count": 1, "Tasks": [{"Name": "redis", "Driver": "raw_exec"}]},
    ],
    "Periodic": None,
    "NoTags": [],
    "Obj": {},
}


def check(expression: str, obj: dict[str, Any] = JOB) -> bool:
    return compile_filter(expression).matches(obj)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("Status == running", True),
        ('Status == "running"', True),
        ("Status == `running`", True),
        ("Status == dead", False),
        ("Status != dead", True),
        ("Status != running", False),
        ("Name == web-api", None),  # '-' ends a bare word: a syntax error, as in go-bexpr
    ],
)
def test_equal_and_not_equal_on_strings(expression: str, expected: bool | None) -> None:
    if expected is None:
        with pytest.raises(FilterSyntaxError):
            compile_filter(expression)
    else:
        assert check(expression) is expected


def test_numbers_and_booleans_are_coerced_to_the_fields_type() -> None:
    assert check("Priority == 50")
    assert check('Priority == "50"')  # quoting does not matter: the field's type decides
    assert check('Priority == "0x32"')  # Go's integer syntax
    assert check("Priority != 49")
    assert check("Priority == -1") is False
    assert check("Weight == 0.5")
    assert check("Stop == false") and check("Stop == False") and check("Stop == 0") and check("Stop == f")
    assert check("Stop != true")
    with pytest.raises(FilterEvalError, match="not a boolean"):
        check("Stop == yes")
    with pytest.raises(FilterEvalError, match="not an integer"):
        check("Priority == high")
    with pytest.raises(FilterEvalError, match="cannot compare a list"):
        check("Datacenters == dc1")


def test_in_and_contains_on_lists_maps_and_strings() -> None:
    assert check("dc1 in Datacenters")
    assert check('"dc3" not in Datacenters')
    assert check("Datacenters contains dc2")
    assert check("Datacenters not contains dc9")
    assert check("443 in Ports")  # each element coerced to its own type
    assert check("Ports not contains 8080")
    assert check("team in Meta")  # a map: its keys
    assert check("Meta not contains owner")
    assert check("api in ID")  # a string: a substring
    assert check("ID contains web")
    with pytest.raises(FilterEvalError, match="cannot contain"):
        check("5 in Priority")


def test_is_empty_and_is_nil() -> None:
    assert check("NoTags is empty")
    assert check("Datacenters is not empty")
    assert check("Obj is empty")
    assert check("Meta.empty is empty")
    assert check("Periodic is nil")
    assert check("Meta is not nil")
    with pytest.raises(FilterEvalError, match="cannot be empty"):
        check("Priority is empty")


def test_matches_is_an_unanchored_re2_search() -> None:
    assert check('ID matches "^web-"')
    assert check('ID matches "api"')
    assert check('ID not matches "^db"')
    assert check('Status matches "^(running|pending)$"')
    with pytest.raises(FilterEvalError, match="cannot be matched"):
        check('Priority matches "5"')


def test_a_catastrophic_pattern_for_backtracking_engines_answers_at_once() -> None:
    obj = {"ID": "a" * 5000 + "!"}
    assert compile_filter('ID matches "^(a+)+$"').matches(obj) is False


def test_and_or_not_and_parentheses() -> None:
    assert check("Status == running and Priority == 50")
    assert not check("Status == running and Priority == 1")
    assert check("Status == dead or Priority == 50")
    assert check("not Status == dead")
    assert check("not not Status == running")
    assert check("(Status == dead or Status == running) and Type == service")
    assert not check("Status == dead or Status == pending and Type == service")
    # and binds tighter than or
    assert check("Type == service or Status == dead and Priority == 1")
    assert check("  ( Status == running )  ")


def test_selectors_into_maps() -> None:
    assert check("Meta.team == blue")
    assert check('Meta["cost.center"] == 42')
    assert check('"/Meta/team" == blue')  # a JSON pointer
    # A missing map key is "not present": nothing equals it, it is empty.
    assert not check("Meta.owner == blue")
    assert check("Meta.owner != blue")
    assert check("Meta.owner is empty")
    assert not check("Meta.owner is not empty")
    assert not check('Meta.owner matches "."')
    assert check("Periodic.Spec != x")  # through a null


def test_selectors_into_lists_take_an_index_or_any_all() -> None:
    assert check("TaskGroups.0.Name == api")
    assert check("TaskGroups.1.Tasks.0.Driver == raw_exec")
    assert not check("TaskGroups.7.Name == api")
    with pytest.raises(FilterEvalError, match="is a list; select an element by number"):
        check("TaskGroups.Name == api")
    assert check("any TaskGroups as g { g.Name == cache }")
    assert not check("all TaskGroups as g { g.Count == 3 }")
    assert check("any TaskGroups as _, g { any g.Tasks as t { t.Driver == mock } }")
    assert check("all TaskGroups as i, g { i == 0 or g.Name == cache }")
    assert check("any Meta as key { key == team }")
    assert check("any Meta as k, v { k == team and v == blue }")
    assert check("any Meta as _, v { v == 42 }")
    assert check("all NoTags as t { t == nothing }")
    assert not check("any Missing.List as t { t == x }", {"Missing": {}})


def test_unknown_top_level_fields_are_errors() -> None:
    with pytest.raises(FilterEvalError, match="no field 'Colour'"):
        check("Colour == red")


@pytest.mark.parametrize(
    ("expression", "problem", "position"),
    [
        ("", "expected a selector or a value", 1),
        ("Status ==", "expected a value", 10),
        ("Status = running", "unexpected character '='", 8),
        ("Status == running and", "expected a selector or a value", 22),
        ("(Status == running", "unmatched parenthesis", 19),
        ("Status == running)", "expected 'and', 'or' or the end", 18),
        ('Status == "running', "unterminated string literal", 11),
        ('Status == "\\q"', "invalid escape sequence", 12),
        ("Priority == 007", "invalid number literal", 13),
        ("Priority == 5x", "invalid number literal", 13),
        ("Meta[team] == x", "an index must be a quoted string", 6),
        ('Meta["team" == x', "unclosed index", 13),
        ("Meta. == x", "expected a name or an index after '.'", 6),
        ('Status matches "("', "invalid regular expression", 16),
        ('Status matches "(?=x)"', "invalid regular expression", 16),
        ("Status is full", "'empty' or 'nil' after 'is'", 11),
        ("Status likes x", "expected an operator", 8),
        ('"text" == x', "expected a selector", 1),
        ("x in 5", "a selector after 'in'", 6),
        ("any TaskGroups as { x == 1 }", "a name to bind", 19),
    ],
)
def test_syntax_errors_name_the_problem_and_position(expression: str, problem: str, position: int) -> None:
    with pytest.raises(FilterSyntaxError) as caught:
        compile_filter(expression)
    assert problem in caught.value.message
    assert caught.value.position + 1 == position
    assert f"at position {position}" in str(caught.value)


def test_string_escapes() -> None:
    assert check('Name == "tab\\there"', {"Name": "tab\there"})
    assert check('Name == "quote\\"inside"', {"Name": 'quote"inside'})
    assert check('Name == "\\u00e9t\\x41"', {"Name": "étA"})
    assert check("Name == `raw\\n`", {"Name": "raw\\n"})


def test_nesting_is_bounded() -> None:
    with pytest.raises(FilterSyntaxError, match="nested more than"):
        compile_filter("(" * 200 + "a == 1" + ")" * 200)
    with pytest.raises(FilterSyntaxError, match="nested more than"):
        compile_filter("not " * 200 + "a == 1")
    long_chain = " and ".join(["Status == running"] * 500)
    assert check(long_chain)


WORDS = st.sampled_from(
    [
        "Status",
        "Meta",
        "Meta.team",
        "TaskGroups",
        "and",
        "or",
        "not",
        "in",
        "contains",
        "matches",
        "is",
        "empty",
        "nil",
        "any",
        "all",
        "as",
        "==",
        "!=",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        ",",
        "_",
        '"x"',
        "`y`",
        "5",
        "-1",
        "0.5",
        ".",
        "\\",
        '"',
        "running",
        "TaskGroups.0",
        '"/Meta/team"',
        "*",
        "\x00",
        "é",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.text(max_size=60), st.lists(WORDS, max_size=14).map(" ".join), st.lists(WORDS, max_size=14).map("".join)
    )
)
def test_parsing_and_evaluating_raise_only_filter_errors(text: str) -> None:
    try:
        predicate = compile_filter(text)
    except FilterError:
        return
    with contextlib.suppress(FilterError):
        predicate.matches(JOB)
