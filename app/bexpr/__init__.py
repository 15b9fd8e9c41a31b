"""Nomad's `filter=` expressions (the go-bexpr grammar), parsed and evaluated against the JSON
objects the API lists. Pure: no I/O."""

from app.bexpr.evaluate import FilterEvalError, Predicate, compile_filter
from app.bexpr.syntax import FilterError, FilterSyntaxError, parse

__all__ = ["FilterError", "FilterEvalError", "FilterSyntaxError", "Predicate", "compile_filter", "parse"]
