"""A bad CORRAL_* value is a CLI error naming the variable, never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from app.cli import main
from app.config import get_settings

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def fresh_settings() -> None:
    get_settings.cache_clear()


def test_an_invalid_setting_is_named_in_a_cli_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_HTTP_WORKERS", "0")
    monkeypatch.setenv("CORRAL_LOG_FORMAT", "blue")
    result = CliRunner().invoke(main, ["db", "current"])
    get_settings.cache_clear()
    assert result.exit_code == 1
    assert "CORRAL_HTTP_WORKERS: Input should be greater than or equal to 1 (got '0')" in result.output
    assert "CORRAL_LOG_FORMAT" in result.output
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
