"""A killed sweep driver leaves no cell writing its run directory: a cell holds its run
directory's lock for its whole life (a rerun's cell waits for it, with a line saying so) and
ends its process as soon as the driver that submitted it is gone."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from prefrl.run.cell_guard import Driver, _start_time, holder, run_lock, watch_driver

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill -9 and /proc")

HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from prefrl.run.cell_guard import run_lock
    with run_lock(Path(sys.argv[1])):
        print("locked", flush=True)
        time.sleep(120)
    """
)

WATCHED = textwrap.dedent(
    """
    import json, sys, time
    from prefrl.run.cell_guard import watch_driver
    with watch_driver(json.loads(sys.argv[1])):
        print("watching", flush=True)
        time.sleep(120)
    """
)


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)


def test_a_cell_waits_for_the_process_still_writing_its_run_directory(tmp_path: Path) -> None:
    run = tmp_path / "cells" / "c" / "run"
    old = _python(HOLDER, str(run))
    try:
        assert old.stdout is not None and old.stdout.readline().strip() == "locked"
        assert holder(run) == old.pid
        waited: list[int] = []
        got = threading.Event()

        def cell() -> None:
            with run_lock(run, waited.append):
                got.set()

        t = threading.Thread(target=cell, daemon=True)
        t.start()
        assert not got.wait(1.0), "two writers in one run directory"
        assert waited == [old.pid]
        os.kill(old.pid, signal.SIGKILL)
        assert got.wait(10), "the lock of a killed process was not released"
        t.join(5)
        assert holder(run) is None
    finally:
        old.kill()
        old.wait(10)


def test_a_cell_ends_when_its_driver_is_killed() -> None:
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    started = _start_time(driver.pid)
    assert started is not None
    spec = {"host": socket.gethostname(), "pid": driver.pid, "started": started}
    cell = _python(WATCHED, json.dumps(spec))
    try:
        assert cell.stdout is not None and cell.stdout.readline().strip() == "watching"
        time.sleep(1.0)
        assert cell.poll() is None  # the driver runs: the cell goes on
        os.kill(driver.pid, signal.SIGKILL)  # not reaped yet: a zombie is gone too
        assert cell.wait(5) == 3
    finally:
        for p in (driver, cell):
            if p.poll() is None:
                p.kill()
            p.wait(10)


def test_a_driver_on_another_host_or_with_a_reused_pid() -> None:
    assert not Driver("another-host", 1, 0.0).gone()
    me = Driver.this()
    assert not me.gone() and Driver(me.host, me.pid, me.started + 5).gone()
    with watch_driver(None):
        pass


def test_run_cell_holds_the_lock_of_its_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefrl.run import sweep

    run = tmp_path / "cells" / "c" / "run"
    seen: list[Any] = []

    def fake(cell: dict[str, Any], options: dict[str, Any], run_dir: str, *rest: Any) -> dict[str, Any]:
        seen.append(holder(Path(run_dir)))
        return {}

    monkeypatch.setattr(sweep, "_run_cell", fake)
    cell: dict[str, str | int] = {"kind": "oracle", "env": "Pendulum-v1", "agent": "sac", "steps": 10}
    cell["seed"] = 0
    assert (
        sweep.run_cell(cell, {}, str(run), str(run.parent / "result.json"), 1, 1, Driver.this().__dict__)
        == {}
    )
    assert seen == [os.getpid()] and holder(run) is None


@pytest.mark.slow  # a real Ray and a cell of a real run
def test_killing_the_driver_stops_its_running_cells(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    import psutil

    out = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "prefrl.cli.main", "sweep", "--out", str(out), "--env", "Pendulum-v1",
           "--labels", "3", "--seeds", "1", "--num-cpus", "2", "--steps", "20000", "--eval-episodes", "1",
           "--no-progress", "--set", "loop.initial_steps=200", "agent.net_arch=[16,16]"]  # fmt: skip
    before = {p.pid for p in psutil.process_iter()}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    runs: list[Path] = []
    try:
        deadline = time.monotonic() + 300
        while not runs and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            runs = [d / "run" for d in (out / "cells").glob("*") if (d / "run").is_dir()]
        assert runs, "no cell started" + (
            proc.communicate()[1].decode()[-3000:] if proc.poll() is not None else ""
        )
        time.sleep(2.0)  # the cells are training
        assert any(holder(r) is not None for r in runs)
        os.kill(proc.pid, signal.SIGKILL)  # the driver only: its local Ray's processes stay for now
        deadline = time.monotonic() + 5
        while any(holder(r) is not None for r in runs) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(holder(r) is None for r in runs), "a cell still writes after its driver was killed"
    finally:
        proc.kill()
        proc.wait(30)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # what is left of the local Ray (its session)
        except ProcessLookupError:
            pass
        for p in psutil.process_iter(["pid", "cmdline"]):  # Ray's workers of this test only
            if p.info["pid"] not in before and "ray::" in " ".join(p.info["cmdline"] or ()):
                try:
                    p.kill()
                except psutil.Error:
                    pass


@pytest.mark.slow  # a real Ray and two tiny runs
def test_a_rerun_waits_for_a_process_still_writing_a_cells_run_directory(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    from prefrl.run.sweep import SweepConfig, grid

    out = tmp_path / "sweep"
    sc = SweepConfig(env=["Pendulum-v1"], labels=[3], seeds=1, steps=500, out=str(out))
    learned, _ = grid(sc, {})
    run = out / "cells" / learned[0].name / "run"
    old = _python(HOLDER, str(run))  # a cell of a killed sweep that Ray has not stopped yet
    cmd = [sys.executable, "-m", "prefrl.cli.main", "sweep", "--out", str(out), "--env", "Pendulum-v1",
           "--labels", "3", "--seeds", "1", "--steps", "500", "--num-cpus", "2", "--eval-episodes", "1",
           "--no-progress", "--set", "loop.initial_steps=200", "loop.iterations=2",
           "loop.fragment_length=20", "agent.net_arch=[16,16]", "agent.batch_size=32",
           "reward.hidden=[16,16]", "trainer.epochs=5"]  # fmt: skip
    sweep = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert old.stdout is not None and old.stdout.readline().strip() == "locked"
        assert sweep.stderr is not None
        line = sweep.stderr.readline()
        assert f"cell {learned[0].name}: process {old.pid} still writes {run}" in line, line
        time.sleep(5.0)
        assert not (run / "config.json").exists(), "the rerun's cell wrote beside a running one"
        os.kill(old.pid, signal.SIGKILL)
        stdout, stderr = sweep.communicate(timeout=600)
        assert sweep.returncode == 0, stderr[-3000:]
        assert json.loads(stdout.strip().splitlines()[-1])["ran"] == 2
        assert (run / "report.json").exists() and holder(run) is None
    finally:
        for p in (old, sweep):
            if p.poll() is None:
                p.kill()
            p.wait(30)
        try:
            os.killpg(sweep.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
