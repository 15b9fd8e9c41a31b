"""The filter grammar of Nomad's `filter=` parameter (go-bexpr), parsed into a small tree.

    expr       := or
    or         := and ("or" and)*
    and        := not ("and" not)*
    not        := "not" not | "(" or ")" | collection | match
    collection := ("any" | "all") selector "as" binding "{" or "}"
    binding    := name | name "," name | name "," "_" | "_" "," name
    match      := selector ("==" | "!=" | "contains" | "not contains" | "matches" | "not matches") value
                | selector "is" ["not"] ("empty" | "nil")
                | value ("in" | "not in") selector
    selector   := name ("." name | "." digits | "[" string "]")*  |  '"/json/pointer"'
    value      := number | string | selector-shaped bare word (its dotted text)

Names are `[a-zA-Z][a-zA-Z0-9_/]*`; strings are "double quoted" with Go's escapes or `raw`.
The grammar is written here from go-bexpr's documented behaviour; nothing is generated or copied.
Every problem raises FilterSyntaxError with the 0-based offset it was found at."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.bexpr.regex import Pattern, compile_pattern

# `not not not ...` and parentheses nest; deeper than this is not a filter anyone writes.
MAX_DEPTH = 64
MAX_LENGTH = 16_384
KEYWORDS = frozenset({"and", "or", "not", "in", "contains", "matches", "is", "empty", "nil", "any", "all", "as"})

MatchOp = Literal[
    "==", "!=", "in", "not in", "is empty", "is not empty", "matches", "not matches", "is nil", "is not nil"
]


class FilterError(Exception):
    """A filter that cannot be used; `message` names the problem."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class FilterSyntaxError(FilterError):
    def __init__(self, problem: str, position: int) -> None:
        self.problem = problem
        self.position = position
        super().__init__(f"{problem} at position {position + 1}")


@dataclass(frozen=True)
class Selector:
    parts: tuple[str, ...]
    pointer: bool = False  # written as a quoted JSON pointer

    def __str__(self) -> str:
        return "/" + "/".join(self.parts) if self.pointer else ".".join(self.parts)


@dataclass(frozen=True)
class Value:
    raw: str
    pattern: Pattern | None = None  # compiled once, for matches / not matches


@dataclass(frozen=True)
class Match:
    selector: Selector
    op: MatchOp
    value: Value | None


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class BoolOp:
    op: Literal["and", "or"]
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Collection:
    """`any|all Selector as <binding> { inner }`: `index` names the list index or map key,
    `value` names the element (a path into the object); `default` is the single-name form."""

    op: Literal["any", "all"]
    selector: Selector
    inner: Node
    default: str | None = None
    index: str | None = None
    value: str | None = None


Node = Match | Not | BoolOp | Collection


# --- tokens ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: Literal["selector", "string", "number", "op", "punct", "underscore", "end"]
    text: str  # the selector's first name, the string's value, the number or operator as written
    position: int
    parts: tuple[str, ...] = ()
    quoted: bool = False  # a "double quoted" string (a JSON pointer is one of these)

    @property
    def word(self) -> str | None:
        """The bare word this token is, if it is a single name (a keyword candidate)."""
        return self.text if self.kind == "selector" and len(self.parts) == 1 else None

    def describe(self) -> str:
        if self.kind == "end":
            return "the end of the filter"
        if self.kind == "string":
            return f"the string {self.text!r}"
        if self.kind == "selector":
            return f"{'.'.join(self.parts)!r}"
        return f"{self.text!r}"


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"'}
_HEX = "0123456789abcdefABCDEF"
_WHITESPACE = " \t\r\n"


def _is_name_start(char: str) -> bool:
    return len(char) == 1 and char.isascii() and char.isalpha()


