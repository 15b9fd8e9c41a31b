"""The request body as the API reads it from gunicorn: all of it within a deadline, and broken
framing answered as the client's error.

- gunicorn bounds each read of the body by the socket timeout (http_body_timeout_s), so a client
  sending one byte per pause could hold a connection forever. `TimedBody` bounds the whole body
  (http_body_deadline_s, counted from the end of the headers) with a gevent timeout around
  every read, since one read of gunicorn's body may wait on several `recv` calls.
- A malformed chunked body (a size that is not hex, a chunk longer than its size, a missing
  terminator) raised gunicorn's ParseException inside the application, which answered 500;
  here it becomes a 400 naming the problem. A body cut short (gunicorn's NoMoreData) is a 400
  and a read that outwaits the socket timeout a 408, both naming the body, where werkzeug
  would answer a bare 400 "could not understand".
- Whatever the route left unread is drained after the answer, under the same deadline, and a
  body that fails in any way marks gunicorn's body `failed`: gunicorn then closes the
  connection instead of looking for a next request at an unknown position.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import gevent
from gunicorn.http.errors import NoMoreData, ParseException
from werkzeug.wsgi import ClosingIterator

from app.values.errors import CorralError, InvalidInput, RequestTimeout

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]
DRAIN_STEP = 65536
Read = TypeVar("Read")


class ServerBody(Protocol):
    """What TimedBody uses of gunicorn's request body (gunicorn.http.body.Body)."""

    failed: bool

    def read(self, size: int | None = None) -> bytes: ...

    def readline(self, size: int | None = None) -> bytes: ...

    def readlines(self, size: int | None = None) -> list[bytes]: ...


@dataclass(frozen=True)
class BodyLimits:
    deadline_s: float  # http_body_deadline_s: the whole body
    pause_s: float  # http_body_timeout_s: one read (the socket's timeout, set by the worker)
    max_bytes: int  # http_max_body_bytes: the most drained after the route answered


class TimedBody:
    """A file-like wsgi.input over gunicorn's request body, with the whole-body deadline."""

    def __init__(self, body: ServerBody, limits: BodyLimits) -> None:
        self._body = body
        self._limits = limits
        self._ends_at = time.monotonic() + limits.deadline_s

    def read(self, size: int | None = None) -> bytes:
        return self._guarded(self._body.read, size)

    def readline(self, size: int | None = None) -> bytes:
        return self._guarded(self._body.readline, size)

    def readlines(self, size: int | None = None) -> list[bytes]:
        return self._guarded(self._body.readlines, size)

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line

    def _guarded(self, read: Callable[[int | None], Read], size: int | None) -> Read:
        late = RequestTimeout.of("body", f"did not arrive within http_body_deadline_s ({self._limits.deadline_s:g}s)")
        remaining = self._ends_at - time.monotonic()
        if remaining <= 0:
            self._fail()
            raise late
        try:
            # The exception is raised inside gunicorn's read, which marks its body failed.
            with gevent.Timeout(remaining, late):
                return read(size)
        except ParseException as err:
            self._fail()
            raise InvalidInput.of("body", f"malformed chunked encoding ({type(err).__name__}: {err})") from None
        except NoMoreData:
            self._fail()
            raise InvalidInput.of("body", "ended before all of it arrived (the client closed its side)") from None
        except TimeoutError:
            self._fail()
            pause = self._limits.pause_s
            raise RequestTimeout.of("body", f"stopped arriving for http_body_timeout_s ({pause:g}s)") from None

    def drain(self) -> None:
        """Read and drop what the route left unread; on a deadline, a framing error, a dropped
        connection or more than `max_bytes`, mark the body failed instead."""
        drained = 0
        try:
            while chunk := self.read(DRAIN_STEP):
                drained += len(chunk)
                if drained > self._limits.max_bytes:
                    self._fail()
                    return
        except (CorralError, OSError):
            self._fail()

    def _fail(self) -> None:
        # gunicorn reads this before parsing a next request on the connection, and closes it instead.
        self._body.failed = True


def timed_bodies(app: WsgiApp, limits: BodyLimits) -> WsgiApp:
    """`app` reading its request bodies through TimedBody."""

    def middleware(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        body = TimedBody(environ["wsgi.input"], limits)
        environ["wsgi.input"] = body
        return ClosingIterator(app(environ, start_response), [body.drain])

    return middleware
