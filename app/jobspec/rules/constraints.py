"""Rules for placement blocks: constraints, affinities and spreads."""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.jobspec.errors import FieldError, quote
from app.jobspec.model import Affinity, Constraint, Spread
from app.jobspec.rules.checks import Problems, between, one_of, required

# Operands that compare an attribute with a value.
_COMPARISONS = ("=", "==", "is", "!=", "not", "<", "<=", ">", ">=")
_SET_OPERANDS = ("set_contains", "set_contains_all", "set_contains_any")
_VERSION_OPERANDS = ("version", "semver")
AFFINITY_OPERANDS = (*_COMPARISONS, "regexp", *_VERSION_OPERANDS, *_SET_OPERANDS)
# Affinities only express preferences, so the presence and distinctness operands that only
# make sense as hard placement rules are constraint-only, as in Nomad.
CONSTRAINT_OPERANDS = (
    *AFFINITY_OPERANDS,
    "is_set",
    "is_not_set",
    "distinct_hosts",
    "distinct_property",
)

_VERSION = (
    r"v?\d+(?:\.\d+)*"
    r"(?:-?[0-9A-Za-z~-]+(?:\.[0-9A-Za-z~-]+)*)?"
    r"(?:\+[0-9A-Za-z~-]+(?:\.[0-9A-Za-z~-]+)*)?"
)
_VERSION_TERM = re.compile(rf"\s*(?:=|!=|>=|=>|<=|=<|~>|>|<)?\s*{_VERSION}\s*")


def check_constraints(constraints: Sequence[Constraint], path: str) -> Problems:
    for index, constraint in enumerate(constraints):
        yield from _check_constraint(constraint, f"{path}[{index}]")


def check_affinities(affinities: Sequence[Affinity], path: str) -> Problems:
    for index, affinity in enumerate(affinities):
        item = f"{path}[{index}]"
        operand_problems = list(one_of(affinity.operand, AFFINITY_OPERANDS, f"{item}.Operand"))
        yield from operand_problems
        if not operand_problems:
            yield from _check_targets(affinity.operand, affinity.l_target, affinity.r_target, item)
        yield from between(affinity.weight, -100, 100, f"{item}.Weight")
        if affinity.weight == 0:
            yield FieldError(f"{item}.Weight", "must not be 0")


def check_spreads(spreads: Sequence[Spread], path: str) -> Problems:
    for index, spread in enumerate(spreads):
        item = f"{path}[{index}]"
        yield from required(spread.attribute, f"{item}.Attribute")
        yield from between(spread.weight, 0, 100, f"{item}.Weight")
        seen: set[str] = set()
        for position, target in enumerate(spread.spread_target):
            target_path = f"{item}.SpreadTarget[{position}]"
            yield from required(target.value, f"{target_path}.Value")
            if target.value and target.value in seen:
                yield FieldError(f"{target_path}.Value", f"duplicate target {quote(target.value)}")
            seen.add(target.value)
            yield from between(target.percent, 0, 100, f"{target_path}.Percent")
        total = sum(target.percent for target in spread.spread_target)
        if total > 100:
            yield FieldError(f"{item}.SpreadTarget", f"percentages must add up to at most 100, got {total}")


def _check_constraint(constraint: Constraint, path: str) -> Problems:
    operand_problems = list(one_of(constraint.operand, CONSTRAINT_OPERANDS, f"{path}.Operand"))
    yield from operand_problems
    if not operand_problems:
        yield from _check_targets(constraint.operand, constraint.l_target, constraint.r_target, path)


def _check_targets(operand: str, l_target: str, r_target: str, path: str) -> Problems:
    if operand == "distinct_hosts":
        return
    if not l_target:
        yield FieldError(f"{path}.LTarget", f"is required for operand {quote(operand)}")
    rtarget_path = f"{path}.RTarget"
    if operand in ("is_set", "is_not_set"):
        if r_target:
            yield FieldError(rtarget_path, f"must be empty for operand {quote(operand)}")
        return
    if operand == "distinct_property":
        # An optional RTarget caps how many allocations may share one property value.
        if r_target and not (r_target.isdigit() and int(r_target) >= 1):
            yield FieldError(
                rtarget_path,
                f"must be a whole number of at least 1 when set, got {quote(r_target)}",
            )
        return
    if not r_target:
        yield FieldError(rtarget_path, f"is required for operand {quote(operand)}")
        return
    if operand == "regexp":
        try:
            re.compile(r_target)
        except re.error as exc:
            yield FieldError(rtarget_path, f"must be a valid regular expression: {exc}")
    elif operand in _VERSION_OPERANDS and not all(_VERSION_TERM.fullmatch(term) for term in r_target.split(",")):
        yield FieldError(
            rtarget_path,
            f'must be a version constraint such as ">= 1.2, < 2.0", got {quote(r_target)}',
        )
