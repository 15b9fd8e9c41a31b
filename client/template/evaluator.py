"""Executes a parse tree against a value (the dot) with a set of functions, as Go's
text/template does: output of actions, truth, scoping of variables, range over lists,
maps and integers, break and continue, and lazy and/or."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

from client.template.errors import MissingDependency, TemplateError
from client.template.nodes import (
    Action,
    Branch,
    Chain,
    Command,
    Dot,
    Field,
    Ident,
    Literal,
    LoopControl,
    Node,
    Operand,
    Pipeline,
    Pos,
    Text,
    Variable,
)
from client.template.values import MISSING, go_str, truth

Function = Callable[..., Any]
_NO_ARG = object()  # no value piped in from the previous command


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class FunctionError(Exception):
    """A function refusing its arguments; reported as Go's ``error calling NAME: ...``."""


@dataclass
class Executor:
    name: str
    functions: Mapping[str, Function]
    missing_key_error: bool = False

    def __post_init__(self) -> None:
        self.vars: list[tuple[str, Any]] = []
        self.out: list[str] = []

    def run(self, nodes: tuple[Node, ...], dot: Any) -> str:
        self.vars, self.out = [("$", dot)], []
        self.walk(nodes, dot)
        return "".join(self.out)

    def fail(self, pos: Pos, message: str) -> TemplateError:
        return TemplateError(self.name, pos.line, pos.col, message)

    def walk(self, nodes: tuple[Node, ...], dot: Any) -> None:
        for node in nodes:
            if isinstance(node, Text):
                self.out.append(node.text)
            elif isinstance(node, Action):
                value = self.pipeline(node.pipe, dot)
                if not node.pipe.decl:
                    self.out.append(go_str(value))
            elif isinstance(node, Branch):
                self.branch(node, dot)
            elif isinstance(node, LoopControl):
                raise _Break() if node.kind == "break" else _Continue()

    def branch(self, node: Branch, dot: Any) -> None:
        mark = len(self.vars)
        try:
            if node.kind == "range":
                self.range(node, dot)
                return
            value = self.pipeline(node.pipe, dot)
            if truth(value):
                self.walk(node.body, value if node.kind == "with" else dot)
            else:
                self.walk(node.else_body, dot)
        finally:
            del self.vars[mark:]

    def range(self, node: Branch, dot: Any) -> None:
        value = self.pipeline(node.pipe, dot, declare=False)
        pairs = self.iterate(value, node.pos)
        if not pairs:
            self.walk(node.else_body, dot)
            return
        for key, element in pairs:
            mark = len(self.vars)
            if len(node.pipe.decl) == 1:
                self.vars.append((node.pipe.decl[0], element))
            elif len(node.pipe.decl) == 2:
                self.vars.extend([(node.pipe.decl[0], key), (node.pipe.decl[1], element)])
            try:
                self.walk(node.body, element)
            except _Continue:
                continue
            except _Break:
                break
            finally:
                del self.vars[mark:]

    def iterate(self, value: Any, pos: Pos) -> list[tuple[Any, Any]]:
        if value is None or value is MISSING:
            return []
        if isinstance(value, Mapping):
            return [(key, value[key]) for key in sorted(value, key=str)]
        if isinstance(value, (list, tuple)):
            return list(enumerate(value))
        if isinstance(value, int) and not isinstance(value, bool):
            return [(i, i) for i in range(value)]
        raise self.fail(pos, f"range can't iterate over {go_str(value)}")

    def pipeline(self, pipe: Pipeline, dot: Any, declare: bool = True) -> Any:
        value: Any = _NO_ARG
        for cmd in pipe.cmds:
            value = self.command(cmd, dot, value)
        if declare:
            for name in pipe.decl:
                self.set_var(name, value, pipe.assign)
        return value

    def set_var(self, name: str, value: Any, assign: bool) -> None:
        if assign:
            for index in range(len(self.vars) - 1, -1, -1):
                if self.vars[index][0] == name:
                    self.vars[index] = (name, value)
                    return
        self.vars.append((name, value))

    def command(self, cmd: Command, dot: Any, piped: Any) -> Any:
        first = cmd.args[0]
        if isinstance(first, Ident):
            return self.call(first, cmd.args[1:], dot, piped)
        if len(cmd.args) > 1 or piped is not _NO_ARG:
            raise self.fail(cmd.pos, f"can't give argument to non-function {_describe(first)}")
        return self.operand(first, dot)

    def operand(self, node: Operand, dot: Any) -> Any:
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Dot):
            return dot
        if isinstance(node, Field):
            return self.access(dot, node.names, node.pos, node)
        if isinstance(node, Variable):
            return self.access(self.variable(node), node.names, node.pos, node)
        if isinstance(node, Ident):
            return self.call(node, (), dot, _NO_ARG)
        if isinstance(node, Chain):
            return self.access(self.pipeline(node.node, dot), node.names, node.pos, node)
        return self.pipeline(node, dot)

    def variable(self, node: Variable) -> Any:
        for name, value in reversed(self.vars):
            if name == node.name:
                return value
        raise self.fail(node.pos, f"undefined variable: {node.name}")

    def access(self, value: Any, names: tuple[str, ...], pos: Pos, node: Operand) -> Any:
        for name in names:
            at = f'executing "{self.name}" at <{_describe(node)}>'
            if value is None or value is MISSING:
                raise self.fail(pos, f"{at}: nil pointer evaluating {go_type(value)}.{name}")
            if isinstance(value, Mapping):
                if name in value:
                    value = value[name]
                elif self.missing_key_error:
                    raise self.fail(pos, f'{at}: map has no entry for key "{name}"')
                else:
                    value = MISSING
            elif is_dataclass(value) and name in {f.name for f in fields(value)}:
                value = getattr(value, name)
            else:
                raise self.fail(pos, f"{at}: can't evaluate field {name} in type {go_type(value)}")
        return value

    def call(self, ident: Ident, args: tuple[Operand, ...], dot: Any, piped: Any) -> Any:
        at = f'executing "{self.name}" at <{ident.name}>'
        if ident.name in ("and", "or"):
            return self.logic(ident, args, dot, piped, at)
        values = [self.operand(arg, dot) for arg in args]
        if piped is not _NO_ARG:
            values.append(piped)
        function = self.functions[ident.name]
        try:
            inspect.signature(function).bind(*values)
        except TypeError:
            raise self.fail(ident.pos, f"{at}: wrong number of args for {ident.name}: got {len(values)}") from None
        try:
            return function(*values)
        except (MissingDependency, TemplateError):
            raise
        except (FunctionError, ValueError, TypeError, KeyError, IndexError, OverflowError) as err:
            raise self.fail(ident.pos, f"{at}: error calling {ident.name}: {err}") from None

    def logic(self, ident: Ident, args: tuple[Operand, ...], dot: Any, piped: Any, at: str) -> Any:
        """and/or evaluate their arguments only as far as needed (Go 1.18+)."""
        count = len(args) + (piped is not _NO_ARG)
        if not count:
            raise self.fail(ident.pos, f"{at}: wrong number of args for {ident.name}: want at least 1 got 0")
        value: Any = None
        for index in range(count):
            value = self.operand(args[index], dot) if index < len(args) else piped
            if truth(value) is (ident.name == "or"):
                return value
        return value


def go_type(value: Any) -> str:
    """The Go type name a value stands for, for error messages."""
    if value is None or value is MISSING:
        return "<nil>"
    names = {bool: "bool", int: "int", float: "float64", str: "string", list: "[]interface {}", tuple: "[]string"}
    if type(value) in names:
        return names[type(value)]
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    return type(value).__name__


def _describe(node: Operand) -> str:
    if isinstance(node, Field):
        return "." + ".".join(node.names)
    if isinstance(node, Variable):
        return ".".join((node.name, *node.names))
    if isinstance(node, Ident):
        return node.name
    if isinstance(node, Dot):
        return "."
    if isinstance(node, Literal):
        return go_str(node.value)
    return "(...)"
