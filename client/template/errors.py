"""The one error a template raises: where it happened (name, line, column) and what."""

from __future__ import annotations


class TemplateError(Exception):
    """A template that does not parse or does not execute, formatted as Go's text/template
    reports it: ``template: NAME:LINE:COL: message``."""

    def __init__(self, name: str, line: int, col: int, message: str) -> None:
        super().__init__(f"template: {name}:{line}:{col}: {message}")
        self.name, self.line, self.col, self.message = name, line, col, message


class MissingDependency(Exception):
    """A function's data is not there yet (a variable that does not exist): the template
    cannot render until it appears (consul-template's missing dependency)."""

    def __init__(self, dependency: str) -> None:
        super().__init__(f"missing: {dependency}")
        self.dependency = dependency
