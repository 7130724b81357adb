"""One writer per run directory, and cells that end with their sweep's driver.

A sweep cell holds :func:`run_lock` (an ``fcntl.flock`` on ``<run_dir>.lock``, beside the run
directory so that a run started over, which empties its folder, keeps it) for its whole life;
the kernel lets it go when the process ends however it ends. A cell of a rerun on the same
directory waits for it, so two processes never write one run directory whatever Ray's timing.
:func:`watch_driver` ends a cell's worker process as soon as the driver that submitted it is
gone (killed with ``kill -9``), instead of when Ray notices.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # Windows: no locks (and no kill -9)
    fcntl = None  # type: ignore[assignment]  # a module or None: checked before each use

POLL_S = 0.5
"""How often a cell looks for its driver."""


def lock_path(run_dir: Path) -> Path:
    return run_dir.with_name(run_dir.name + ".lock")


def holder(run_dir: Path) -> int | None:
    """The pid of the process holding ``run_dir``'s lock, or ``None`` when it is free."""
    path = lock_path(run_dir)
    if fcntl is None or not path.exists():
        return None
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            text = f.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(f, fcntl.LOCK_UN)
    return None


@contextmanager
def run_lock(run_dir: Path, on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
    """Hold ``run_dir``'s lock; if another process holds it, call ``on_wait(its pid)`` and wait."""
    if fcntl is None:
        yield
        return
    path = lock_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    f: IO[str] = path.open("a+")
    try:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            text = f.read().strip()
            if on_wait is not None:
                on_wait(int(text) if text.isdigit() else -1)
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        yield
    finally:
        f.close()  # releases the lock


@dataclass(frozen=True)
class Driver:
    """The process that submitted a cell: host name, pid and start time (a reused pid differs)."""

    host: str
    pid: int
    started: float

    @staticmethod
    def this() -> Driver:
        return Driver(socket.gethostname(), os.getpid(), _start_time(os.getpid()) or 0.0)

    def gone(self) -> bool:
        """True once the driver no longer runs (on this host; elsewhere: never known here)."""
        if socket.gethostname() != self.host:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        started = _start_time(self.pid)
        return started is None or (self.started > 0 and started != self.started)


def _start_time(pid: int) -> float | None:
    """When ``pid`` started (clock ticks since boot, from ``/proc``), ``None`` for a process
    that ended (a zombie included); ``0.0`` where ``/proc`` is not there to tell."""
    if not Path("/proc/self/stat").exists():
        return 0.0
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (name) ": state is field 3
    if fields[0] in ("Z", "X"):
        return None
    return float(fields[19])  # field 22: starttime


@contextmanager
def watch_driver(driver: Mapping[str, str | int | float] | None, exit_code: int = 3) -> Iterator[None]:
    """While inside, a daemon thread ends this process (``os._exit``) once ``driver`` (a
    :class:`Driver` as a dict) is gone: a cell stops with the sweep that ran it."""
    if driver is None:
        yield
        return
    d = Driver(str(driver["host"]), int(driver["pid"]), float(driver["started"]))
    done = threading.Event()

    def watch() -> None:
        while not done.wait(POLL_S):
            if d.gone():
                print(f"prefrl sweep: driver {d.pid} is gone: this cell stops", file=sys.stderr, flush=True)
                os._exit(exit_code)

    thread = threading.Thread(target=watch, name="prefrl-driver-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(2 * POLL_S + 1)


def wait_line(name: str, run_dir: Path) -> Callable[[int], None]:
    """``on_wait`` of a cell: one line saying what it waits for."""

    def line(pid: int) -> None:
        who = f"process {pid}" if pid > 0 else "another process"
        print(
            f"prefrl sweep: cell {name}: {who} still writes {run_dir}; waiting for it to end",
            file=sys.stderr,
            flush=True,
        )

    return line
