"""`corral alloc exec`: Nomad's command to run a command inside a running task, over the
server's WebSocket (/v1/client/allocation/<id>/exec, Nomad's exec frames).

Flags are parsed as Go's flag package parses Nomad's (`-i=false`, `-task web`, flags end at
the first argument), so `corral alloc exec -t <alloc> sh -c 'ls -l'` passes `-c` and `-l`
to the command. With -t the local terminal is put in raw mode, its size is sent (and sent
again on every SIGWINCH), and `~.` at the start of a line closes the session (-e changes the
escape character, `none` turns it off). The exit code is the remote command's.

The WebSocket client (wsproto) is imported inside the command: the CLI's start-up stays light."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from app.cli.allocs.alloc import alloc, resolve
from app.cli.support import http
from app.wire.allocation import AllocationJson, AllocationListStubJson
from app.wire.job import TaskGroupSpec

if TYPE_CHECKING:
    from app.stream.websocket import WebSocket

BOOL_WORDS = {"1": True, "t": True, "true": True, "0": False, "f": False, "false": False}
HEARTBEAT_S = 10.0  # as Nomad's API client: keeps idle sessions alive through proxies


class Usage(click.ClickException):
    """A usage error, reported as Nomad reports it (exit 1)."""


@dataclass
class Options:
    task: str = ""
    job: bool = False
    stdin: bool = True
    tty: bool | None = None  # None: whether stdin and stdout are terminals
    escape: str = "~"
    args: list[str] = field(default_factory=list)


def _bool(name: str, value: str) -> bool:
    found = BOOL_WORDS.get(value.lower())
    if found is None:
        raise Usage(f'invalid boolean value "{value}" for -{name}')
    return found


def parse_args(argv: list[str]) -> Options:
    """Go flag semantics: `-x`, `--x`, `-x=v`; a value flag takes the next word when no `=` is
    given; parsing stops at the first non-flag word or at `--`."""
    opts, rest = Options(), list(argv)
    while rest and rest[0].startswith("-") and rest[0] not in ("-", "--"):
        name, has_value, value = rest.pop(0).lstrip("-").partition("=")
        if name in ("task", "e"):
            if not has_value:
                if not rest:
                    raise Usage(f"flag needs an argument: -{name}")
                value = rest.pop(0)
            if name == "task":
                opts.task = value
            else:
                opts.escape = value
        elif name in ("i", "t", "job"):
            flag = _bool(name, value) if has_value else True
            if name == "i":
                opts.stdin = flag
            elif name == "t":
                opts.tty = flag
            else:
                opts.job = flag
        else:
            raise Usage(f"flag provided but not defined: -{name}")
    if rest and rest[0] == "--":
        rest.pop(0)
    opts.args = rest
    return opts


def check(opts: Options) -> tuple[str, list[str], bool, str]:
    """Nomad's checks, in its order: (target, command, tty, escape)."""
    if not opts.args:
        raise Usage("A job ID is required" if opts.job else "An allocation ID is required")
    if not opts.job and len(opts.args[0]) == 1:
        raise Usage("Alloc ID must contain at least two characters")
    if len(opts.args) < 2:
        raise Usage("A command is required")
    tty = opts.tty if opts.tty is not None else sys.stdin.isatty() and sys.stdout.isatty()
    if tty and not opts.stdin:
        raise Usage("-i must be enabled if running with tty")
    escape = "" if opts.escape == "none" else opts.escape
    if len(escape) > 1:
        raise Usage("-e requires 'none' or a single character")
    return opts.args[0], opts.args[1:], tty, escape


class EscapeReader:
    """Nomad's escape sequences on a terminal's input: the escape character at the start of a
    line followed by `.` closes the session; doubled, it sends itself; followed by anything
    else, both go through."""

    def __init__(self, escape: str) -> None:
        self.escape = escape.encode()
        self.line_start = True
        self.pending = False

    def feed(self, data: bytes) -> tuple[bytes, bool]:
        """(bytes to send, whether the user asked to close)."""
        out = bytearray()
        for byte in data:
            char = bytes([byte])
            if self.pending:
                self.pending = False
                if char == b".":
                    return bytes(out), True
                out += self.escape if char == self.escape else self.escape + char
            elif self.line_start and self.escape and char == self.escape:
                self.pending = True
                continue
            else:
                out += char
            self.line_start = char in (b"\r", b"\n")
        return bytes(out), False


