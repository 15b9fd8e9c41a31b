"""Evaluation of HCL2 documents: python-hcl2's lark parse tree into positioned blocks.

python-hcl2 parses (its lark grammar, with positions), but its dict output turns every
expression into a ``"${...}"`` string and drops where each attribute was written. Nomad
job files need both: ``var.x``, ``local.y`` and functions evaluated, quoted numbers kept
apart from numbers, and ``file:line:col`` on every error. So the raw parse tree is walked
here: blocks and attributes keep their position, and expressions are evaluated with
HCL2's rules. Interpolations that only the client can fill in (``${attr.x}``,
``${node.unique.name}``, ``${NOMAD_ALLOC_ID}``, ``${meta.k}``) are kept verbatim, as
Nomad's parser keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hcl2.api import parses_to_tree
from lark import Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from app.jobspec.hcl_functions import FUNCTIONS, FunctionError, to_text
from app.wire.json import JsonList, JsonObject


@dataclass(frozen=True)
class Pos:
    line: int
    column: int


MAX_STEPS = 1_000_000
MAX_VALUE_LENGTH = 1_000_000


class HCLError(Exception):
    """A problem at a position in the file; ``str`` gives the message without the position."""

    def __init__(self, pos: Pos | None, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


@dataclass
class Attribute:
    name: str
    value: Any
    pos: Pos


@dataclass
class Block:
    type: str
    labels: list[str]
    body: Body
    pos: Pos


@dataclass
class Body:
    attributes: dict[str, Attribute] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)

    def blocks_of(self, kind: str) -> list[Block]:
        return [block for block in self.blocks if block.type == kind]


class _Runtime(Exception):
    """A reference only the client can resolve; kept verbatim inside a template."""


@dataclass
class Scope:
    variables: JsonObject = field(default_factory=dict)  # var.*
    locals: JsonObject = field(default_factory=dict)  # local.*
    base_dir: Path | None = None  # file() reads relative to this; None: no file access
    iterators: JsonObject = field(default_factory=dict)

    def with_iterators(self, values: Mapping[str, Any]) -> Scope:
        return Scope(self.variables, self.locals, self.base_dir, {**self.iterators, **values})


# Tree (raw lark output) helpers -------------------------------------------------------------


def parse_tree(text: str) -> Tree[Token]:
    try:
        return parses_to_tree(text)
    except UnexpectedInput as exc:
        raise HCLError(Pos(exc.line, exc.column), _syntax_message(exc)) from None
    except (LarkError, ValueError, IndexError, KeyError) as exc:  # malformed input the grammar let through
        raise HCLError(None, f"invalid HCL: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def _syntax_message(exc: UnexpectedInput) -> str:
    if isinstance(exc, UnexpectedToken):
        if exc.token.type == "$END":
            return "invalid HCL: unexpected end of file"
        return f"invalid HCL: unexpected {str(exc.token).strip()!r}"
    if isinstance(exc, UnexpectedCharacters):
        return f"invalid HCL: unexpected character {exc.char!r}"
    return "invalid HCL"


def position(tree: Tree[Token] | Token) -> Pos:
    if isinstance(tree, Token):
        return Pos(tree.line or 0, tree.column or 0)
    meta = tree.meta
    return Pos(getattr(meta, "line", 0), getattr(meta, "column", 0))


def subtrees(tree: Tree[Token]) -> list[Tree[Token]]:
    return [child for child in tree.children if isinstance(child, Tree) and child.data != "new_line_or_comment"]


def name_of(tree: Tree[Token]) -> str:
    """The text of an identifier, keyword, literal_value or string used as a name."""
    if tree.data == "string":
        return _literal_string(tree)
    token = tree.children[0]
    return str(token)


def _literal_string(tree: Tree[Token]) -> str:
    parts = [child for child in tree.children if isinstance(child, Tree) and child.data == "string_part"]
    out = []
    for part in parts:
        inner = part.children[0]
        if not isinstance(inner, Token):
            raise HCLError(position(tree), "a block label must be a literal string, without ${...}")
        out.append(_unescape(str(inner)))
    return "".join(out)


_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)


def _unescape(text: str) -> str:
    if text.startswith("$${"):
        return text[1:]
    if text.startswith("%%{"):
        return text[1:]

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "uU" and len(code) > 1:
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, "\\" + code)

    return _ESCAPE.sub(one, text)


# Documents -----------------------------------------------------------------------------------


class Evaluator:
    """Evaluates one document's bodies and expressions against a scope."""

    def __init__(self, text: str, scope: Scope) -> None:
        self.text = text + "\n"  # parses_to_tree appends the same newline
        self.scope = scope
        self.steps = 0

    def body(self, tree: Tree[Token], scope: Scope | None = None) -> Body:
        out = Body()
        for child in subtrees(tree):
            if child.data == "attribute":
                name_tree, expression = subtrees(child)[0], subtrees(child)[-1]
                name = name_of(name_tree)
                if name in out.attributes:
                    raise HCLError(position(child), f'argument "{name}" is set more than once')
                out.attributes[name] = Attribute(name, self.value(expression, scope or self.scope), position(child))
            elif child.data == "block":
                out.blocks.append(self.block(child, scope))
        return out

    def block(self, tree: Tree[Token], scope: Scope | None = None) -> Block:
        parts = subtrees(tree)
        kind = name_of(parts[0])
        labels = [name_of(part) for part in parts[1:-1]]
        return Block(kind, labels, self.body(parts[-1], scope), position(tree))

    def source(self, tree: Tree[Token]) -> str:
        start, end = getattr(tree.meta, "start_pos", None), getattr(tree.meta, "end_pos", None)
        if start is None or end is None:
            return ""
        return self.text[start:end]

    # Expressions ---------------------------------------------------------------------------

    def value(self, tree: Tree[Token] | Token, scope: Scope) -> Any:
        try:
            return self._value(tree, scope)
        except _Runtime:
            raise HCLError(
                position(tree),
                f"{self.source(tree) if isinstance(tree, Tree) else tree} is only known on the client; "
                'write it inside a string, as "${...}"',
            ) from None
        except FunctionError as exc:
            raise HCLError(position(tree), str(exc)) from None

    def _value(self, tree: Tree[Token] | Token, scope: Scope) -> Any:
        if isinstance(tree, Token):
            raise HCLError(position(tree), f"unexpected {str(tree)!r}")
        kind = tree.data
        handler = _HANDLERS.get(str(kind))
        if handler is None:
            raise HCLError(position(tree), f"{kind} expressions are not supported")
        # A job file is evaluated on the API server (/v1/jobs/parse): bound the work and the
        # size of every value, so nested for expressions or doubling locals cannot exhaust it.
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise HCLError(position(tree), f"the file takes more than {MAX_STEPS} evaluation steps")
        result = handler(self, tree, scope)
        if isinstance(result, str | list | dict) and len(result) > MAX_VALUE_LENGTH:
            raise HCLError(position(tree), f"a value is longer than {MAX_VALUE_LENGTH} characters or items")
        return result

    def _expr_term(self, tree: Tree[Token], scope: Scope) -> Any:
        children = subtrees(tree)
        return self._value(children[0], scope)

    def _int(self, tree: Tree[Token], scope: Scope) -> Any:
        return int(str(tree.children[0]))

    def _float(self, tree: Tree[Token], scope: Scope) -> Any:
        number = float(str(tree.children[0]))
        return int(number) if number.is_integer() and abs(number) < 2**63 else number

    def _literal(self, tree: Tree[Token], scope: Scope) -> Any:
        return {"true": True, "false": False, "null": None}[str(tree.children[0])]

    def _string(self, tree: Tree[Token], scope: Scope) -> Any:
        out: list[str] = []
        for part in tree.children:
            if not isinstance(part, Tree) or part.data != "string_part":
                continue
            inner = part.children[0]
            if isinstance(inner, Token):
                out.append(_unescape(str(inner)))
            elif inner.data == "interpolation":
                out.append(self._interpolate(inner, scope))
            else:
                raise HCLError(position(part), "template directives (%{ if } and %{ for }) are not supported")
        return "".join(out)

    def _interpolate(self, tree: Tree[Token], scope: Scope) -> str:
        expression = subtrees(tree)[0]
        try:
            return to_text(self._value(expression, scope))
        except _Runtime:
            return self.source(tree)

    def _heredoc(self, tree: Tree[Token], scope: Scope) -> Any:
        raw = str(tree.children[0])
        trim = raw.startswith("<<-")
        first_newline = raw.index("\n")
        lines = raw[first_newline + 1 :].split("\n")
        # The last two items are the closing marker line and the empty string after it.
        body_lines = lines[:-2]
        if trim:
            indents = [len(line) - len(line.lstrip(" \t")) for line in body_lines if line.strip()]
            cut = min(indents, default=0)
            body_lines = [line[cut:] for line in body_lines]
        text = "".join(line.rstrip("\r") + "\n" for line in body_lines)
        return self._template_text(text, position(tree), scope)

    def _template_text(self, text: str, pos: Pos, scope: Scope) -> str:
        """Interpolate ``${...}`` in heredoc text, which python-hcl2 leaves unparsed."""
        out: list[str] = []
        index = 0
        while True:
            start = text.find("${", index)
            if start < 0:
                out.append(text[index:].replace("%%{", "%{"))
                return "".join(out)
            if start > 0 and text[start - 1] == "$":
                out.append(text[index : start - 1] + "${")
                index = start + 2
                continue
            out.append(text[index:start])
            end = _closing_brace(text, start + 2)
            if end < 0:
                raise HCLError(pos, "unterminated ${ in heredoc")
            inner = text[start + 2 : end]
            out.append(self._expression_text(inner, pos, scope, text[start : end + 1]))
            index = end + 1

    def _expression_text(self, inner: str, pos: Pos, scope: Scope, original: str) -> str:
        try:
            tree = parses_to_tree(f"__x = {inner}")
        except (LarkError, ValueError):
            raise HCLError(pos, f"invalid expression in heredoc: {original}") from None
        attribute = subtrees(subtrees(tree)[0])[0]
        nested = Evaluator(f"__x = {inner}", scope)
        try:
            return to_text(nested._value(subtrees(attribute)[-1], scope))
        except _Runtime:
            return original

    def _tuple(self, tree: Tree[Token], scope: Scope) -> Any:
        return [self._value(item, scope) for item in subtrees(tree)]

    def _object(self, tree: Tree[Token], scope: Scope) -> Any:
        out: JsonObject = {}
        for element in subtrees(tree):
            key_tree, value_tree = subtrees(element)[0], subtrees(element)[-1]
            out[self._object_key(key_tree, scope)] = self._value(value_tree, scope)
        return out

    def _object_key(self, tree: Tree[Token], scope: Scope) -> str:
        inner = subtrees(tree)[0] if subtrees(tree) else tree
        if inner.data == "keyword":
            return str(inner.children[0])
        if inner.data == "expr_term":
            term = subtrees(inner)[0]
            if term.data == "identifier":  # a bare key is a name, not a variable
                return str(term.children[0])
            if term.data == "expr_term" or term.data == "tuple":
                pass
        return to_text(self._value(inner, scope))

    def _identifier(self, tree: Tree[Token], scope: Scope) -> Any:
        name = str(tree.children[0])
        if name in scope.iterators:
            return scope.iterators[name]
        if name in ("var", "local"):
            return {"var": scope.variables, "local": scope.locals}[name]
        raise _Runtime(name)

    def _get_attr(self, tree: Tree[Token], scope: Scope) -> Any:
        base_tree, access = subtrees(tree)
        base = self._value(base_tree, scope)
        key = name_of(subtrees(access)[0])
        return _lookup(base, key, position(access), self.source(tree))

    def _index(self, tree: Tree[Token], scope: Scope) -> Any:
        base_tree, access = subtrees(tree)
        base = self._value(base_tree, scope)
        if access.data == "short_index":
            key: Any = int(str(access.children[-1]))
        else:
            key = self._value(subtrees(access)[0], scope)
        return _lookup(base, key, position(access), self.source(tree))

    def _function(self, tree: Tree[Token], scope: Scope) -> Any:
        parts = subtrees(tree)
        name = str(parts[0].children[0])
        arguments_tree = next((part for part in parts[1:] if part.data == "arguments"), None)
        args: list[Any] = []
        expand = False
        if arguments_tree is not None:
            args = [self._value(arg, scope) for arg in subtrees(arguments_tree)]
            expand = any(isinstance(token, Token) and token.type == "ELLIPSIS" for token in arguments_tree.children)
        if expand:
            if not isinstance(args[-1], list):
                raise HCLError(position(tree), f"{name}(): the argument before ... must be a list")
            args = args[:-1] + args[-1]
        if name == "file":
            return self._file(args, position(tree), scope)
        function = FUNCTIONS.get(name)
        if function is None:
            raise HCLError(position(tree), f'unknown function "{name}"')
        try:
            return function(*args)
        except FunctionError as exc:
            raise HCLError(position(tree), f"{name}(): {exc}") from None
        except TypeError:
            raise HCLError(position(tree), f"{name}(): wrong number or type of arguments") from None

    def _file(self, args: list[Any], pos: Pos, scope: Scope) -> str:
        if len(args) != 1 or not isinstance(args[0], str):
            raise HCLError(pos, "file(): expects one path")
        if scope.base_dir is None:
            raise HCLError(pos, "file() is not available here; run the job file through the CLI, which reads it")
        path = scope.base_dir / args[0]
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise HCLError(pos, f"file(): cannot read {args[0]!r}: {getattr(exc, 'strerror', None) or exc}") from None

    def _unary(self, tree: Tree[Token], scope: Scope) -> Any:
        operator = str(tree.children[0])
        operand = self._value(subtrees(tree)[0], scope)
        if operator == "!":
            if not isinstance(operand, bool):
                raise HCLError(position(tree), "! needs a bool")
            return not operand
        return -_number(operand, position(tree))

    def _binary(self, tree: Tree[Token], scope: Scope) -> Any:
        left_tree, term = subtrees(tree)[0], subtrees(tree)[1]
        operator = str(subtrees(term)[0].children[0])
        left = self._value(left_tree, scope)
        if operator == "&&" and left is False:
            return False
        if operator == "||" and left is True:
            return True
        right = self._value(subtrees(term)[1], scope)
        return _binary(operator, left, right, position(tree))

    def _conditional(self, tree: Tree[Token], scope: Scope) -> Any:
        condition, yes, no = subtrees(tree)
        test = self._value(condition, scope)
        if not isinstance(test, bool):
            raise HCLError(position(tree), "the condition of ? : must be a bool")
        return self._value(yes if test else no, scope)

    def _parenthesised(self, tree: Tree[Token], scope: Scope) -> Any:
        return self._value(subtrees(tree)[0], scope)

    def _for(self, tree: Tree[Token], scope: Scope) -> Any:
        parts = subtrees(tree)
        intro, rest = parts[0], parts[1:]
        names = [str(t.children[0]) for t in subtrees(intro) if t.data == "identifier"]
        collection = self._value(subtrees(intro)[-1], scope)
        condition = rest[-1] if rest and rest[-1].data == "for_cond" else None
        expressions = [part for part in rest if part.data != "for_cond"]
        grouped = any(isinstance(t, Token) and t.type == "ELLIPSIS" for t in tree.children)
        if isinstance(collection, dict):
            pairs: list[tuple[Any, Any]] = list(collection.items())
        elif isinstance(collection, list):
            pairs = list(enumerate(collection))
        else:
            raise HCLError(position(tree), "for expressions need a list or a map")
        results_list: list[Any] = []
        results_map: JsonObject = {}
        grouped_map: dict[str, JsonList] = {}
        for key, item in pairs:
            bound = {names[0]: item} if len(names) == 1 else {names[0]: key, names[1]: item}
            inner = scope.with_iterators(bound)
            if condition is not None:
                test = self._value(subtrees(condition)[0], inner)
                if not isinstance(test, bool):
                    raise HCLError(position(condition), "the if of a for expression must be a bool")
                if not test:
                    continue
            if tree.data == "for_tuple_expr":
                results_list.append(self._value(expressions[0], inner))
            else:
                result_key = to_text(self._value(expressions[0], inner))
                result_value = self._value(expressions[1], inner)
                if grouped:
                    grouped_map.setdefault(result_key, []).append(result_value)
                elif result_key in results_map:
                    raise HCLError(position(tree), f"duplicate key {result_key!r} in for expression (use ... to group)")
                else:
                    results_map[result_key] = result_value
        if tree.data == "for_tuple_expr":
            return results_list
        return dict(grouped_map) if grouped else results_map


