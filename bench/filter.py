"""filter= cost: how long app.bexpr takes to evaluate Nomad filter expressions on realistic job
objects (the full job /v1/jobs filters on), against the same tests written as hand-coded Python
in the same run (the ceiling: no parsing, no coercion, no selector walk). Pure CPU, no database.

Usage: uv run python -m bench.filter [objects] [runs]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from app.bexpr import compile_filter


def job(i: int) -> dict[str, Any]:
    return {
        "ID": f"job-{i:05}",
        "Name": f"job-{i:05}",
        "Namespace": "default",
        "Type": "service" if i % 3 else "batch",
        "Status": "running" if i % 4 else "dead",
        "Priority": 50 + i % 5,
        "Stop": False,
        "Datacenters": ["dc1", "dc2"] if i % 2 else ["dc3"],
        "Meta": {"team": f"team-{i % 7}", "owner": "ops"},
        "TaskGroups": [
            {"Name": "web", "Count": 1 + i % 3, "Tasks": [{"Name": "server", "Driver": "docker", "Config": {}}]},
            {"Name": "cache", "Count": 1, "Tasks": [{"Name": "redis", "Driver": "raw_exec", "Config": {}}]},
        ],
        "CreateIndex": 1000 + i,
    }


CASES: list[tuple[str, Callable[[dict[str, Any]], bool]]] = [
    ('Status == "running"', lambda o: o["Status"] == "running"),
    ("Priority == 52 and Type == service", lambda o: o["Priority"] == 52 and o["Type"] == "service"),
    (
        'dc2 in Datacenters and Meta.team == "team-3"',
        lambda o: "dc2" in o["Datacenters"] and o["Meta"].get("team") == "team-3",
    ),
    ('Name matches "^job-0[0-4]"', lambda o: o["Name"].startswith(("job-00", "job-01", "job-02", "job-03", "job-04"))),
    (
        "any TaskGroups as g { g.Count == 3 }",
        lambda o: any(g["Count"] == 3 for g in o["TaskGroups"]),
    ),
]


def per_object_us(fn: Callable[[dict[str, Any]], bool], objects: list[dict[str, Any]], runs: int) -> tuple[float, int]:
    samples, hits = [], 0
    for _ in range(runs):
        began = time.perf_counter()
        hits = sum(1 for o in objects if fn(o))
        samples.append((time.perf_counter() - began) / len(objects) * 1e6)
    return statistics.median(samples), hits


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    objects = [job(i) for i in range(count)]
    print(f"{count} job objects, median of {runs} runs")
    print(f"{'filter':48} {'bexpr µs/obj':>13} {'python µs/obj':>14} {'ratio':>6} {'matches':>8}")
    for text, ceiling in CASES:
        predicate = compile_filter(text)
        ours, hits = per_object_us(predicate.matches, objects, runs)
        theirs, expected = per_object_us(ceiling, objects, runs)
        assert hits == expected, (text, hits, expected)
        print(f"{text:48} {ours:13.2f} {theirs:14.2f} {ours / theirs:6.1f} {hits:8}")
    began = time.perf_counter()
    for _ in range(1000):
        compile_filter(CASES[2][0])
    print(f"compile: {(time.perf_counter() - began) * 1000:.1f} µs per filter ({CASES[2][0]!r})")


if __name__ == "__main__":
    main()
