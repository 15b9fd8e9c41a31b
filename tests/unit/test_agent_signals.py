"""The agent's stop signals act even when its main thread is stuck (workers/agent_signals.py).

Each case runs in a process of its own: signal dispositions and the wakeup descriptor are
process-wide, and a stuck main thread must not be this test's."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]

# The main thread blocks for good on a lock it already holds (as it would on a stderr buffer
# whose reader stopped reading); only the watcher thread can act.
STUCK_MAIN = textwrap.dedent(
    """
    import os, sys, threading
    from workers.agent_signals import StopSignals

    def force():
        os.write(1, b"forced\\n")
        os._exit(7)

    signals = StopSignals(force)
    threading.Thread(target=lambda: (signals.stop.wait(), print("stopping", flush=True)), daemon=True).start()
    print("ready", flush=True)
    stuck = threading.Lock()
    stuck.acquire()
    stuck.acquire()
    """
)


def _start(script: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    return process.stdout.readline().strip()


def test_the_first_signal_asks_to_stop_and_the_second_forces_even_with_the_main_thread_stuck() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        process = _start(STUCK_MAIN)
        try:
            assert _line(process) == "ready"
            process.send_signal(signum)
            assert _line(process) == "stopping"
            assert process.poll() is None, "one signal only asks; the graceful stop is the agent's"
            process.send_signal(signum)
            assert process.wait(timeout=30) == 7
            assert _line(process) == "forced"
        finally:
            process.kill()
            process.wait()


def test_close_puts_the_previous_handlers_and_wakeup_descriptor_back() -> None:
    script = textwrap.dedent(
        """
        import signal
        from workers.agent_signals import StopSignals

        def mine(*_): pass
        signal.signal(signal.SIGTERM, mine)
        before = signal.set_wakeup_fd(-1)
        signals = StopSignals(lambda: None)
        signals.close()
        signals.close()
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.set_wakeup_fd(-1) == -1 == before
        print("restored", flush=True)
        """
    )
    process = _start(script)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out.strip() == "restored"


def test_other_signals_do_not_count_as_a_stop() -> None:
    script = textwrap.dedent(
        """
        import os, signal, time
        from workers.agent_signals import StopSignals

        signal.signal(signal.SIGUSR1, lambda *_: None)  # also written to the wakeup pipe
        signals = StopSignals(lambda: os._exit(9))
        os.kill(os.getpid(), signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.3)
        assert not signals.stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        assert signals.stop.wait(10)
        signals.close()
        print("ok", flush=True)
        """
    )
    process = _start(script)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out.strip() == "ok"
