"""A ratchet on untyped data: per room, how many `dict[str, Any]` annotations and uses of `Any`
the code may hold. The budgets may only fall: when a change removes some, lower the budget to
the new count in the same commit (the failure message says what it is); a change that adds some
must type its data instead (a TypedDict from app/wire, a dataclass from app/structs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
UNTYPED_DICT = re.compile(r"dict\[str, Any\]")
ANY = re.compile(r"\bAny\b")

# room -> (dict[str, Any] annotations, uses of Any), as measured when the budget was last lowered.
BUDGETS: dict[str, tuple[int, int]] = {
    "app/acl": (0, 2),
    "app/api": (3, 37),
    "app/bexpr": (0, 17),
    "app/cli": (1, 56),
    "app/db": (0, 11),
    "app/gc": (0, 2),
    "app/jobspec": (4, 134),
    "app/keyring": (0, 3),
    "app/leader": (0, 1),
    "app/metrics": (0, 0),
    "app/models": (0, 0),
    "app/pipeline": (6, 50),
    "app/scheduler": (0, 4),
    "app/store": (0, 8),
    "app/stream": (0, 0),
    "app/structs": (0, 0),
    "app/ui": (0, 0),
    "app/values": (0, 5),
    "app/variables": (0, 0),
    "workers": (1, 16),
    "client": (129, 316),
}


def rooms() -> list[Path]:
    found = [p for p in sorted((ROOT / "app").iterdir()) if p.is_dir() and (p / "__init__.py").exists()]
    return [*found, ROOT / "workers", ROOT / "client"]


def count(room: Path) -> tuple[int, int]:
    files = [room] if room.is_file() else sorted(room.rglob("*.py"))
    text = [p.read_text() for p in files]
    return sum(len(UNTYPED_DICT.findall(t)) for t in text), sum(len(ANY.findall(t)) for t in text)


def _name(room: Path) -> str:
    return str(room.relative_to(ROOT))


@pytest.mark.parametrize("room", rooms(), ids=_name)
def test_untyped_data_only_falls(room: Path) -> None:
    dicts, anys = count(room)
    budget_dicts, budget_anys = BUDGETS.get(_name(room), (0, 0))
    assert dicts <= budget_dicts, f"{_name(room)}: {dicts} dict[str, Any] (budget {budget_dicts}): type the new data"
    assert anys <= budget_anys, f"{_name(room)}: {anys} uses of Any (budget {budget_anys}): type the new data"
    assert (dicts, anys) == (budget_dicts, budget_anys), (
        f"{_name(room)} now holds {dicts} dict[str, Any] and {anys} Any: lower its budget to ({dicts}, {anys})"
    )


def test_every_budget_names_a_room() -> None:
    assert set(BUDGETS) <= {_name(r) for r in rooms()}


def test_the_counter_counts(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import Any\ndef f(x: dict[str, Any]) -> Any: ...\n")
    assert count(probe) == (1, 3)
