"""Domain errors. The API turns each into a 4xx naming the field and the problem."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldProblem:
    field: str
    message: str


class CorralError(Exception):
    """Base class; status is the HTTP status the API answers with."""

    status = 400

    def __init__(self, problems: list[FieldProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))

    @classmethod
    def of(cls, field: str, message: str) -> CorralError:
        return cls([FieldProblem(field, message)])


class InvalidInput(CorralError):
    status = 400


class NotFound(CorralError):
    status = 404


class Conflict(CorralError):
    status = 409


class Forbidden(CorralError):
    status = 403


class RequestTimeout(CorralError):
    """The request body did not arrive within its deadline."""

    status = 408


class StillRunning(CorralError):
    """The work was accepted and carries on, but not within the time the caller waits."""

    status = 504


class Failed(CorralError):
    """The work ran and failed; the message says why."""

    status = 500


class DoneElsewhere(CorralError):
    """A Nomad route whose job corral does another way (Raft, gossip, snapshots): the message
    names what to use instead."""

    status = 501
