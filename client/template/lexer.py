"""Splits a template into text and the tokens of its actions, with trim markers and
comments handled as Go's text/template does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from client.template.errors import TemplateError


class Kind(Enum):
    TEXT = "text"
    LEFT = "{{"
    RIGHT = "}}"
    IDENT = "identifier"
    FIELD = "field"  # .Name (a chain .A.B is one token)
    DOT = "."
    VARIABLE = "variable"  # $ or $name, with an optional field chain
    STRING = "string"
    CHAR = "character"
    NUMBER = "number"
    PIPE = "|"
    LPAREN = "("
    RPAREN = ")"
    DECLARE = ":="
    ASSIGN = "="
    COMMA = ","


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str  # the source text (a string's decoded value for STRING and CHAR)
    line: int
    col: int
    spaced: bool = False  # whitespace came right before it (so `$x .F` differs from `$x.F`)


_TRIM = " \t\r\n"
_SPACES = (" ", "\t", "\r", "\n")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIELD_CHAIN = re.compile(r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_NUMBER = re.compile(
    r"[+-]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?)"
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


class Lexer:
    def __init__(self, name: str, source: str, left: str = "{{", right: str = "}}") -> None:
        self.name, self.src = name, source
        self.left, self.right = left or "{{", right or "}}"
        self.pos = 0
        self.tokens: list[Token] = []

    def where(self, offset: int) -> tuple[int, int]:
        line = self.src.count("\n", 0, offset) + 1
        return line, offset - (self.src.rfind("\n", 0, offset) + 1) + 1

    def fail(self, offset: int, message: str) -> TemplateError:
        return TemplateError(self.name, *self.where(offset), message)

    def emit(self, kind: Kind, text: str, offset: int, spaced: bool = False) -> None:
        self.tokens.append(Token(kind, text, *self.where(offset), spaced))

    def run(self) -> list[Token]:
        trim_next = False
        while self.pos <= len(self.src):
            start = self.src.find(self.left, self.pos)
            end = len(self.src) if start < 0 else start
            text = self.src[self.pos : end]
            if trim_next:
                text = text.lstrip(_TRIM)
            open_at = end
            inner = end + len(self.left)
            trim_left = (
                start >= 0 and self.src.startswith("-", inner) and self.src[inner + 1 : inner + 2] in tuple(_TRIM)
            )
            if trim_left:
                text = text.rstrip(_TRIM)
            if text:
                self.emit(Kind.TEXT, text, self.pos)
            if start < 0:
                break
            self.pos = inner + (2 if trim_left else 0)
            trim_next = self._action(open_at)
        return self.tokens

    def _right_here(self) -> tuple[bool, bool]:
        """Whether the action closes at self.pos, and whether with a trim marker (` -}}`)."""
        if self.src.startswith(self.right, self.pos):
            return True, False
        if self.src.startswith("-" + self.right, self.pos) and self.pos > 0 and self.src[self.pos - 1] in _TRIM:
            return True, True
        return False, False

    def _action(self, open_at: int) -> bool:
        """Lex one action after its left delimiter; returns whether it ends with a trim marker."""
        rest = self.src[self.pos :].lstrip(_TRIM)
        if rest.startswith("/*"):
            return self._comment(open_at)
        self.emit(Kind.LEFT, self.left, open_at)
        spaced = False
        while True:
            if self.pos >= len(self.src):
                raise self.fail(open_at, "unclosed action")
            closed, trim = self._right_here()
            if closed:
                self.emit(Kind.RIGHT, self.right, self.pos)
                self.pos += len(self.right) + (1 if trim else 0)
                return trim
            char = self.src[self.pos]
            if char in _TRIM:  # newlines too: actions may span lines (Go 1.16+)
                self.pos += 1
                spaced = True
                continue
            self._token(char, spaced)
            spaced = False

    def _comment(self, open_at: int) -> bool:
        close = self.src.find("*/", self.pos)
        if close < 0:
            raise self.fail(open_at, "unclosed comment")
        self.pos = close + 2
        after = self.src[self.pos :]
        for marker, trim in ((" -" + self.right, True), (self.right, False)):
            if after.startswith(marker):
                self.pos += len(marker)
                return trim
        raise self.fail(close, "comment ends before closing delimiter")

    def _token(self, char: str, spaced: bool) -> None:
        start = self.pos
        simple = {"|": Kind.PIPE, "(": Kind.LPAREN, ")": Kind.RPAREN, ",": Kind.COMMA, "=": Kind.ASSIGN}
        if self.src.startswith(":=", start):
            self.pos += 2
            self.emit(Kind.DECLARE, ":=", start, spaced)
        elif char in simple:
            self.pos += 1
            self.emit(simple[char], char, start, spaced)
        elif char == '"':
            self.emit(Kind.STRING, self._quoted('"'), start, spaced)
        elif char == "'":
            self.emit(Kind.CHAR, self._quoted("'"), start, spaced)
        elif char == "`":
            close = self.src.find("`", start + 1)
            if close < 0:
                raise self.fail(start, "unterminated raw quoted string")
            self.pos = close + 1
            self.emit(Kind.STRING, self.src[start + 1 : close], start, spaced)
        elif char == "$":
            match = re.compile(r"\$[A-Za-z0-9_]*").match(self.src, start)
            assert match is not None  # "$" alone matches
            self.pos = match.end()
            chain = _FIELD_CHAIN.match(self.src, self.pos)
            if chain:
                self.pos = chain.end()
            self.emit(Kind.VARIABLE, self.src[start : self.pos], start, spaced)
        elif char == ".":
            chain = _FIELD_CHAIN.match(self.src, start)
            number = _NUMBER.match(self.src, start)
            if chain:
                self.pos = chain.end()
                self.emit(Kind.FIELD, chain.group(), start, spaced)
            elif number and number.end() > start + 1:
                self.pos = number.end()
                self.emit(Kind.NUMBER, number.group(), start, spaced)
            else:
                self.pos += 1
                self.emit(Kind.DOT, ".", start, spaced)
        elif char.isdigit() or (char in "+-" and self.src[start + 1 : start + 2].isdigit()):
            number = _NUMBER.match(self.src, start)
            assert number is not None
            self.pos = number.end()
            self.emit(Kind.NUMBER, number.group(), start, spaced)
        elif _IDENT.match(self.src, start):
            ident = _IDENT.match(self.src, start)
            assert ident is not None
            self.pos = ident.end()
            self.emit(Kind.IDENT, ident.group(), start, spaced)
        else:
            raise self.fail(start, f"unexpected {char!r} in command")

    def _quoted(self, quote: str) -> str:
        start = self.pos
        self.pos += 1
        out: list[str] = []
        while True:
            if self.pos >= len(self.src) or self.src[self.pos] == "\n":
                kind = "string" if quote == '"' else "character constant"
                raise self.fail(start, f"unterminated quoted {kind}")
            char = self.src[self.pos]
            if char == quote:
                self.pos += 1
                return "".join(out)
            if char == "\\":
                out.append(self._escape(start))
                continue
            out.append(char)
            self.pos += 1

    def _escape(self, start: int) -> str:
        code = self.src[self.pos + 1 : self.pos + 2]
        if code in _ESCAPES:
            self.pos += 2
            return _ESCAPES[code]
        widths = {"x": 2, "u": 4, "U": 8}
        if code in widths:
            digits = self.src[self.pos + 2 : self.pos + 2 + widths[code]]
            if len(digits) == widths[code] and all(c in "0123456789abcdefABCDEF" for c in digits):
                self.pos += 2 + widths[code]
                return chr(int(digits, 16))
        raise self.fail(self.pos, f"invalid escape \\{code} in quoted string")


def tokenize(name: str, source: str, left: str = "{{", right: str = "}}") -> list[Token]:
    return Lexer(name, source, left, right).run()
