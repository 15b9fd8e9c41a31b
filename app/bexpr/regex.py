"""Regular expressions for `matches`: Go's RE2 syntax and linear-time matching, so a filter
from any caller cannot make a server backtrack for minutes (Python's `re` would)."""

from __future__ import annotations

from typing import Protocol, cast

import re2


class Pattern(Protocol):
    def search(self, text: str) -> object | None: ...


_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a caller's bad pattern is a 400, not a line in the server log


def compile_pattern(source: str) -> Pattern:
    """A compiled pattern; ValueError names what RE2 refused."""
    try:
        return cast(Pattern, re2.compile(source, _OPTIONS))
    except re2.error as err:
        reason = err.args[0] if err.args else err
        raise ValueError(reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)) from None
    except (TypeError, UnicodeError) as err:
        raise ValueError(str(err)) from None
