"""When the API's worker processes collect garbage.

Every request waiting in a blocking query (one per connected client) keeps its objects alive
for minutes, so a worker serving thousands of clients holds about a million tracked objects.
CPython starts a full collection whenever a quarter more objects have survived into the oldest
generation, and a full collection walks all of them with the process stopped: with 2,500
simulated nodes that was every 10-15 s, 44-197 ms each, and every request in flight (health
probes, heartbeats) waited it out. Measured with a loop-lag probe: every stall over 50 ms was a
full collection.

So the API workers keep the young generations' automatic collections (cheap, and what frees
most short-lived cycles) and run the full collection on a timer instead: the same pause, twenty
times rarer at the fleet's rate of churn. Cyclic garbage that reaches the oldest generation
waits for the next timer, at most FULL_EVERY_S."""

from __future__ import annotations

import gc

import gevent

FULL_EVERY_S = 300.0
NEVER = 2**31 - 1  # a threshold the oldest generation's counter never reaches


def collect_on_a_timer(every_s: float = FULL_EVERY_S) -> gevent.Greenlet:
    """Freeze what is loaded (it lives as long as the worker), stop automatic full collections
    and start the greenlet that runs one every `every_s`. Returns that greenlet."""
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)
    return gevent.spawn(_full_collections, every_s)


def _full_collections(every_s: float) -> None:
    while True:
        gevent.sleep(every_s)
        gc.collect()
