"""The chaos soak's shutdown (bench/chaos_processes.py): no role process it starts may outlive it.
The supervisor thread restarts roles; when the soak ends it must stop (a restart in flight included)
before the roles are closed, and a role closed once stays closed. Roles here run `sleep`."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from bench import chaos_processes as chaos
from bench.chaos_processes import Role, Supervisor

pytestmark = pytest.mark.unit
POPEN = subprocess.Popen  # the real one, which the tests wrap


class Recorder:
    """Stands in for subprocess.Popen: records every process started; the first start can be
    held until released, as a restart in flight."""

    def __init__(self, hold_first: bool = False) -> None:
        self.started: list[subprocess.Popen[bytes]] = []
        self.entered, self.release = threading.Event(), threading.Event()
        self.hold_first = hold_first
        if not hold_first:
            self.release.set()

    def __call__(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        if self.hold_first and not self.started:
            self.entered.set()
            assert self.release.wait(60)
        popen = POPEN(*args, **kwargs)
        self.started.append(popen)
        return popen


@pytest.fixture
def sleeper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Role]:
    monkeypatch.setattr(chaos, "CORRAL", "sleep")
    role = Role("sleeper", ["300"], dict(os.environ), tmp_path / "sleeper")
    yield role
    role.close()


@pytest.fixture
def recorder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    """Records the processes roles start; kills every one afterwards, even when a test failed."""
    recording = Recorder(hold_first=getattr(request, "param", False))
    monkeypatch.setattr("bench.chaos_processes.subprocess.Popen", recording)
    yield recording
    recording.release.set()
    for popen in recording.started:
        popen.kill()
        popen.wait()


def alive(popens: list[subprocess.Popen[bytes]]) -> list[int]:
    def running(p: subprocess.Popen[bytes]) -> bool:
        try:
            return p.poll() is None and psutil.Process(p.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    return [p.pid for p in popens if running(p)]


def test_a_closed_role_stays_closed_and_closing_twice_is_harmless(sleeper: Role, recorder: Recorder) -> None:
    sleeper.start()
    sleeper.close()
    sleeper.close()
    sleeper.start()  # what a late restart would do
    assert len(recorder.started) == 1
    assert alive(recorder.started) == []


@pytest.mark.parametrize("recorder", [True], indirect=True, ids=["first-start-held"])
def test_close_kills_what_a_restart_in_flight_starts(sleeper: Role, recorder: Recorder) -> None:
    restart = threading.Thread(target=sleeper.start)
    restart.start()
    assert recorder.entered.wait(60)
    closer = threading.Thread(target=sleeper.close)
    closer.start()
    recorder.release.set()
    restart.join(60)
    closer.join(60)
    assert len(recorder.started) == 1
    assert alive(recorder.started) == []


def test_two_threads_that_find_a_role_gone_start_it_once(sleeper: Role, recorder: Recorder) -> None:
    both = threading.Barrier(2)

    def restart() -> None:
        both.wait(60)
        sleeper.start()

    threads = [threading.Thread(target=restart) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(recorder.started) == 1


class GoneRole:
    """A role that is never running: the supervisor restarts it on every round. Its first
    restart is held until released."""

    def __init__(self) -> None:
        self.stopped_until = 0.0
        self.starts = 0
        self.entered, self.release = threading.Event(), threading.Event()

    def reap(self) -> bool:
        return True

    def start(self) -> None:
        self.entered.set()
        assert self.release.wait(60)
        self.starts += 1


def test_stopping_the_supervisor_waits_for_a_restart_in_flight() -> None:
    role = GoneRole()
    supervisor = Supervisor([role])
    supervisor.start()
    assert role.entered.wait(60)
    stopper = threading.Thread(target=supervisor.stop)
    stopper.start()
    stopper.join(0.5)
    assert stopper.is_alive()  # the restart has not finished, so neither has stop()
    role.release.set()
    stopper.join(60)
    assert not stopper.is_alive()
    starts = role.starts
    assert starts >= 1
    # Stopped: however long one waits now, it starts nothing more.
    assert not supervisor.running()
    assert role.starts == starts


def test_stopping_a_supervisor_that_never_started_is_harmless() -> None:
    Supervisor([GoneRole()]).stop()
