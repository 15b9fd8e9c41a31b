"""The servers' link secret: from CORRAL_LINK_KEY, CORRAL_LINK_KEY_FILE, or a 0600 file that
`corral server` makes in its data directory once and then keeps using."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from pydantic import SecretStr

from app.acl import link_secret
from app.settings.config import Settings

pytestmark = pytest.mark.unit


def test_the_server_makes_a_private_secret_in_its_data_dir_once(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = link_secret.for_server(settings)
    path = tmp_path / "data" / "link.key"
    assert first.link_key_file == path.resolve()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    secret = link_secret.configured(first)
    assert secret is not None and len(secret) == 64
    again = link_secret.for_server(settings)
    assert link_secret.configured(again) == secret  # kept, not made again
    assert sorted(p.name for p in path.parent.iterdir()) == ["link.key"]  # no leftovers


def test_a_configured_secret_wins_and_a_short_one_is_refused(tmp_path: Path) -> None:
    given = tmp_path / "shared.key"
    given.write_text("s" * 40 + "\n")
    from_file = Settings(data_dir=tmp_path, link_key_file=given)
    assert link_secret.for_server(from_file) == from_file
    assert link_secret.configured(from_file) == b"s" * 40
    assert not (tmp_path / "link.key").exists()
    assert link_secret.configured(Settings(link_key=SecretStr("e" * 32), link_key_file=given)) == b"e" * 32
    with pytest.raises(link_secret.LinkSecretError, match=r"CORRAL_LINK_KEY: .* at least 32"):
        link_secret.configured(Settings(link_key=SecretStr("short")))
    with pytest.raises(link_secret.LinkSecretError, match="CORRAL_LINK_KEY_FILE: cannot read"):
        link_secret.configured(Settings(link_key_file=tmp_path / "missing"))


def test_an_application_without_a_configured_secret_makes_its_own() -> None:
    assert link_secret.for_app(Settings()) != link_secret.for_app(Settings())
    assert link_secret.for_app(Settings(link_key=SecretStr("z" * 32))) == b"z" * 32
