"""Builds the parse tree from the lexer's tokens: actions, pipelines, if/with/range with
else (and else if / else with), variables, break and continue."""

from __future__ import annotations

from collections.abc import Collection

from client.template.errors import TemplateError
from client.template.lexer import Kind, Token, tokenize
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

_CONTROL = ("if", "with", "range")
_UNSUPPORTED = ("define", "template", "block")


class Parser:
    def __init__(self, name: str, tokens: list[Token], functions: Collection[str]) -> None:
        self.name, self.tokens, self.functions = name, tokens, functions
        self.at = 0
        self.vars: list[str] = ["$"]
        self.loops = 0

    def fail(self, token: Token, message: str) -> TemplateError:
        return TemplateError(self.name, token.line, token.col, message)

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.at + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def next(self, context: str) -> Token:
        token = self.peek()
        if token is None:
            last = self.tokens[-1]
            raise self.fail(last, f"unexpected EOF in {context}")
        self.at += 1
        return token

    def expect(self, kind: Kind, context: str) -> Token:
        token = self.next(context)
        if token.kind is not kind:
            raise self.fail(token, f"unexpected {_show(token)} in {context}")
        return token

    def parse(self) -> tuple[Node, ...]:
        nodes, end = self.list()
        if end is not None:
            raise self.fail(end, f"unexpected {{{{{end.text}}}}}")
        return nodes

    def list(self) -> tuple[tuple[Node, ...], Token | None]:
        """Nodes up to an {{end}} or {{else}} (returned, its RIGHT not yet read for else) or EOF."""
        nodes: list[Node] = []
        while (token := self.peek()) is not None:
            self.at += 1
            if token.kind is Kind.TEXT:
                nodes.append(Text(token.text))
                continue
            word = self.peek()
            if word is not None and word.kind is Kind.IDENT:
                if word.text == "end":
                    self.at += 1
                    self.expect(Kind.RIGHT, "end")
                    return tuple(nodes), word
                if word.text == "else":
                    self.at += 1
                    return tuple(nodes), word
                if word.text in _CONTROL:
                    self.at += 1
                    nodes.append(self.control(word))
                    continue
                if word.text in ("break", "continue"):
                    self.at += 1
                    if not self.loops:
                        raise self.fail(word, f"{{{{{word.text}}}}} outside {{{{range}}}}")
                    self.expect(Kind.RIGHT, word.text)
                    nodes.append(LoopControl(word.text, Pos(word.line, word.col)))
                    continue
                if word.text in _UNSUPPORTED:
                    raise self.fail(word, f"{{{{{word.text}}}}} is not supported")
            pipe = self.pipeline("command", Kind.RIGHT)
            nodes.append(Action(pipe, Pos(token.line, token.col)))
        return tuple(nodes), None

    def control(self, word: Token) -> Branch:
        mark = len(self.vars)
        pipe = self.pipeline(word.text, Kind.RIGHT, decl_limit=2 if word.text == "range" else 1)
        if word.text == "range":
            self.loops += 1
        body, end = self.list()
        if word.text == "range":
            self.loops -= 1
        if end is None:
            raise self.fail(word, f"unexpected EOF: {{{{{word.text}}}}} has no {{{{end}}}}")
        else_body: tuple[Node, ...] = ()
        if end.text == "else":
            chained = self.peek()
            if chained is not None and chained.kind is Kind.IDENT and chained.text in ("if", "with"):
                if chained.text != word.text:
                    raise self.fail(chained, f"{{{{else {chained.text}}}}} inside {{{{{word.text}}}}}")
                self.at += 1
                else_body = (self.control(chained),)  # shares this structure's {{end}}
            else:
                self.expect(Kind.RIGHT, "else")
                else_body, final = self.list()
                if final is None or final.text != "end":
                    raise self.fail(end, f"expected {{{{end}}}} after {{{{else}}}} of {{{{{word.text}}}}}")
        del self.vars[mark:]
        return Branch(word.text, pipe, body, else_body, Pos(word.line, word.col))

    def pipeline(self, context: str, close: Kind, decl_limit: int = 1) -> Pipeline:
        first = self.peek()
        if first is None:
            raise self.fail(self.tokens[-1], f"unexpected EOF in {context}")
        decl, assign = self.declarations(context, decl_limit)
        cmds: list[Command] = []
        while True:
            token = self.next(context)
            if token.kind is close:
                if cmds:
                    raise self.fail(token, f"missing command after | in {context}: unexpected {_show(token)}")
                break
            self.at -= 1
            cmds.append(self.command(context, close))
            after = self.next(context)
            if after.kind is close:
                break
            if after.kind is not Kind.PIPE:
                raise self.fail(after, f"unexpected {_show(after)} in {context}")
        if not cmds:
            raise self.fail(first, f"missing value for {context}")
        for name in decl:
            if not assign:
                self.vars.append(name)
        return Pipeline(decl, assign, tuple(cmds), Pos(first.line, first.col))

    def declarations(self, context: str, limit: int) -> tuple[tuple[str, ...], bool]:
        names: list[str] = []
        start = self.at
        while (token := self.peek()) is not None and token.kind is Kind.VARIABLE and "." not in token.text:
            after = self.peek(1)
            if after is None:
                break
            if after.kind in (Kind.DECLARE, Kind.ASSIGN):
                names.append(token.text)
                self.at += 2
                if len(names) > limit:
                    raise self.fail(token, f"too many declarations in {context}")
                if after.kind is Kind.ASSIGN:
                    if token.text not in self.vars:
                        raise self.fail(token, f"undefined variable {token.text!r}")
                    return tuple(names), True
                return tuple(names), False
            if after.kind is Kind.COMMA and limit > 1:
                names.append(token.text)
                self.at += 2
                continue
            break
        self.at = start
        return (), False

    def command(self, context: str, close: Kind) -> Command:
        args: list[Operand] = []
        first = self.peek()
        assert first is not None
        while (token := self.peek()) is not None and token.kind not in (close, Kind.PIPE, Kind.RIGHT, Kind.RPAREN):
            args.append(self.operand(context))
        if not args:
            raise self.fail(first, f"unexpected {_show(first)} in {context}")
        return Command(tuple(args), Pos(first.line, first.col))

    def operand(self, context: str) -> Operand:
        token = self.next(context)
        pos = Pos(token.line, token.col)
        if token.kind is Kind.FIELD:
            return Field(tuple(token.text[1:].split(".")), pos)
        if token.kind is Kind.VARIABLE:
            name, *names = token.text.split(".")
            if name not in self.vars:
                raise self.fail(token, f"undefined variable {name!r}")
            return Variable(name, tuple(names), pos)
        if token.kind is Kind.DOT:
            return Dot(pos)
        if token.kind is Kind.STRING:
            return Literal(token.text, pos)
        if token.kind is Kind.CHAR:
            if len(token.text) != 1:
                raise self.fail(token, f"malformed character constant: '{token.text}'")
            return Literal(ord(token.text), pos)
        if token.kind is Kind.NUMBER:
            return Literal(self.number(token), pos)
        if token.kind is Kind.IDENT:
            return self.ident(token, pos)
        if token.kind is Kind.LPAREN:
            inner = self.pipeline("parenthesized pipeline", Kind.RPAREN)
            chained = self.peek()
            if chained is not None and chained.kind is Kind.FIELD and not chained.spaced:
                self.at += 1
                return Chain(inner, tuple(chained.text[1:].split(".")), pos)
            return inner
        raise self.fail(token, f"unexpected {_show(token)} in {context}")

    def ident(self, token: Token, pos: Pos) -> Operand:
        constants: dict[str, object] = {"true": True, "false": False, "nil": None}
        if token.text in constants:
            return Literal(constants[token.text], pos)
        if token.text not in self.functions:
            raise self.fail(token, f'function "{token.text}" not defined')
        return Ident(token.text, pos)

    def number(self, token: Token) -> int | float:
        text = token.text.replace("_", "")
        try:
            return int(text, 0)
        except ValueError:
            pass
        try:
            digits = text.lstrip("+-")
            if digits.startswith("0") and digits.isdigit():
                return int(text, 8)  # Go reads a leading 0 as octal
            return float(text)
        except ValueError:
            raise self.fail(token, f"bad number syntax: {token.text!r}") from None


def _show(token: Token) -> str:
    if token.kind in (Kind.RIGHT, Kind.LEFT):
        return f'"{token.text}"'
    return f"<{token.text}>"


def parse(name: str, source: str, functions: Collection[str], left: str = "{{", right: str = "}}") -> tuple[Node, ...]:
    return Parser(name, tokenize(name, source, left, right), functions).parse()
