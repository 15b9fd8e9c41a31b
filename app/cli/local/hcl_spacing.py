"""Spacing inside one line of HCL, as hclwrite's formatter sets it (`nomad fmt`): the line is cut
into tokens and the blanks between them are decided by hclwrite's rules (its spaceAfterToken):
one space around operators and `=`, after a comma and none before it, none inside parentheses
and brackets, one inside a one-line object's braces (`{ a = 1 }`, but `{}`), none around `.`,
before a call's `(` or an index's `[`, nor after a negation (`-1`, `!x`).

A template (a quoted string, or a heredoc's line: template_line) keeps its text as written, but
the inside of each `${...}` interpolation and `%{...}` directive is spaced by the same rules, as
hclwrite spaces a template's tokens: `${ a+1 }` -> `${a + 1}`, `%{ if x }` -> `%{if x}`, a `~`
strip marker kept against its brace (`${~ a ~}` -> `${~a~}`), a sequence holding only an object
spaced from its braces (`${{a=1}}` -> `${ { a = 1 } }`). A trailing comment is split off for the
layout to align (split_comment). A line the tokenizer cannot read (an unterminated string, a
character HCL has no token for) is returned unchanged: formatting never changes what a file
means."""

from __future__ import annotations

import re
from dataclasses import dataclass

TOKEN = re.compile(
    r"""
    (?P<blank>\s+)
  | (?P<comment>\#.*|//.*|/\*.*?(?:\*/|$))
  | (?P<heredoc><<-?[A-Za-z_]\w*)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][\w-]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||=>|\.\.\.|::|[-+*/%<>!?:=,.()\[\]{}])
    """,
    re.VERBOSE,
)
OPENERS, CLOSERS = frozenset("([{"), frozenset(")]}")
# After these a minus is a negation: nothing that can end an expression comes before it.
NEGATION_AFTER = frozenset(
    {"(", "{", "[", "=", ":", ",", "?", "+", "*", "/", "%", "-", "==", "!=", ">", ">=", "<", "<=", "&&", "||", "!"}
)


@dataclass(frozen=True)
class Token:
    kind: str  # ident, number, string, heredoc, comment, op, or "" before the first token
    text: str


START = Token("", "")


def split_comment(line: str) -> tuple[str, str]:
    """(code, trailing comment) of a line that has code before a comment; (line, "") otherwise."""
    tokens = _tokens(line)
    if not tokens or tokens[-1].kind != "comment" or len(tokens) == 1:
        return line, ""
    start = line.rfind(tokens[-1].text)
    return line[:start].rstrip(), tokens[-1].text


def space_line(line: str) -> str:
    """LINE (without its indentation) with hclwrite's blanks between its tokens."""
    tokens = _tokens(line)
    return line if tokens is None else _joined(tokens, START)


def _joined(tokens: list[Token], first_before: Token) -> str:
    """TOKENS with hclwrite's blanks between them; FIRST_BEFORE is what precedes the first (a
    template sequence's opener inside a template, START at a line's start)."""
    out: list[str] = []
    for i, token in enumerate(tokens):
        before = tokens[i - 1] if i else first_before
        out.append(_string(token.text) if token.kind == "string" else token.text)
        if i + 1 < len(tokens) and _space_after(token, before, tokens[i + 1]):
            out.append(" ")
    return "".join(out)


def _string(text: str) -> str:
    """A quoted string with each `${...}` and `%{...}` spaced (`\\x` is an escape, `$${` and
    `%%{` a literal `${` and `%{`)."""
    spaced, _ = _template(text, escapes=True)
    return spaced


def template_line(text: str) -> tuple[str, bool]:
    """One line of a heredoc's body with each `${...}` and `%{...}` spaced (a heredoc has no
    backslash escapes), and whether a sequence stays open past the line's end (the rest of the
    line, from that sequence on, is then kept as written)."""
    return _template(text, escapes=False)


def _template(text: str, *, escapes: bool) -> tuple[str, bool]:
    out, i = [], 0
    while i < len(text):
        if (escapes and text[i] == "\\") or text.startswith(("$${", "%%{"), i):
            step = 2 if text[i] == "\\" else 3
            out.append(text[i : i + step])
            i += step
            continue
        if text.startswith(("${", "%{"), i):
            found = _sequence(text, i)
            if found is None:
                out.append(text[i:])
                return "".join(out), True
            out.append(found[0])
            i = found[1]
            continue
        out.append(text[i])
        i += 1
    return "".join(out), False


