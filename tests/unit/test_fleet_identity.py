"""The simulated fleet keeps its nodes' identities across restarts, as `corral client` does."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from client.fleet.identity import FILE_NAME, IdentityFileError, identities, node_names

pytestmark = pytest.mark.unit


def test_without_a_data_dir_every_run_has_new_nodes() -> None:
    names = node_names("sim", 3)
    assert names == ["sim-00000", "sim-00001", "sim-00002"]
    assert {i.id for i in identities(names, None)}.isdisjoint({i.id for i in identities(names, None)})


def test_a_data_dir_gives_a_restarted_fleet_the_same_ids_and_secrets(tmp_path: Path) -> None:
    first = identities(node_names("sim", 3), tmp_path)
    again = identities(node_names("sim", 3), tmp_path)
    assert again == first
    assert stat.S_IMODE((tmp_path / FILE_NAME).stat().st_mode) == 0o600  # it holds the secrets


def test_a_bigger_fleet_keeps_the_old_nodes_and_adds_new_ones(tmp_path: Path) -> None:
    first = identities(node_names("sim", 2), tmp_path)
    grown = identities(node_names("sim", 4), tmp_path)
    assert grown[:2] == first and len({i.id for i in grown}) == 4
    assert identities(node_names("sim", 1), tmp_path) == first[:1]
    assert identities(node_names("sim", 4), tmp_path) == grown  # shrinking forgot nothing


@pytest.mark.parametrize("body", ["{not json", json.dumps({"sim-00000": 1}), json.dumps([{"Name": "x", "ID": "no"}])])
def test_an_unusable_file_is_refused_not_replaced(tmp_path: Path, body: str) -> None:
    (tmp_path / FILE_NAME).write_text(body)
    with pytest.raises(IdentityFileError, match=FILE_NAME):
        identities(node_names("sim", 1), tmp_path)
    assert (tmp_path / FILE_NAME).read_text() == body
