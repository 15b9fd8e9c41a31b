"""The API's gunicorn worker: gevent, so a waiting blocking query costs a greenlet and no thread,
plus the limits that keep one client from taking the API away from the others.

- Connections per client address (Nomad's `http_max_conns_per_client`): over the limit a new
  connection gets a 429 with Retry-After and is closed before anything is read from it.
- A deadline for a request's line and headers (and for an idle keep-alive connection): a client
  that trickles header lines is cut off, however often it sends a byte; one whose bytes wait
  unread because this worker is busy is not (workers.header_deadline).
- A read timeout while a body is read, and a deadline for the whole body
  (workers.request_body): a stalled or trickled upload ends in 408, a malformed chunked body
  in 400.

The limit is counted per worker process (each process accepts its own connections), so one
address may hold up to `http_max_conns_per_client` in each of the `http_workers` processes."""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections import Counter
from typing import Any

import gevent
import psycopg.waiting
from gunicorn.workers.ggevent import GeventWorker

from app.settings.config import Settings
from workers.collector import collect_on_a_timer
from workers.header_deadline import HeaderDeadline
from workers.request_body import BodyLimits, timed_bodies

TOO_MANY = (
    b"HTTP/1.1 429 Too Many Requests\r\n"
    b"Content-Type: application/problem+json\r\n"
    b"X-Content-Type-Options: nosniff\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n"
    b"Content-Length: %d\r\n\r\n%s"
)
TOO_MANY_BODY = (
    b'{"type":"about:blank","title":"Too Many Requests","status":429,'
    b'"detail":"this address holds too many open connections (http_max_conns_per_client); retry later",'
    b'"errors":[{"field":"","message":"this address holds too many open connections"}]}'
)


class ConnectionCounter:
    """Open connections per client address in this process."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: Counter[str] = Counter()

    def admit(self, address: str) -> bool:
        if self.limit and self._open[address] >= self.limit:
            return False
        self._open[address] += 1
        return True

    def release(self, address: str) -> None:
        self._open[address] -= 1
        if self._open[address] <= 0:
            del self._open[address]

    def open(self, address: str) -> int:
        return self._open[address]


def client_address(addr: Any) -> str:
    """The peer's host: an (ip, port[, ...]) tuple for TCP, a path (or nothing) for a Unix socket."""
    if isinstance(addr, tuple) and addr:
        return str(addr[0])
    return "unix"


def cooperative_psycopg() -> None:
    """psycopg picks its wait function when first imported, and the master process imports it
    before gunicorn forks and gevent patches `select`: the C wait it picked then would block
    every greenlet of the worker while one query runs. Switch to the poll-based wait, which
    calls the (now patched) `select.poll` and yields to the other greenlets."""
    psycopg.waiting.wait = psycopg.waiting.wait_poll


class CorralWorker(GeventWorker):  # type: ignore[misc]
    """gunicorn's gevent worker with corral's limits (settings from `corral server`)."""

    settings: Settings  # set on the class by workers.server before gunicorn forks
    wsgi: Any  # the application gunicorn calls: the Flask app inside workers.request_body

    def init_process(self) -> None:
        self.connections = ConnectionCounter(self.settings.http_max_conns_per_client)
        self.reading: dict[object, socket.socket] = {}  # each connection's greenlet -> its socket
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        settings = self.settings
        self.application = self.wsgi  # the Flask app, for _release_waiters
        limits = BodyLimits(settings.http_body_deadline_s, settings.http_body_timeout_s, settings.http_max_body_bytes)
        self.wsgi = timed_bodies(self.application, limits)
        # Everything loaded so far lives as long as the worker: frozen, the collector never walks
        # it again (nor touches it at exit, which slowed shutdown); full collections run on a
        # timer, not every few seconds under a connected fleet (workers.collector).
        collect_on_a_timer()

    def patch(self) -> None:
        super().patch()
        cooperative_psycopg()

    def timeout_ctx(self) -> HeaderDeadline:
        # gunicorn reads each request's line and headers under this context (the first request
        # of a connection too, because keepalive is on), and silently closes the connection
        # when it expires (not while the client's bytes wait unread: workers.header_deadline).
        return HeaderDeadline(self.reading.get(gevent.getcurrent()), self.settings.http_header_timeout_s)

    def handle(self, listener: socket.socket, client: socket.socket, addr: Any) -> None:
        address = client_address(addr)
        if not self.connections.admit(address):
            self._refuse(client)
            return
        reader = gevent.getcurrent()
        self.reading[reader] = client
        try:
            # A socket timeout bounds every read of the body (and every write of the answer).
            client.settimeout(self.settings.http_body_timeout_s)
            super(GeventWorker, self).handle(listener, client, addr)
        finally:
            del self.reading[reader]
            self.connections.release(address)

    def _refuse(self, client: socket.socket) -> None:
        try:
            client.settimeout(1.0)
            client.sendall(TOO_MANY % (len(TOO_MANY_BODY), TOO_MANY_BODY))
        except OSError:
            pass
        finally:
            client.close()

    def handle_exit(self, sig: int, frame: Any) -> None:
        """SIGTERM: stop accepting, and let waiting blocking queries answer now rather than hold
        the shutdown for their whole wait."""
        super().handle_exit(sig, frame)
        self._release_waiters()

    def handle_quit(self, sig: int, frame: Any) -> None:
        super().handle_quit(sig, frame)
        self._release_waiters()

    def _release_waiters(self) -> None:
        app = getattr(self, "application", None)
        extensions = getattr(app, "extensions", {})
        state = extensions.get("corral") if isinstance(extensions, dict) else None
        if state is not None:
            gevent.spawn(state.watcher.release_waiters)


def exit_worker(server: Any, worker: Any) -> None:
    """gunicorn's `worker_exit` hook, the last thing a forked API worker runs: flush and close
    the log handlers, then leave with the exit code gunicorn chose, skipping the interpreter's
    teardown. In that teardown gevent's thread module is already cleared when logging's weakref
    callbacks fire, so every exit printed "Exception ignored in: _removeHandlerRef" tracebacks
    (gevent issue 2148). A forked child is what os._exit is for; the worker holds nothing else
    that needs finalizing (its database connections close with the process)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(exit_code(sys.exc_info()[1]))


def exit_code(leaving: BaseException | None) -> int:
    """The status a process leaving with `leaving` would have had: gunicorn's worker always
    leaves through SystemExit (0, or its boot and load error codes)."""
    if leaving is None:
        return 0
    if not isinstance(leaving, SystemExit):
        return 1
    code = leaving.code
    if code is None:
        return 0
    return code & 0xFF if isinstance(code, int) else 1
