"""workers.request_body: the whole-body deadline, broken chunked framing named as the body's
problem, and the drain after the answer; over a stand-in for gunicorn's body."""

from __future__ import annotations

import gevent
import pytest
from gunicorn.http.errors import InvalidChunkSize, NoMoreData

from app.values.errors import InvalidInput, RequestTimeout
from workers.request_body import BodyLimits, TimedBody, timed_bodies

pytestmark = pytest.mark.unit
LIMITS = BodyLimits(deadline_s=0.05, pause_s=30.0, max_bytes=10)


class FakeBody:
    """gunicorn's Body: `failed` set when a read raises, as gunicorn.http.body.Body does."""

    def __init__(self, pieces: list[bytes | BaseException], *, stall: bool = False) -> None:
        self.pieces = pieces
        self.stall = stall  # after the pieces: wait for more, as a trickling client makes it
        self.failed = False

    def read(self, size: int | None = None) -> bytes:
        try:
            return self._next()
        except Exception:
            self.failed = True
            raise

    def readline(self, size: int | None = None) -> bytes:
        return self.read(size)

    def readlines(self, size: int | None = None) -> list[bytes]:
        return [self.read(size)]

    def _next(self) -> bytes:
        if self.pieces:
            piece = self.pieces.pop(0)
            if isinstance(piece, BaseException):
                raise piece
            return piece
        if self.stall:
            gevent.sleep(3600)
        return b""


def test_a_body_that_keeps_the_reader_waiting_past_the_deadline_is_a_408_and_fails_the_body() -> None:
    body = FakeBody([b"{"], stall=True)
    timed = TimedBody(body, LIMITS)
    assert timed.read(1) == b"{"
    with pytest.raises(RequestTimeout) as raised:
        timed.read(100)
    assert raised.value.problems[0].field == "body"
    assert "http_body_deadline_s" in raised.value.problems[0].message
    assert body.failed


def test_broken_chunks_and_a_cut_body_are_a_400_naming_the_body() -> None:
    for error, words in ((InvalidChunkSize(b"zz"), "malformed chunked encoding"), (NoMoreData(b""), "ended before")):
        body = FakeBody([error])
        with pytest.raises(InvalidInput) as raised:
            TimedBody(body, LIMITS).read()
        assert raised.value.problems[0].field == "body"
        assert words in raised.value.problems[0].message
        assert body.failed


def test_a_read_timeout_of_the_socket_is_a_408_naming_the_pause_setting() -> None:
    body = FakeBody([TimeoutError("timed out")])
    with pytest.raises(RequestTimeout) as raised:
        TimedBody(body, LIMITS).read()
    assert "http_body_timeout_s" in raised.value.problems[0].message


def test_the_drain_after_the_answer_keeps_a_complete_body_and_fails_the_rest() -> None:
    complete = FakeBody([b"12345"])
    TimedBody(complete, LIMITS).drain()
    assert not complete.failed  # the connection may serve a next request

    for pieces, stall in (([b"1"], True), ([b"x" * 11], False), ([InvalidChunkSize(b"zz")], False)):
        left = FakeBody(list(pieces), stall=stall)
        TimedBody(left, LIMITS).drain()
        assert left.failed, pieces  # trickled past the deadline, over max_bytes, or broken


def test_the_middleware_hands_the_route_a_timed_body_and_drains_it_on_close() -> None:
    seen: list[bytes] = []

    def app(environ: dict[str, object], start_response: object) -> list[bytes]:
        stream = environ["wsgi.input"]
        assert isinstance(stream, TimedBody)
        seen.append(stream.read(2))
        return [b"ok"]

    body = FakeBody([b"ab", b"unread"])
    answer = timed_bodies(app, LIMITS)({"wsgi.input": body}, lambda *a: None)
    assert list(answer) == [b"ok"]
    assert hasattr(answer, "close")  # the WSGI iterable the server closes
    answer.close()
    assert seen == [b"ab"] and body.pieces == [] and not body.failed
