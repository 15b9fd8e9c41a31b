"""Live copies of this process's log lines for /v1/agent/monitor: a handler on the root logger
fans each record out to the subscribers, each at its own level and in its own format (console
text or JSON). A subscriber that falls behind loses lines rather than slowing the process down
(Nomad's monitor drops too, and says how many).

A subscriber may ask for a lower level than the process logs at (debug while it runs at info):
the root logger then lets those records through for the subscription's lifetime, and the
process's own stderr handler, pinned at the configured level, keeps them out of its output."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import structlog

from app.settings.logging import SHARED_PROCESSORS

BUFFER = 512
LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING}
LEVELS |= {"warning": logging.WARNING, "error": logging.ERROR}


def level_number(name: str) -> int | None:
    """Nomad's level names (trace, debug, info, warn, error; any case); None if unknown."""
    return LEVELS.get(name.lower())


def _formatter(json_lines: bool) -> logging.Formatter:
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json_lines else structlog.dev.ConsoleRenderer(colors=False)
    )
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=SHARED_PROCESSORS,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )


@dataclass
class Subscription:
    level: int
    formatter: logging.Formatter
    lines: queue.Queue[str] = field(default_factory=lambda: queue.Queue(BUFFER))
    dropped: int = 0

    def offer(self, record: logging.LogRecord) -> None:
        if record.levelno < self.level:
            return
        try:
            self.lines.put_nowait(self.formatter.format(record) + "\n")
        except queue.Full:
            self.dropped += 1

    def take(self, timeout_s: float) -> str:
        """The lines waiting (at least one, unless `timeout_s` passes first), and a note of any dropped."""
        try:
            lines = [self.lines.get(timeout=timeout_s)]
        except queue.Empty:
            return ""
        while True:
            try:
                lines.append(self.lines.get_nowait())
            except queue.Empty:
                break
        if self.dropped:
            lines.append(f"[WARN] monitor: dropped {self.dropped} log lines (the reader fell behind)\n")
            self.dropped = 0
        return "".join(lines)


class _FanOut(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.subscriptions: list[Subscription] = []
        self.lock_ = threading.Lock()
        self.configured_level = logging.getLogger().level

    def emit(self, record: logging.LogRecord) -> None:
        for subscription in list(self.subscriptions):
            subscription.offer(record)

    def add(self, subscription: Subscription) -> None:
        with self.lock_:
            root = logging.getLogger()
            if not self.subscriptions:
                self.configured_level = root.level
                for handler in root.handlers:
                    if handler is not self and handler.level == logging.NOTSET:
                        handler.setLevel(self.configured_level)  # the process's own output keeps its level
            self.subscriptions.append(subscription)
            root.setLevel(min(self.configured_level, *(s.level for s in self.subscriptions)))

    def remove(self, subscription: Subscription) -> None:
        with self.lock_:
            self.subscriptions.remove(subscription)
            levels = [s.level for s in self.subscriptions]
            logging.getLogger().setLevel(min(self.configured_level, *levels) if levels else self.configured_level)


_FAN_OUT = _FanOut()
_install_lock = threading.Lock()


def _installed() -> _FanOut:
    with _install_lock:
        root = logging.getLogger()
        if _FAN_OUT not in root.handlers:
            root.addHandler(_FAN_OUT)
    return _FAN_OUT


@contextmanager
def subscribed(level: int, json_lines: bool) -> Iterator[Subscription]:
    fan_out = _installed()
    subscription = Subscription(level, _formatter(json_lines))
    fan_out.add(subscription)
    try:
        yield subscription
    finally:
        fan_out.remove(subscription)
