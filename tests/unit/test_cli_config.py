"""A bad CORRAL_* value is a CLI error naming the variable, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from click.testing import CliRunner

from app.cli import main
from app.settings.config import Settings, get_settings

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


def _worker_settings_seen(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """The settings `corral worker` would run with, one per invocation; no side effects on the
    test process: no signal handlers, logging set-up, metrics server or database."""
    import threading

    import app.cli as cli
    import app.settings.logging
    import workers.runtime
    import workers.worker as worker_module

    seen: list[Settings] = []
    monkeypatch.setattr(workers.runtime, "stop_on_signals", threading.Event)
    monkeypatch.setattr(app.settings.logging, "configure", lambda *_args: None)
    monkeypatch.setattr(cli, "serve_metrics", lambda *_args: None)
    monkeypatch.setattr(cli, "_database", _no_database)
    monkeypatch.setattr(worker_module, "run_worker", lambda settings, *_args: seen.append(settings))
    return seen


def test_worker_num_schedulers_comes_from_the_flag_or_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _worker_settings_seen(monkeypatch)
    monkeypatch.setenv("CORRAL_NUM_SCHEDULERS", "3")
    assert CliRunner().invoke(main, ["worker"]).exit_code == 0
    get_settings.cache_clear()
    assert CliRunner().invoke(main, ["worker", "-num-schedulers", "5"]).exit_code == 0
    assert CliRunner().invoke(main, ["worker", "--num-schedulers", "2"]).exit_code == 0
    assert [s.num_schedulers for s in seen] == [3, 5, 2]
    refused = CliRunner().invoke(main, ["worker", "--num-schedulers", "0"])
    assert refused.exit_code == 2 and "--num-schedulers" in refused.output


def test_the_worker_flag_eval_batch_overrides_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _worker_settings_seen(monkeypatch)
    get_settings.cache_clear()
    assert CliRunner().invoke(main, ["worker"]).exit_code == 0
    assert CliRunner().invoke(main, ["worker", "--eval-batch", "1"]).exit_code == 0
    monkeypatch.setenv("CORRAL_EVAL_BATCH", "3")
    get_settings.cache_clear()
    assert CliRunner().invoke(main, ["worker"]).exit_code == 0
    assert [s.eval_batch for s in seen] == [8, 1, 3]
    refused = CliRunner().invoke(main, ["worker", "--eval-batch", "0"])
    assert refused.exit_code == 2 and "--eval-batch" in refused.output
    get_settings.cache_clear()  # not the environment of this test for the next one


@contextmanager
def _no_database(*_args: object) -> Iterator[str]:
    yield "postgresql://unused"
