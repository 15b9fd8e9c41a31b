"""`corral var lock`'s holder: acquire the variable's lock (waiting for it unless told not
to), run the child, renew the lock at half its TTL while the child runs, stop the child if
the lock is lost, and release the lock when the child ends."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass

import click

from app.cli.support import http
from app.wire.api.api_variables import VariableRequest

SECOND = 1_000_000_000


def parse_seconds(text: str, option: str) -> float:
    from app.jobspec.durations import DurationError, duration_ns

    try:
        return duration_ns(text) / SECOND
    except DurationError as err:
        raise click.BadParameter(str(err), param_hint=option) from None


@dataclass
class LockHolder:
    route: str
    namespace: str
    body: VariableRequest
    ttl_s: float
    backoff_s: float
    verbose: bool

    def _say(self, message: str) -> None:
        if self.verbose:
            click.echo(message, err=True)

    def _put(self, operation: str, body: VariableRequest) -> http.Answer:
        params = {"namespace": self.namespace, operation: ""}
        url = http.address() + self.route + http.query_string(params)
        return http.send("PUT", url, body, http.auth_headers(), http.TIMEOUT_S)

    def acquire(self, early_return: bool) -> str | None:
        while True:
            answer = self._put("lock-acquire", self.body)
            if answer.status_code == 200:
                lock_id = str(answer.json()["Lock"]["ID"])
                self._say(f"Lock acquired, ID {lock_id}")
                return lock_id
            if answer.status_code != 409:
                raise http.ApiError(
                    f"PUT {self.route}: {answer.status_code} {http.problem_text(answer)}", answer.status_code
                )
            if early_return:
                return None
            self._say(f"Lock held by another holder; trying again in {self.backoff_s:g}s")
            time.sleep(self.backoff_s)

    def run(self, child: list[str], *, shell: bool, early_return: bool) -> int:
        lock_id = self.acquire(early_return)
        if lock_id is None:
            click.echo("Lock not acquired: another holder has it", err=True)
            return 1
        argv = [os.environ.get("SHELL") or "/bin/sh", "-c", " ".join(child)] if shell else child
        process = subprocess.Popen(argv)
        lost = threading.Event()
        done = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(lock_id, process, lost, done), daemon=True)
        renewer.start()
        code = process.wait()
        done.set()
        renewer.join()
        if lost.is_set():
            click.echo("Lock lost: the child was stopped", err=True)
            return 1
        self._put("lock-release", {"Path": self.body["Path"], "Lock": {"ID": lock_id}})
        self._say("Lock released")
        return code

    def _renew(
        self, lock_id: str, process: subprocess.Popen[bytes], lost: threading.Event, done: threading.Event
    ) -> None:
        while not done.wait(self.ttl_s / 2):
            try:
                answer = self._put("lock-renew", {"Path": self.body["Path"], "Lock": {"ID": lock_id}})
                renewed = answer.status_code == 200
            except http.ApiError:
                renewed = False  # the servers are away: the TTL still covers half of itself
                continue
            if not renewed:
                lost.set()
                process.terminate()
                return
