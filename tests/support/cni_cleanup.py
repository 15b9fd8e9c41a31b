"""Leave the host's network as a bridge-mode test found it: the iptables chains the CNI
plugins (and the NOMAD-ADMIN chain) added, the rules that jump to them, the test's bridge,
host-local's state directory and any network namespace named after the test's allocations."""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

TABLES = ("nat", "filter")
HOST_LOCAL_DIR = Path("/var/lib/cni/networks/nomad")


def _rules(table: str) -> list[list[str]]:
    out = subprocess.run(["iptables", "-w", "-t", table, "-S"], capture_output=True, text=True, check=True).stdout
    return [shlex.split(line) for line in out.splitlines() if line.strip()]


def _chains(table: str) -> set[str]:
    return {rule[1] for rule in _rules(table) if rule[:1] == ["-N"]}


def _iptables(table: str, *args: str) -> None:
    subprocess.run(["iptables", "-w", "-t", table, *args], capture_output=True, check=False)


def remove_chains(table: str, chains: set[str]) -> None:
    """Every rule jumping to one of `chains` (from a chain that stays), then the chains."""
    for rule in _rules(table):
        if rule[:1] == ["-A"] and rule[1] not in chains and "-j" in rule and rule[rule.index("-j") + 1] in chains:
            _iptables(table, "-D", *rule[1:])
    for chain in chains:
        _iptables(table, "-F", chain)
    for chain in chains:
        _iptables(table, "-X", chain)


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@contextlib.contextmanager
def network_traces(bridge: str) -> Iterator[None]:
    before = {table: _chains(table) for table in TABLES}
    namespaces = netns_names()
    had_state = HOST_LOCAL_DIR.exists()
    try:
        yield
    finally:
        for name in netns_names() - namespaces:
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)
        for table in TABLES:
            remove_chains(table, _chains(table) - before[table])
        subprocess.run(["ip", "link", "delete", bridge], capture_output=True, check=False)
        if not had_state:
            shutil.rmtree(HOST_LOCAL_DIR, ignore_errors=True)