def _is_name_char(char: str) -> bool:
    return len(char) == 1 and char.isascii() and (char.isalnum() or char in "_/")


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        while True:
            self._skip_space()
            if self.pos >= len(self.text):
                out.append(Token("end", "", self.pos))
                return out
            out.append(self._next())

    def _skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
            self.pos += 1

    def _peek(self, offset: int = 0) -> str:
        at = self.pos + offset
        return self.text[at] if at < len(self.text) else ""

    def _next(self) -> Token:
        start, char = self.pos, self.text[self.pos]
        if self.text.startswith(("==", "!="), start):
            self.pos += 2
            return Token("op", self.text[start : start + 2], start)
        if char in "(){},":
            self.pos += 1
            return Token("punct", char, start)
        if char == "_" and not _is_name_char(self._peek(1)):
            self.pos += 1
            return Token("underscore", "_", start)
        if char in '"`':
            value = self._string()
            return Token("string", value, start, quoted=char == '"')
        if char == "-" or (char.isdigit() and char.isascii()):
            return self._number()
        if _is_name_start(char):
            parts = self._selector()
            return Token("selector", parts[0], start, parts=tuple(parts))
        raise FilterSyntaxError(f"unexpected character {char!r}", start)

    def _name(self) -> str:
        start = self.pos
        self.pos += 1
        while _is_name_char(self._peek()):
            self.pos += 1
        return self.text[start : self.pos]

    def _selector(self) -> list[str]:
        parts = [self._name()]
        while True:
            char = self._peek()
            if char == "." and _is_name_start(self._peek(1)):
                self.pos += 1
                parts.append(self._name())
            elif char == "." and self._peek(1).isascii() and self._peek(1).isdigit():
                self.pos += 1
                start = self.pos
                while self._peek().isascii() and self._peek().isdigit():
                    self.pos += 1
                parts.append(self.text[start : self.pos])
            elif char == ".":
                raise FilterSyntaxError("expected a name or an index after '.'", self.pos + 1)
            elif char == "[":
                parts.append(self._index())
            else:
                return parts

    def _index(self) -> str:
        self.pos += 1  # [
        self._skip_space()
        if self._peek() not in ('"', "`") or not self._peek():
            raise FilterSyntaxError('an index must be a quoted string, as in Meta["key"]', self.pos)
        key = self._string()
        self._skip_space()
        if self._peek() != "]":
            raise FilterSyntaxError("unclosed index: expected ']'", self.pos)
        self.pos += 1
        return key

    def _number(self) -> Token:
        start = self.pos
        if self._peek() == "-":
            self.pos += 1
        digits = self.pos
        while self._peek().isascii() and self._peek().isdigit():
            self.pos += 1
        if self.pos == digits:
            raise FilterSyntaxError("expected a number after '-'", start)
        if self.text[digits] == "0" and self.pos - digits > 1:
            raise FilterSyntaxError("invalid number literal (a leading zero)", start)
        if self._peek() == "." and self._peek(1).isascii() and self._peek(1).isdigit():
            self.pos += 1
            while self._peek().isascii() and self._peek().isdigit():
                self.pos += 1
        if self._peek() and self._peek() not in _WHITESPACE and self._peek() not in ")}":
            raise FilterSyntaxError("invalid number literal", start)
        return Token("number", self.text[start : self.pos], start)

    def _string(self) -> str:
        start, quote = self.pos, self.text[self.pos]
        self.pos += 1
        out: list[str] = []
        while True:
            if self.pos >= len(self.text):
                raise FilterSyntaxError("unterminated string literal", start)
            char = self.text[self.pos]
            if char == quote:
                self.pos += 1
                return "".join(out)
            if quote == '"' and char == "\\":
                out.append(self._escape())
                continue
            if quote == '"' and char == "\n":
                raise FilterSyntaxError("a newline inside a double-quoted string (use \\n)", self.pos)
            if quote == "`" and char == "\r":
                self.pos += 1  # Go drops carriage returns from raw strings
                continue
            out.append(char)
            self.pos += 1

    def _escape(self) -> str:
        start = self.pos
        letter = self._peek(1)
        if letter in _SIMPLE_ESCAPES:
            self.pos += 2
            return _SIMPLE_ESCAPES[letter]
        width = {"x": 2, "u": 4, "U": 8}.get(letter)
        if width is not None:
            digits = self.text[self.pos + 2 : self.pos + 2 + width]
            if len(digits) != width or any(d not in _HEX for d in digits):
                raise FilterSyntaxError(f"invalid escape \\{letter}: expected {width} hex digits", start)
            self.pos += 2 + width
            return _code_point(int(digits, 16))
        if letter in "01234567" and letter:
            digits = self.text[self.pos + 1 : self.pos + 4]
            if len(digits) != 3 or any(d not in "01234567" for d in digits) or int(digits, 8) > 255:
                raise FilterSyntaxError("invalid octal escape: expected three octal digits up to \\377", start)
            self.pos += 4
            return chr(int(digits, 8))
        raise FilterSyntaxError(f"invalid escape sequence \\{letter}", start)