def _expr_dispatch(self: Evaluator, tree: Tree[Token], scope: Scope) -> Any:
    children = subtrees(tree)
    if len(children) == 1 and any(isinstance(t, Token) and t.type == "LPAR" for t in tree.children):
        return self._parenthesised(tree, scope)
    return self._expr_term(tree, scope)


_HANDLERS: dict[str, Callable[[Evaluator, Tree[Token], Scope], Any]] = {
    "expr_term": _expr_dispatch,
    "int_lit": Evaluator._int,
    "float_lit": Evaluator._float,
    "literal_value": Evaluator._literal,
    "string": Evaluator._string,
    "heredoc_template": Evaluator._heredoc,
    "heredoc_template_trim": Evaluator._heredoc,
    "tuple": Evaluator._tuple,
    "object": Evaluator._object,
    "identifier": Evaluator._identifier,
    "get_attr_expr_term": Evaluator._get_attr,
    "index_expr_term": Evaluator._index,
    "function_call": Evaluator._function,
    "unary_op": Evaluator._unary,
    "binary_op": Evaluator._binary,
    "conditional": Evaluator._conditional,
    "for_tuple_expr": Evaluator._for,
    "for_object_expr": Evaluator._for,
}


def _closing_brace(text: str, start: int) -> int:
    depth, index, quoted = 1, start, False
    while index < len(text):
        char = text[index]
        if quoted:
            if char == "\\":
                index += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return -1


