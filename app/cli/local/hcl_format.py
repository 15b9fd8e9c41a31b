"""The layout part of HCL's canonical format (what `nomad fmt` applies through hclwrite): two
spaces of indentation per open brace, bracket or parenthesis; one space around an attribute's
`=`, the `=` of consecutive attributes at the same depth aligned; block headers with single
spaces; no trailing blanks; one final newline. Comments and the text of strings and heredocs
are kept as written (a heredoc's lines are neither indented nor trimmed); inside expressions,
and inside the `${...}` and `%{...}` sequences of strings and heredocs, the blanks between tokens
follow hclwrite's rules (hcl_spacing); the trailing comments of consecutive lines are aligned."""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.cli.local.hcl_spacing import space_line, split_comment, template_line

ASSIGN = re.compile(r"^([A-Za-z_][\w-]*)\s*=(?!=)\s*(.*)$")
HEREDOC = re.compile(r"<<-?([A-Za-z_]\w*)\s*$")
OPENERS, CLOSERS = "{[(", "}])"


@dataclass
class _Line:
    indent: int
    text: str
    key: str | None = None  # an attribute's name: the line takes part in `=` alignment
    verbatim: bool = False  # inside a heredoc, printed as written
    comment: str = ""  # a trailing comment after code, aligned with its neighbours'


def format_hcl(source: str) -> str:
    lines = _lay_out(source.replace("\r\n", "\n").split("\n"))
    _align(lines)
    _align_comments(lines)
    out = [line.text if line.verbatim else ("  " * line.indent + line.text if line.text else "") for line in lines]
    return "\n".join(out).rstrip("\n") + "\n"


def _lay_out(raw: list[str]) -> list[_Line]:
    lines: list[_Line] = []
    depth, heredoc, in_comment = 0, "", False
    sequence_open = False  # a heredoc's `${` or `%{` runs past its line: the rest is kept as written
    for text in raw:
        if heredoc:
            if text.strip() == heredoc:
                heredoc = ""
            elif not sequence_open:
                text, sequence_open = template_line(text)
            lines.append(_Line(depth, text, verbatim=True))
            continue
        stripped = text.strip()
        if in_comment:
            lines.append(_Line(depth, text.rstrip(), verbatim=True))
            in_comment = "*/" not in stripped
            continue
        leading = len(stripped) - len(stripped.lstrip(CLOSERS))
        indent = max(depth - leading, 0)
        key = None
        code, comment = split_comment(stripped)
        stripped = space_line(code)
        match = ASSIGN.match(stripped)
        if match:
            key, stripped = match.group(1), f"{match.group(1)} = {match.group(2)}".rstrip()
        elif stripped.endswith("{") and not stripped.startswith(("#", "//")):
            stripped = _block_header(stripped)
        lines.append(_Line(indent, stripped, key, comment=comment))
        change, opens_comment = _depth_change(f"{stripped} {comment}")
        depth = max(depth + change, 0)
        in_comment = opens_comment
        found = HEREDOC.search(stripped)
        if found and not _in_string(stripped, found.start()):
            heredoc, sequence_open = found.group(1), False
    return lines


def _block_header(text: str) -> str:
    """`job   "x"   {` -> `job "x" {`, the spaces between its labels only (not inside them)."""
    words = re.findall(r'"(?:[^"\\]|\\.)*"|[^\s"]+', text)
    return " ".join(words)


def _depth_change(text: str) -> tuple[int, bool]:
    """The brackets TEXT opens minus those it closes, outside strings and comments; and whether
    it leaves a /* comment open."""
    change, i, quoted = 0, 0, False
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "\\":
                i += 2
                continue
            quoted = char != '"'
        elif char == '"':
            quoted = True
        elif char == "#" or text.startswith("//", i):
            break
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                return change, True
            i = end + 2
            continue
        elif char in OPENERS:
            change += 1
        elif char in CLOSERS:
            change -= 1
        i += 1
    return change, False


def _in_string(text: str, at: int) -> bool:
    quoted, i = False, 0
    while i < at:
        if quoted and text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            quoted = not quoted
        i += 1
    return quoted


def _align(lines: list[_Line]) -> None:
    """Pad the names of consecutive attributes at one depth so their `=` line up."""
    chain: list[_Line] = []
    for line in [*lines, _Line(-1, "")]:
        if line.verbatim:
            # A heredoc's body (or a /* comment's) belongs to the line that opened it, as in
            # hclwrite: the attribute after a heredoc still aligns with the one before it.
            continue
        if line.key is not None and not line.verbatim and (not chain or chain[0].indent == line.indent):
            chain.append(line)
            continue
        width = max((len(c.key or "") for c in chain), default=0)
        for member in chain:
            name = member.key or ""
            member.text = name.ljust(width) + member.text[len(name) :]
        chain = [line] if line.key is not None and not line.verbatim else []


def _align_comments(lines: list[_Line]) -> None:
    """hclwrite's trailing comments: those of consecutive lines start in one column, one blank
    after the longest line's code (a line without one ends the run)."""
    run: list[_Line] = []
    for line in [*lines, _Line(-1, "")]:
        if line.verbatim:
            continue
        if line.comment:
            run.append(line)
            continue
        width = max((2 * r.indent + len(r.text) for r in run), default=0)
        for member in run:
            member.text += " " * (width - 2 * member.indent - len(member.text) + 1) + member.comment
        run = []
