"""A pytest plugin: the Flask apps the tests build in-process cost a fraction of what they did.

Most integration tests build an app of their own (`create_app`, a fresh database each), and
two steps of it redo, every time, work whose result cannot change during a run: werkzeug
compiles two URL builders per route (an AST compiled to code, about 70 % of the app's CPU), and
`ensure_current` reads every migration file to find the head revision. On this 2-core machine
that was about 0.22 s of CPU per app, 0.04 s with both remembered, over hundreds of apps.
The servers the acceptance tests start are untouched (they are other processes), and so is what
any test checks: a builder is reused only for a rule identical in every input werkzeug reads
(tests/unit/test_fast_app.py builds every route of the app both ways), and the migrations
folder does not change while the tests run."""

from __future__ import annotations

import functools
from collections.abc import Callable

from werkzeug.routing.rules import Rule

import app.db.schema as schema

Builder = Callable[..., tuple[str, str]]
BuilderKey = tuple[str, tuple[tuple[bool, str], ...], tuple[tuple[str, type, str], ...], bool]

_original_compile_builder = Rule._compile_builder


def builder_key(rule: Rule, append_unknown: bool) -> BuilderKey:
    """Every input of `Rule._compile_builder`: the rule (the builder's name), its parsed parts,
    and each default it folds in, with the converter that folds it (named by the rule)."""
    defaults = tuple(
        sorted((name, type(rule._converters.get(name)), repr(value)) for name, value in (rule.defaults or {}).items())
    )
    return (rule.rule, tuple(rule._trace), defaults, append_unknown)


def remembered_builders() -> Callable[[Rule, bool], Builder]:
    """`Rule._compile_builder` that compiles each distinct builder once. The builder takes the
    rule as its first argument (werkzeug binds it with `__get__`), so one compiled function
    serves every identical rule of every app."""
    compiled: dict[BuilderKey, Builder] = {}

    def compile_builder(self: Rule, append_unknown: bool = True) -> Builder:
        key = builder_key(self, append_unknown)
        found = compiled.get(key)
        if found is None:
            found = compiled[key] = _original_compile_builder(self, append_unknown)
        return found

    return compile_builder


def pytest_configure() -> None:
    setattr(Rule, "_compile_builder", remembered_builders())  # noqa: B010  (mypy refuses a method assigned)
    schema.head_revision = functools.cache(schema.head_revision)
    schema.previous_revision = functools.cache(schema.previous_revision)