def _alloc_of_job(job_id: str) -> str:
    """Nomad's -job: a random running allocation of the job."""
    import random  # here: it costs the CLI's start-up a few milliseconds

    try:
        allocs = http.get(f"/v1/job/{job_id}/allocations")
    except http.ApiError as err:
        if err.status != 404:
            raise
        allocs = []
    listed: list[AllocationListStubJson] = allocs if isinstance(allocs, list) else []
    if not listed:
        raise click.ClickException(f"Error fetching allocations: job {job_id!r} doesn't exist or it has no allocations")
    running = [a for a in listed if a.get("ClientStatus") == "running"]
    if not running:
        raise click.ClickException(f"Error fetching allocations: job {job_id!r} doesn't have any running allocations")
    return str(random.choice(running)["ID"])


def task_of(found: AllocationJson, task: str) -> str:
    """The named task, checked; or the group's only task (Nomad's lookupAllocTask)."""
    group: TaskGroupSpec = next(
        (g for g in (found.get("Job") or {}).get("TaskGroups") or [] if g.get("Name") == found.get("TaskGroup")),
        TaskGroupSpec(),
    )
    names = [str(t.get("Name")) for t in group.get("Tasks") or []]
    if task:
        if task not in names:
            raise click.ClickException(f"Could not find task named: {task}, Tasks available: {', '.join(names)}")
        return task
    if len(names) == 1:
        return names[0]
    listed = "".join(f"  * {name}\n" for name in names)
    raise click.ClickException(
        f"Allocation {str(found.get('ID'))[:8]!r} is running the following tasks:\n{listed}\nPlease specify the task."
    )


@alloc.command(
    "exec",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    options_metavar="[options]",
)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, metavar="<allocation> <command> [args...]")
def exec_(argv: tuple[str, ...]) -> None:
    """Run a command inside the environment of the given allocation and task.

    \b
    Options (Nomad's; before the allocation):
      -task <task-name>  The task to exec in (required when the group has several).
      -job               Take the first argument as a job ID: a random running allocation.
      -i                 Pass stdin to the command, defaults to true (-i=false to disable).
      -t                 Allocate a pseudo-tty, defaults to true when stdin and stdout are
                         terminals (-t=false to disable).
      -e <escape_char>   Escape character for sessions with a tty (default '~'); '~.' at
                         the start of a line closes the session; 'none' disables escapes.

    Exits with the command's exit code. With ACLs, needs alloc-exec on the allocation's
    namespace (and alloc-node-exec for raw_exec tasks)."""
    opts = parse_args(list(argv))
    target, command, tty, escape = check(opts)
    full = _alloc_of_job(target) if opts.job else resolve(target)
    task = task_of(http.get(f"/v1/allocation/{full}"), opts.task)
    sys.exit(run_session(exec_path(full, task, command, tty), tty, escape, opts.stdin))


def exec_path(alloc_id: str, task: str, command: list[str], tty: bool) -> str:
    """The exec route with its query (and the chosen namespace and region)."""
    import json
    from urllib.parse import urlencode

    params = {"task": task, "command": json.dumps(command), "tty": "true" if tty else "false"}
    return f"/v1/client/allocation/{alloc_id}/exec?{urlencode(http.scoped(params) or params)}"


def _open(path: str) -> WebSocket:
    """The WebSocket of an exec session at PATH (alloc exec's route, or a job action's)."""
    from app.settings.client_tls import client_tls
    from app.stream import websocket as wsock

    try:
        answer = wsock.connect(http.address() + path, http.auth_headers(), timeout_s=http.TIMEOUT_S, tls=client_tls())
    except OSError as err:
        raise click.ClickException(f"failed to exec into task: cannot reach corral ({err})") from err
    if isinstance(answer, wsock.Refused):
        raise click.ClickException(f"failed to exec into task: {answer.status} {_problem(answer.body)}")
    return answer.ws


