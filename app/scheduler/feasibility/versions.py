"""Version constraints for the `version` and `semver` operands.

`version` follows go-version (what Nomad uses): loose versions such as "v1.2" or "1.2.3.4",
the pessimistic operator ~>, and a pre-release check: a pre-release version only satisfies
a clause that itself names a pre-release of the same base version. `semver` is stricter
about form: at most MAJOR.MINOR.PATCH, pre-release only after "-", no ~>; pre-releases are
ordered by Semantic Versioning 2.0 precedence (1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_IDENT = r"[0-9A-Za-z~-]+(?:\.[0-9A-Za-z~-]+)*"
_LOOSE = re.compile(
    rf"v?(\d+(?:\.\d+)*)(?:-({_IDENT})|([A-Za-z~-][0-9A-Za-z~-]*(?:\.[0-9A-Za-z~-]+)*))?(?:\+{_IDENT})?"
)
_STRICT = re.compile(rf"v?(\d+(?:\.\d+){{0,2}})(?:-({_IDENT}))?(?:\+{_IDENT})?")
_CLAUSE = re.compile(r"\s*(=|!=|>=|=>|<=|=<|~>|>|<)?\s*(\S+)\s*")
_OP_ALIASES = {"=>": ">=", "=<": "<="}


@dataclass(frozen=True)
class Version:
    segments: tuple[int, ...]
    prerelease: str = ""


def parse(text: str, *, strict: bool = False) -> Version | None:
    match = (_STRICT if strict else _LOOSE).fullmatch(text.strip())
    if match is None:
        return None
    pre = match.group(2) or (match.group(3) if not strict else None) or ""
    return Version(tuple(int(s) for s in match.group(1).split(".")), pre)


def compare(a: Version, b: Version) -> int:
    """-1, 0 or 1; missing trailing segments count as zero."""
    width = max(len(a.segments), len(b.segments))
    sa = a.segments + (0,) * (width - len(a.segments))
    sb = b.segments + (0,) * (width - len(b.segments))
    if sa != sb:
        return -1 if sa < sb else 1
    return _compare_prerelease(a.prerelease, b.prerelease)


def _compare_prerelease(a: str, b: str) -> int:
    if a == b:
        return 0
    if not a or not b:
        return 1 if not a else -1  # a release ranks above any of its pre-releases
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1  # numeric identifiers rank below alphanumeric ones
        return -1 if x < y else 1
    return -1 if len(a.split(".")) < len(b.split(".")) else 1


@dataclass(frozen=True)
class _Clause:
    op: str
    version: Version
    precision: int


@lru_cache(maxsize=1024)
def _parse_constraint(text: str, strict: bool) -> tuple[_Clause, ...] | None:
    clauses = []
    for part in text.split(","):
        match = _CLAUSE.fullmatch(part)
        if match is None:
            return None
        op = _OP_ALIASES.get(match.group(1) or "=", match.group(1) or "=")
        version = parse(match.group(2), strict=strict)
        if version is None or (strict and op == "~>"):
            return None
        clauses.append(_Clause(op, version, len(version.segments)))
    return tuple(clauses)


def matches(version_text: str, constraint_text: str, *, semver: bool = False) -> bool:
    """Whether the version satisfies every comma-separated clause; unparsable input never does."""
    version = parse(version_text, strict=semver)
    clauses = _parse_constraint(constraint_text, semver)
    if version is None or not clauses:
        return False
    return all(_satisfies(version, c, semver) for c in clauses)


def _satisfies(v: Version, c: _Clause, semver: bool) -> bool:
    if not semver and not _prerelease_allowed(v, c):
        return False
    order = compare(v, c.version)
    if c.op == "~>":
        return order >= 0 and _same_prefix(v, c)
    return {
        "=": order == 0,
        "!=": order != 0,
        ">": order > 0,
        ">=": order >= 0,
        "<": order < 0,
        "<=": order <= 0,
    }[c.op]


def _prerelease_allowed(v: Version, c: _Clause) -> bool:
    if v.prerelease and c.version.prerelease:
        return _padded(v.segments, c.precision) == _padded(c.version.segments, c.precision)
    if v.prerelease:
        return False
    return not (c.op == "~>" and c.version.prerelease)


def _same_prefix(v: Version, c: _Clause) -> bool:
    """~> 1.2 allows 1.x (x >= 2); ~> 1.2.3 allows 1.2.x (x >= 3): all but the last given segment fixed."""
    fixed = max(c.precision - 1, 1)
    return _padded(v.segments, fixed)[:fixed] == _padded(c.version.segments, fixed)[:fixed]


def _padded(segments: tuple[int, ...], width: int) -> tuple[int, ...]:
    return segments[:width] + (0,) * max(0, width - len(segments))
