"""The exec driver's launcher: a small root process, run as a script (standard library only, so
it starts fast) in its own session, that outlives the client like raw_exec's wrapper.

It reads the task's launch spec (JSON) on stdin, enters new mount/IPC/UTS namespaces and a new
PID namespace for its child, forks the task (PID 1 of that namespace), writes the child's host
PID into the task's cgroups before letting it go on, and reports the PID (or why the task could
not start) on the status descriptor named by argv[1]. The child binds the chroot's directories,
mounts /proc, a tmpfs /tmp and a minimal /dev, chroots into the task directory, drops every
capability and its root identity, and execs the command. The launcher then waits for it and
records how it ended, OOM kill included, in the exit file; and removes the task's cgroups."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import sys
from typing import Any

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x04000000, 0x08000000, 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
EXEC_FAILED = 127

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd: int, kind: int) -> None:
    _check(libc.setns(ctypes.c_int(fd), ctypes.c_int(kind)), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(value: str | None) -> bytes | None:
        return None if value is None else value.encode()

    result = libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    _check(result, f"mount {target}")


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def bind(root: str, source: str, target: str, read_only: bool) -> None:
    where = _inside(root, target)
    if os.path.isdir(source):
        os.makedirs(where, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(where), exist_ok=True)
        if not os.path.exists(where):
            open(where, "a").close()
    mount(source, where, None, MS_BIND | MS_REC)
    if read_only:
        mount(None, where, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID)


def minimal_dev(root: str) -> None:
    """A tmpfs /dev with the devices common tools need (without them many fail)."""
    dev = _inside(root, "/dev")
    os.makedirs(dev, exist_ok=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            open(os.path.join(dev, name), "a").close()
            mount(f"/dev/{name}", os.path.join(dev, name), None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1")):
        os.symlink(target, os.path.join(dev, name))
    os.symlink("/proc/self/fd/2", os.path.join(dev, "stderr"))
    os.makedirs(os.path.join(dev, "shm"))
    mount("shm", os.path.join(dev, "shm"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=65536k")


def drop_privileges(uid: int, gid: int, groups: list[int]) -> None:
    """Every capability out of the bounding set, then the task's identity; no_new_privs so no
    setuid binary gives any back."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0), "drop capability")
    os.setgroups(groups)
    os.setgid(gid)
    os.setuid(uid)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0), "no_new_privs")


def enter_netns(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        setns(fd, CLONE_NEWNET)
    finally:
        os.close(fd)


def child(spec: dict[str, Any], go: int, report: int) -> None:
    """PID 1 of the task's namespace: wait for the launcher's go-ahead (the cgroups are
    joined), build the chroot, become the task. Errors go to `report` before exiting 127."""
    try:
        os.read(go, 1)
        os.close(go)
        root = spec["root"]
        for source, target, read_only in spec["binds"]:
            bind(root, source, target, bool(read_only))
        proc = _inside(root, "/proc")
        os.makedirs(proc, exist_ok=True)
        mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        tmp = _inside(root, "/tmp")
        os.makedirs(tmp, exist_ok=True)
        mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
        minimal_dev(root)
        socket.sethostname(spec["hostname"])
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.chroot(root)
        os.chdir(spec["cwd"])
        drop_privileges(int(spec["uid"]), int(spec["gid"]), [int(g) for g in spec["groups"]])
        for signum in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):  # Python's own dispositions
            signal.signal(signum, signal.SIG_DFL)
        argv = [str(a) for a in spec["argv"]]
        os.execvpe(argv[0], argv, dict(spec["env"]))
    except BaseException as err:  # anything at all: the launcher must hear of it
        with contextlib.suppress(OSError):
            os.write(report, f"{type(err).__name__}: {err}".encode())
        os._exit(EXEC_FAILED)


def exit_code(status: int) -> tuple[int, int]:
    """(exit code, signal) as a shell reports them: a signal's death is 128 + its number."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        return 128 + signum, signum
    return os.WEXITSTATUS(status), 0


def oom_killed(path: str) -> bool:
    with contextlib.suppress(OSError, ValueError), open(path) as f:
        for line in f:
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value) > 0
    return False


def record(path: str, code: int, signum: int, oom: bool) -> None:
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        json.dump({"exit_code": code, "signal": signum, "oom_killed": oom}, f)
    os.replace(temporary, path)  # atomic: a reader sees no record or the whole one


def remove_groups(directories: list[str]) -> None:
    import time

    for directory in directories:
        for _ in range(40):
            try:
                os.rmdir(directory)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)  # the kernel lags a moment behind the last exit


def launch(spec: dict[str, Any], status: int) -> int:
    flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
    if spec.get("netns"):
        enter_netns(spec["netns"])
    unshare(flags)
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing the task mounts reaches the host
    go_read, go_write = os.pipe()
    err_read, err_write = os.pipe2(os.O_CLOEXEC)  # closed by a successful exec
    pid = os.fork()
    if pid == 0:
        os.close(go_write)
        os.close(err_read)
        os.close(status)
        child(spec, go_read, err_write)
    os.close(go_read)
    os.close(err_write)
    for ignored in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(ignored, signal.SIG_IGN)  # the launcher lives to record the task's end
    try:
        for procs in spec["procs"]:
            with open(procs, "w") as f:
                f.write(str(pid))
    except OSError as err:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.write(status, json.dumps({"error": f"joining the task's cgroups: {err}"}).encode())
        remove_groups(spec["cgroups"])
        return 1
    os.write(go_write, b"g")
    os.close(go_write)
    failure = b""
    while chunk := os.read(err_read, 4096):
        failure += chunk
    os.close(err_read)
    if failure:
        os.waitpid(pid, 0)
        os.write(status, json.dumps({"error": failure.decode(errors="replace")}).encode())
        remove_groups(spec["cgroups"])
        return 1
    os.write(status, json.dumps({"pid": pid}).encode())
    os.close(status)
    _, wait_status = os.waitpid(pid, 0)
    code, signum = exit_code(wait_status)
    oom = oom_killed(spec["oom_control"]) if spec.get("oom_control") else False
    record(spec["exit_file"], code, signum, oom)
    remove_groups(spec["cgroups"])
    return 0


def main() -> int:
    status = int(sys.argv[1])
    try:
        spec = json.loads(sys.stdin.buffer.read())
        return launch(spec, status)
    except Exception as err:  # reported to the client, which fails the start with it
        with contextlib.suppress(OSError):
            os.write(status, json.dumps({"error": f"{type(err).__name__}: {err}"}).encode())
        return 1


if __name__ == "__main__":
    sys.exit(main())