def _problem(body: bytes) -> str:
    import json

    try:
        errors = json.loads(body).get("errors") or []
        return "; ".join(
            f"{e.get('field')}: {e.get('message')}" if e.get("field") else e.get("message") for e in errors
        )
    except (ValueError, AttributeError):
        return body.decode("utf-8", "replace").strip()


class Terminal:
    """The local terminal in raw mode, its size sent now and on every SIGWINCH. `release` puts
    the mode back (any thread: the escape sequence does it before printing); `restore` also
    puts back the SIGWINCH handler (the main thread, as signal handlers must be)."""

    def __init__(self, ws: WebSocket) -> None:
        import termios
        import tty as tty_mode

        self.ws, self.fd = ws, sys.stdin.fileno()
        self.saved = termios.tcgetattr(self.fd)
        self.raw = True
        tty_mode.setraw(self.fd)
        self.previous = signal.signal(signal.SIGWINCH, self.send_size)
        self.send_size()

    def send_size(self, *_: Any) -> None:
        from app.stream import exec_frames as frames
        from app.stream import websocket as wsock

        with contextlib.suppress(wsock.Closed, OSError):
            size = os.get_terminal_size(sys.stdout.fileno())
            self.ws.send(frames.tty_size(size.lines, size.columns))

    def release(self) -> None:
        import termios

        if self.raw:
            self.raw = False
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def restore(self) -> None:
        signal.signal(signal.SIGWINCH, self.previous)
        self.release()


def run_session(path: str, tty: bool, escape: str, stdin_on: bool) -> int:
    """Run the exec session at PATH with the local terminal; the remote command's exit code."""
    if tty and not sys.stdin.isatty():
        raise click.ClickException("failed to exec into task: not a terminal (-t needs stdin to be one)")
    ws = _open(path)
    terminal = Terminal(ws) if tty else None
    hung_up = threading.Event()
    try:
        _start_input(ws, escape if tty else "", stdin_on, terminal, hung_up)
        return _output(ws, hung_up)
    except KeyboardInterrupt:
        ws.close()
        return 130
    finally:
        if terminal is not None:
            terminal.restore()
        ws.sock.close()


def _start_input(
    ws: WebSocket, escape: str, stdin_on: bool, terminal: Terminal | None, hung_up: threading.Event
) -> None:
    from app.stream import exec_frames as frames
    from app.stream import websocket as wsock

    def forward() -> None:
        reader = EscapeReader(escape) if escape else None
        try:
            while stdin_on:
                data = os.read(sys.stdin.fileno(), 4096)
                if not data:
                    break
                closing = False
                if reader is not None:
                    data, closing = reader.feed(data)
                if data:
                    ws.send(frames.stdin(data))
                if closing:
                    hung_up.set()
                    if terminal is not None:
                        terminal.release()  # so the message starts a line of its own
                    sys.stderr.write("\nConnection closed\n")
                    sys.stderr.flush()
                    ws.close()
                    return
            ws.send(frames.stdin_close())
        except (wsock.Closed, OSError):
            return

    def heartbeat() -> None:
        stop = threading.Event()
        while not stop.wait(HEARTBEAT_S):
            try:
                ws.send("{}")
            except wsock.Closed:
                return

    threading.Thread(target=forward, name="exec-stdin", daemon=True).start()
    threading.Thread(target=heartbeat, name="exec-heartbeat", daemon=True).start()


def _output(ws: WebSocket, hung_up: threading.Event) -> int:
    """Write the command's output until `exited`; its exit code (1 if the session ended
    without one, as Nomad's CLI reports a failed exec, or the user hung up with the escape)."""
    from app.stream import exec_frames as frames

    while (message := ws.receive()) is not None:
        try:
            frame = frames.parse_output(message)
        except frames.FrameError:
            continue
        if frame.exit_code is not None:
            ws.close()
            return frame.exit_code
        if frame.data:
            out = sys.stdout.buffer if frame.stream == "stdout" else sys.stderr.buffer
            out.write(frame.data)
            out.flush()
    if hung_up.is_set():
        return 1
    if ws.close_code not in (None, 1000):
        click.echo(f"failed to exec into task: {ws.close_reason or f'closed with code {ws.close_code}'}", err=True)
    else:
        click.echo("failed to exec into task: the connection closed before the command exited", err=True)
    return 1
