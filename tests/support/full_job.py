"""A job that sets every block corral serves, for the tests that check served shapes and types."""

from __future__ import annotations

from typing import Any

SECOND = 1_000_000_000

FULL_JOB: dict[str, Any] = {
    "ID": "full",
    "Name": "full",
    "Type": "service",
    "Priority": 70,
    "Datacenters": ["dc1"],
    "Meta": {"team": "a"},
    "Constraints": [{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}],
    "Affinities": [{"LTarget": "${node.datacenter}", "RTarget": "dc1", "Operand": "=", "Weight": 50}],
    "Spreads": [{"Attribute": "${node.datacenter}", "Weight": 100, "SpreadTarget": [{"Value": "dc1", "Percent": 100}]}],
    "Update": {"MaxParallel": 2, "Stagger": 10 * SECOND, "Canary": 1},
    "Reschedule": {"Attempts": 3, "Interval": 3600 * SECOND, "Unlimited": False},
    "Migrate": {"MaxParallel": 2},
    "TaskGroups": [
        {
            "Name": "g",
            "Count": 2,
            "Networks": [
                {
                    "Mode": "host",
                    "ReservedPorts": [{"Label": "http", "Value": 8080}],
                    "DynamicPorts": [{"Label": "rpc"}],
                }
            ],
            "EphemeralDisk": {"SizeMB": 500},
            "Scaling": {"Min": 1, "Max": 5},
            "Disconnect": {"LostAfter": 60 * SECOND},
            "Constraints": [{"LTarget": "${node.class}", "RTarget": "big", "Operand": "!="}],
            "Tasks": [
                {
                    "Name": "init",
                    "Driver": "mock",
                    "Lifecycle": {"Hook": "prestart"},
                    "LogConfig": {"MaxFiles": 3},
                    "Resources": {"CPU": 200, "MemoryMB": 128},
                    "RestartPolicy": {"Attempts": 1},
                    "Env": {"A": "1"},
                    "Config": {"run_for": "1s"},
                },
                {"Name": "main", "Driver": "mock", "Constraints": [{"LTarget": "${attr.os}", "RTarget": "linux"}]},
            ],
        }
    ],
}