def _lookup(base: Any, key: Any, pos: Pos, source: str) -> Any:
    if isinstance(base, dict):
        if isinstance(key, str) and key in base:
            return base[key]
        if base is not None and source.startswith(("var.", "local.")):
            raise HCLError(pos, f"{source} is not defined")
        raise HCLError(pos, f"{source}: no key {key!r}")
    if isinstance(base, list):
        if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < len(base):
            raise HCLError(pos, f"{source}: index {key!r} out of range")
        return base[key]
    raise HCLError(pos, f"{source}: cannot index a {type(base).__name__}")


def _number(value: Any, pos: Pos) -> int | float:
    if isinstance(value, bool):
        raise HCLError(pos, f"expected a number, got {to_text(value)}")
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise HCLError(pos, f"expected a number, got {value!r}") from None
        return int(number) if number.is_integer() else number
    raise HCLError(pos, f"expected a number, got {type(value).__name__}")


def _binary(operator: str, left: Any, right: Any, pos: Pos) -> Any:
    if operator in ("==", "!="):
        equal = (left == right and type(left) is type(right)) or (_is_num(left) and _is_num(right) and left == right)
        return equal if operator == "==" else not equal
    if operator in ("&&", "||"):
        if not isinstance(left, bool) or not isinstance(right, bool):
            raise HCLError(pos, f"{operator} needs bools")
        return left and right if operator == "&&" else left or right
    a, b = _number(left, pos), _number(right, pos)
    if operator == "+":
        return a + b
    if operator == "-":
        return a - b
    if operator == "*":
        return a * b
    if operator in ("/", "%"):
        if b == 0:
            raise HCLError(pos, "division by zero")
        if operator == "%":
            return a % b
        quotient = a / b
        return int(quotient) if quotient.is_integer() else quotient
    return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[operator]


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
