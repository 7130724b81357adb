"""``prefrl sweep`` on a real Ray: a 2 env x 2 budget x 2 seed grid of tiny runs, killed
mid-way and started again (only the missing cells run), and the same kind of sweep on a
Ray cluster started here with ``ray start --head``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("ray")

TINY = [
    "--steps", "500", "--eval-episodes", "1", "--no-progress", "--set", "loop.initial_steps=200",
    "loop.iterations=2", "loop.fragment_length=20", "agent.net_arch=[16,16]", "agent.batch_size=32",
    "agent.n_steps=64", "reward.hidden=[16,16]", "trainer.epochs=5",
]  # fmt: skip
GRID = ["--env", "Pendulum-v1", "CartPole-v1", "--labels", "3", "6", "--seeds", "2"]


def _sweep(out: Path, *args: str, more_set: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "prefrl.cli.main", "sweep", "--out", str(out), *args, *TINY, *more_set]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


RAY_MARKERS = ("gcs_server", "raylet", "ray::", "default_worker.py", "log_monitor.py", "monitor.py",
               "dashboard", "runtime_env", "ray/_private", "ray/autoscaler")  # fmt: skip


def _ray_pids() -> set[int]:
    """PIDs of Ray's processes on this machine (head services, raylets, workers)."""
    import psutil

    pids = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or ())
        if any(m in cmd for m in RAY_MARKERS):
            pids.add(proc.info["pid"])
    return pids


BEFORE: set[int] = set()


@pytest.fixture(autouse=True)
def _ray_before() -> None:
    """Ray processes that ran before the test (a user's sweep, a cluster) are left alone."""
    BEFORE.clear()
    BEFORE.update(_ray_pids())


def _ray_stop() -> None:
    """Stop the Ray processes this test started, and only those (not ``ray stop``, which ends
    every Ray on the machine, e.g. a benchmark running beside the tests)."""
    import psutil

    for _ in range(3):
        new = _ray_pids() - BEFORE - {os.getpid()}
        if not new:
            return
        for pid in new:
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass
        time.sleep(1.0)


def _finished(out: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in (out / "cells").glob("*/result.json")}


@pytest.mark.slow  # a real Ray and whole runs
def test_sweep_writes_table_and_plots_and_a_restart_runs_only_missing_cells(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    proc = _sweep(out, *GRID, "--num-cpus", "2")
    deadline = time.monotonic() + 600
    try:
        while len(_finished(out)) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(1.0)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert len(_finished(out)) >= 3, "no cell finished in time"
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the local Ray it started
        proc.wait(30)
    finally:
        _ray_stop()
    before = _finished(out)
    assert 3 <= len(before) < 12
    again = _sweep(out, *GRID, "--num-cpus", "2")
    stdout, stderr = again.communicate(timeout=900)
    assert again.returncode == 0, stderr[-3000:]
    assert "WARNING" not in stdout + stderr, stderr[-3000:]  # no Ray start-up warnings (token authentication)
    res = json.loads(stdout.strip().splitlines()[-1])
    assert res["cells"] == 12 and res["skipped"] == len(before) and res["ran"] == 12 - len(before)
    after = _finished(out)
    assert len(after) == 12 and all(after[k] == v for k, v in before.items())  # finished cells untouched
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and {(r["env"], r["labels"], r["seed"]) for r in rows} == {
        (e, n, s) for e in ("Pendulum-v1", "CartPole-v1") for n in (3, 6) for s in (0, 1)
    }
    assert all(r["score"] is not None and r["labels_used"] == r["labels"] for r in rows)
    table = (out / "summary.md").read_text().splitlines()
    assert len(table) == 2 + 4 and "| CartPole-v1 | ppo | oracle | 3 | 500 | 2 |" in table[2]
    for png in ("score_vs_labels.png", "wall_time.png"):
        assert (out / png).stat().st_size > 5000
    # a different sweep in the same directory is refused, before anything runs
    other = _sweep(out, *GRID, "--num-cpus", "2", more_set=("trainer.lr=0.1",))
    assert other.wait(120) == 2 and "holds a sweep with other options" in other.communicate()[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow  # a real Ray cluster started and stopped
def test_sweep_runs_its_cells_on_an_existing_ray_cluster(tmp_path: Path) -> None:
    ray = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
    port = _free_port()
    head = subprocess.run(
        [ray, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    try:
        assert head.returncode == 0, head.stderr[-3000:]
        out = tmp_path / "sweep"
        proc = _sweep(out, "--env", "Pendulum-v1", "--labels", "3", "6", "--seeds", "1",
                      "--address", f"127.0.0.1:{port}")  # fmt: skip
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stderr[-3000:]
        assert json.loads(stdout.strip().splitlines()[-1])["ran"] == 3
        cells = [json.loads(p.read_text()) for p in (out / "cells").glob("*/result.json")]
        assert len(cells) == 3 and {c["ray_address"].rsplit(":", 1)[1] for c in cells} == {str(port)}
        assert len({c["node_id"] for c in cells}) == 1  # the head node (the cluster's only one)
        # each cell names where it ran: the kernels PyTorch chose there decide what repeats
        assert {c["machine"]["cpu_capability"] for c in cells} == {torch.backends.cpu.get_cpu_capability()}
    finally:
        _ray_stop()


def test_bad_sweep_options_fail_before_anything_runs(tmp_path: Path) -> None:
    from prefrl.cli.main import main

    out = tmp_path / "s"
    assert (
        main(["sweep", "--env", "Pendulum-v1", "--labels", "3", "--out", str(out), "--set", "loop.nosuch=1"])
        == 2
    )
    assert main(["sweep", "--env", "Pendulum-v9", "--labels", "3", "--out", str(out)]) == 2
    assert main(["sweep", "--labels", "3", "--out", str(out)]) == 2
    assert main(["sweep", "--env", "Pendulum-v1", "--labels", "3", "--out", str(out), "--set", "seed=4"]) == 2
    assert not (out / "cells").exists()


def test_first_seed_shifts_the_grids_seeds(tmp_path: Path) -> None:
    from prefrl.cli.main import main
    from prefrl.run.sweep import SweepConfig, grid

    sc = SweepConfig(env=["Pendulum-v1"], labels=[3, 6], seeds=2, first_seed=5, out=str(tmp_path))
    learned, oracle = grid(sc, {})
    assert [c.seed for c in oracle] == [5, 6] and sorted({c.seed for c in learned}) == [5, 6]
    assert learned[0].name.endswith("-3l-15000s-seed5") and oracle[1].name.endswith("-seed6")
    out = tmp_path / "s"
    assert (
        main(["sweep", "--env", "Pendulum-v1", "--labels", "3", "--out", str(out), "--first-seed", "-1"]) == 2
    )
    assert not out.exists()


def test_the_grid_resolves_each_agent_for_the_environment_its_options_make(tmp_path: Path) -> None:
    """``env.kwargs`` can change the action space (LunarLander's ``continuous``): the agent auto
    picks for a cell is the one for the environment the cell trains on."""
    from prefrl.run.options import parse_options
    from prefrl.run.sweep import SweepConfig, grid

    sc = SweepConfig(env=["LunarLander-v3"], labels=[3], seeds=1, out=str(tmp_path))
    assert {c.agent for c in grid(sc, {})[1]} == {"ppo"}  # Discrete(4)
    continuous = parse_options(['env.kwargs={"continuous": true}'])
    learned, oracle = grid(sc, continuous)
    assert {c.agent for c in learned + oracle} == {"sac"}  # Box(2,)