def _sequence(text: str, start: int) -> tuple[str, int] | None:
    """The template sequence (`${...}` or `%{...}`) opening at START, spaced as hclwrite spaces
    its tokens, and where it ends; None if it does not close in TEXT. hclwrite counts the opener
    (`${`, `${~`, `%{`, `%{~`) as an open bracket and the closer (`}`, `~}`) as a close one: no
    blank inside them, but one between them and an object's braces; a minus right after the
    opener is taken for a subtraction (`${- 1}`), as hclwrite's heuristics take it."""
    end = _interpolation_end(text, start + 2)
    if end < 0:
        return None
    opener, inner, closer = text[start : start + 2], text[start + 2 : end], "}"
    if inner.startswith("~"):
        opener, inner = opener + "~", inner[1:]
    if inner.endswith("~"):
        inner, closer = inner[:-1], "~}"
    tokens = _tokens(inner)
    if not tokens or any(t.kind in ("comment", "heredoc") for t in tokens):
        return text[start : end + 1], end + 1  # nothing hclwrite would respace, or not readable
    lead = " " if tokens[0].text == "{" and tokens[0].kind == "op" else ""
    trail = " " if tokens[-1].text == "}" and tokens[-1].kind == "op" else ""
    body = _joined(tokens, Token("sequence", opener))
    return opener + lead + body + trail + closer, end + 1


def _interpolation_end(text: str, start: int) -> int:
    """Where the `}` that closes the interpolation whose expression starts at START is."""
    i, depth = start, 0
    while i < len(text):
        char = text[i]
        if char == '"':
            inner = _string_end(text, i)
            if inner < 0:
                return -1
            i = inner
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return -1


def _tokens(line: str) -> list[Token] | None:
    tokens: list[Token] = []
    i = 0
    while i < len(line):
        if line[i] == '"':
            end = _string_end(line, i)
            if end < 0:
                return None
            tokens.append(Token("string", line[i:end]))
            i = end
            continue
        match = TOKEN.match(line, i)
        if match is None:
            return None
        kind = match.lastgroup or ""
        if kind != "blank":
            tokens.append(Token(kind, match.group()))
        i = match.end()
    return tokens


def _string_end(line: str, start: int) -> int:
    """Where the quoted string opening at START ends (past its closing quote), reading through
    its `${...}` and `%{...}` sequences, which may hold strings of their own; -1 if it does not."""
    i, depth = start + 1, 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if depth == 0 and char == '"':
            return i + 1
        if depth == 0 and line.startswith(("$${", "%%{"), i):
            i += 3  # a literal `${` or `%{`, which opens nothing
            continue
        if char in "$%" and line.startswith("{", i + 1):
            depth, i = depth + 1, i + 2
            continue
        if depth and char == '"':
            inner = _string_end(line, i)
            if inner < 0:
                return -1
            i = inner
            continue
        if depth and char == "{":
            depth += 1
        elif depth and char == "}":
            depth -= 1
        i += 1
    return -1


def _space_after(subject: Token, before: Token, after: Token) -> bool:
    """hclwrite's rules, in its order."""
    s, a = _shape(subject), _shape(after)
    if s == "ident" and a == "(":
        return False  # a function call
    if "::" in (s, a) or "." in (s, a):
        return False
    if a in (",", "..."):
        return False
    if s == ",":
        return True
    if subject.text == "in" and s == "ident" and before.kind == "ident":
        return True  # `for x in [list]`: the keyword, not an index of `in`
    if a == "[" and (s in ("ident", "number") or s in CLOSERS):
        return False  # an index
    if s == "!":
        return False
    if s == "-":
        return before.kind != "" and _shape(before) not in NEGATION_AFTER  # at a line's start: negation
    if s == "{" or a == "}":
        return not (s == "{" and a == "}")
    return s not in OPENERS and a not in CLOSERS  # none inside brackets; else one space


def _shape(token: Token) -> str:
    """An operator by its text, anything else by its kind."""
    return token.text if token.kind == "op" else token.kind
