"""docs/cli.md's table of Nomad's commands is the one the click tree gives: a command added or
removed without regenerating the table (`uv run python -m app.cli.support.command_states`) fails here."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from app.cli import main
from app.cli.support.command_states import BEGIN, END, NOT_APPLICABLE, PARTIAL, nomad_commands, states, table

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_docs_table_is_the_click_trees() -> None:
    text = DOC.read_text()
    shown = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert shown == table(main), "docs/cli.md is stale: run `uv run python -m app.cli.support.command_states`"


def test_states_follow_the_tree() -> None:
    rows = {name: state for name, state, _ in states(main)}
    assert rows["plugin status"] == "partial" and rows["fmt"] == "present" and rows["operator api"] == "present"
    assert rows["operator raft list-peers"] == "not applicable"
    bare = click.Group("corral")
    assert {state for _, state, _ in states(bare)} <= {"missing", "not applicable"}


def test_the_notes_name_only_nomad_commands_and_nothing_is_both_present_and_not_applicable() -> None:
    known = set(nomad_commands())
    assert set(NOT_APPLICABLE) <= known and set(PARTIAL) <= known
    present = {name for name, state, _ in states(main) if state in ("present", "partial")}
    assert not present & set(NOT_APPLICABLE)
