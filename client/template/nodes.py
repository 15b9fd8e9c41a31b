"""The parse tree of a template."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True)
class Pos:
    line: int
    col: int


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Field:
    names: tuple[str, ...]  # .A.B
    pos: Pos


@dataclass(frozen=True)
class Variable:
    name: str  # "$" or "$x"
    names: tuple[str, ...]  # $x.A.B
    pos: Pos


@dataclass(frozen=True)
class Dot:
    pos: Pos


@dataclass(frozen=True)
class Ident:
    name: str  # a function
    pos: Pos


@dataclass(frozen=True)
class Literal:
    value: object  # str, int, float, bool or None (nil)
    pos: Pos


@dataclass(frozen=True)
class Chain:
    node: Pipeline  # (pipeline).A.B
    names: tuple[str, ...]
    pos: Pos


Operand = Union[Field, Variable, Dot, Ident, Literal, Chain, "Pipeline"]


@dataclass(frozen=True)
class Command:
    args: tuple[Operand, ...]
    pos: Pos


@dataclass(frozen=True)
class Pipeline:
    decl: tuple[str, ...]  # variables declared ($x :=) or assigned ($x =)
    assign: bool  # `=` rather than `:=`
    cmds: tuple[Command, ...]
    pos: Pos


@dataclass(frozen=True)
class Action:
    pipe: Pipeline
    pos: Pos


@dataclass(frozen=True)
class Branch:
    """if, with and range: the body runs for a truthy pipeline, else_body otherwise."""

    kind: str  # "if", "with", "range"
    pipe: Pipeline
    body: tuple[Node, ...]
    else_body: tuple[Node, ...] = field(default=())
    pos: Pos = Pos(0, 0)


@dataclass(frozen=True)
class LoopControl:
    kind: str  # "break" or "continue"
    pos: Pos


Node = Text | Action | Branch | LoopControl
