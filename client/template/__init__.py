"""A Go text/template engine for the subset consul-template gives Nomad's template block:
actions with trim markers, pipelines, variables, if/with/range with else, Go's builtins and
consul-template's functions over Nomad variables and services. Pure: no I/O of its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from client.template.builtins import BUILTINS
from client.template.errors import MissingDependency, TemplateError
from client.template.evaluator import Executor
from client.template.functions import FUNCTION_NAMES, Data, nomad_functions, standard_functions
from client.template.nodes import Node
from client.template.parser import parse

__all__ = ["Data", "MissingDependency", "Template", "TemplateError"]
KNOWN = FUNCTION_NAMES | frozenset(BUILTINS)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Template:
    name: str
    nodes: tuple[Node, ...]

    @classmethod
    def parse(cls, name: str, text: str, left: str = "{{", right: str = "}}") -> Template:
        """Raises TemplateError (with line and column) for a template that does not parse."""
        return cls(name, parse(name, text, KNOWN, left, right))

    def render(
        self,
        data: Data,
        env: Mapping[str, str],
        *,
        missing_key_error: bool = False,
        now: Callable[[], datetime] = _now,
        dot: Any = None,
    ) -> str:
        """Raises TemplateError, or MissingDependency when data it needs is not there yet."""
        functions = {**BUILTINS, **standard_functions(env, now), **nomad_functions(data)}
        return Executor(self.name, functions, missing_key_error).run(self.nodes, dot)