def _code_point(value: int) -> str:
    if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        return "\ufffd"  # as Go: an invalid code point becomes the replacement character
    return chr(value)


# --- parser ----------------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.at = 0
        self.depth = 0

    @property
    def token(self) -> Token:
        return self.tokens[self.at]

    def _ahead(self, n: int) -> Token:
        return self.tokens[min(self.at + n, len(self.tokens) - 1)]

    def _advance(self) -> Token:
        token = self.tokens[self.at]
        self.at = min(self.at + 1, len(self.tokens) - 1)
        return token

    def _expected(self, what: str) -> FilterSyntaxError:
        return FilterSyntaxError(f"expected {what}, found {self.token.describe()}", self.token.position)

    def _is_word(self, word: str, n: int = 0) -> bool:
        return self._ahead(n).word == word

    def parse(self) -> Node:
        node = self._or()
        if self.token.kind != "end":
            raise self._expected("'and', 'or' or the end of the filter")
        return node

    def _nest(self, position: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FilterSyntaxError(f"nested more than {MAX_DEPTH} levels deep", position)

    def _or(self) -> Node:
        items = [self._and()]
        while self._is_word("or"):
            self._advance()
            items.append(self._and())
        return items[0] if len(items) == 1 else BoolOp("or", tuple(items))

    def _and(self) -> Node:
        items = [self._not()]
        while self._is_word("and"):
            self._advance()
            items.append(self._not())
        return items[0] if len(items) == 1 else BoolOp("and", tuple(items))

    def _not(self) -> Node:
        token = self.token
        if token.word == "not" and self._ahead(1).kind != "op":
            self._nest(token.position)
            self._advance()
            operand = self._not()
            self.depth -= 1
            # `not not x` is x, as in go-bexpr
            return operand.operand if isinstance(operand, Not) else Not(operand)
        if token.kind == "punct" and token.text == "(":
            self._nest(token.position)
            self._advance()
            inner = self._or()
            if not (self.token.kind == "punct" and self.token.text == ")"):
                raise FilterSyntaxError(
                    f"unmatched parenthesis: expected ')' or 'and'/'or', found {self.token.describe()}",
                    self.token.position,
                )
            self._advance()
            self.depth -= 1
            return inner
        if token.word in ("any", "all") and self._selector_at(1) and self._is_word("as", 2):
            return self._collection()
        return self._match()

    def _selector_at(self, n: int) -> bool:
        token = self._ahead(n)
        return token.kind == "selector" or (token.kind == "string" and token.quoted and token.text.startswith("/"))

    def _collection(self) -> Collection:
        op_token = self._advance()
        self._nest(op_token.position)
        selector = self._selector("a list or map to iterate over")
        self._advance()  # as
        default = index = value = None
        first = self._binding_name(allow_underscore=True)
        if self.token.kind == "punct" and self.token.text == ",":
            self._advance()
            second = self._binding_name(allow_underscore=first is not None)
            if first is not None and first == second:
                raise FilterSyntaxError(f"{first!r} cannot name both the index and the value", op_token.position)
            index, value = first, second
        elif first is None:
            raise self._expected("',' and a name after '_'")
        else:
            default = first
        if not (self.token.kind == "punct" and self.token.text == "{"):
            raise self._expected("'{'")
        self._advance()
        inner = self._or()
        if not (self.token.kind == "punct" and self.token.text == "}"):
            raise self._expected("'}'")
        self._advance()
        self.depth -= 1
        op: Literal["any", "all"] = "any" if op_token.text == "any" else "all"
        return Collection(op, selector, inner, default=default, index=index, value=value)

    def _binding_name(self, *, allow_underscore: bool) -> str | None:
        token = self.token
        if token.kind == "underscore" and allow_underscore:
            self._advance()
            return None
        if token.word is None or token.word in KEYWORDS:
            raise self._expected("a name to bind (as x, as i, v, as _, v or as k, _)")
        self._advance()
        return token.word

    def _selector(self, what: str) -> Selector:
        token = self.token
        if token.kind == "selector":
            self._advance()
            return Selector(token.parts)
        if token.kind == "string" and token.quoted and token.text.startswith("/"):
            self._advance()
            return Selector(_pointer_parts(token), pointer=True)
        raise self._expected(what)

    def _match(self) -> Match:
        first = self.token
        if first.kind not in ("selector", "string", "number"):
            raise self._expected("a selector or a value")
        # `value in Selector` / `value not in Selector`
        in_at = 2 if self._is_word("not", 1) and self._is_word("in", 2) else 1 if self._is_word("in", 1) else 0
        if in_at:
            self._advance()
            for _ in range(in_at):
                self._advance()
            selector = self._selector("a selector after 'in'")
            return Match(selector, "not in" if in_at == 2 else "in", _value(first))
        selector = self._selector("a selector (a field name such as Status or Meta.key)")
        op_token = self.token
        if op_token.kind == "op":
            self._advance()
            return Match(selector, "==" if op_token.text == "==" else "!=", self._value())
        word = op_token.word
        if word == "is":
            self._advance()
            negated = self._is_word("not")
            if negated:
                self._advance()
            what = self.token.word
            if what not in ("empty", "nil"):
                raise self._expected(
                    "'empty' or 'nil' after 'is'" if not negated else "'empty' or 'nil' after 'is not'"
                )
            self._advance()
            op: MatchOp
            if what == "empty":
                op = "is not empty" if negated else "is empty"
            else:
                op = "is not nil" if negated else "is nil"
            return Match(selector, op, None)
        negated = word == "not"
        if negated:
            word = self._ahead(1).word
        if word in ("contains", "matches"):
            self._advance()
            if negated:
                self._advance()
            value_token = self.token
            value = self._value()
            if word == "contains":
                return Match(selector, "not in" if negated else "in", value)
            return Match(selector, "not matches" if negated else "matches", _with_pattern(value, value_token.position))
        raise self._expected(
            "an operator (==, !=, contains, not contains, matches, not matches, is empty, is not empty)"
        )

    def _value(self) -> Value:
        token = self.token
        if token.kind not in ("selector", "string", "number"):
            raise self._expected('a value (a number, a "quoted string" or a bare word)')
        self._advance()
        return _value(token)


def _value(token: Token) -> Value:
    if token.kind == "selector":
        return Value(".".join(token.parts))
    return Value(token.text)


def _with_pattern(value: Value, position: int) -> Value:
    try:
        return Value(value.raw, compile_pattern(value.raw))
    except ValueError as err:
        raise FilterSyntaxError(f"invalid regular expression {value.raw!r}: {err}", position) from None


def _pointer_parts(token: Token) -> tuple[str, ...]:
    parts = token.text[1:].split("/")
    if any(not part for part in parts):
        raise FilterSyntaxError(f"invalid JSON pointer {token.text!r}: empty segment", token.position)
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in parts)


def parse(text: str) -> Node:
    """The tree of a filter expression; FilterSyntaxError names what is wrong and where."""
    if len(text) > MAX_LENGTH:
        raise FilterSyntaxError(f"the filter is longer than {MAX_LENGTH} characters", MAX_LENGTH)
    return _Parser(_Lexer(text).tokens()).parse()
