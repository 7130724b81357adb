"""Chaos: ``kill -9`` a running ``prefrl train`` at random moments, resume each time.

After every kill the labels on disk never decrease; in the end the run has spent exactly its
label budget (no query asked twice, none lost) and finishes with a complete run directory.
The fast variant kills 3 times; the ``slow`` one 20 times in a row.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from prefrl.data import PreferenceDataset

LABELS = 12
ARGS = [
    "--loop.total-steps", "1200", "--loop.iterations", "6", "--loop.initial-steps", "200",
    "--loop.total-labels", str(LABELS), "--loop.fragment-length", "20",
    "--loop.initial-comparison-frac", "0.25",
    "--agent.net-arch", "16", "16", "--agent.batch-size", "32", "--reward.hidden", "16", "16",
    "--trainer.epochs", "20", "--eval-episodes", "1", "--no-progress",
]  # fmt: skip


def _train(*args: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "prefrl.cli.main", "train", *args]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _labels(run: Path) -> PreferenceDataset | None:
    path = run / "preferences.npz"
    return PreferenceDataset.load(path) if path.exists() else None


def _chaos(tmp_path: Path, kills: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    run = tmp_path / "run"
    proc = _train("--run-dir", str(run), *ARGS)
    seen: dict[int, float] = {}  # pair id -> label, as first seen on disk
    done = False
    for k in range(kills + 1):
        if k < kills:
            time.sleep(float(rng.uniform(1.0, 6.0)))  # start-up is ~3 s: kills land all over the run
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
        err = proc.communicate(timeout=600)[1].decode()
        if proc.returncode == 0:
            done = True
        else:
            assert proc.returncode == -signal.SIGKILL, err[-3000:]
        ds = _labels(run)
        if ds is not None:
            got = dict(zip(ds.pair_ids.tolist(), ds.labels.tolist()))
            assert set(seen) <= set(got), f"kill {k}: labels disappeared"
            assert all(got[i] == v or (np.isnan(got[i]) and np.isnan(v)) for i, v in seen.items())
            seen = got
        if done:
            break
        if (run / "config.json").exists():
            proc = _train("--resume", str(run))
        else:  # killed before the run directory was written: start it again
            proc = _train("--run-dir", str(run), "--force", *ARGS)
    if not done:  # the last resume runs to the end
        proc = _train("--resume", str(run))
        err = proc.communicate(timeout=600)[1].decode()
        assert proc.returncode == 0, err[-3000:]
    report = json.loads((run / "report.json").read_text())
    final = _labels(run)
    assert final is not None and len(final) == LABELS == report["labels_used"] == report["queries_asked"]
    assert set(seen) <= set(final.pair_ids.tolist())
    assert not list(run.rglob("*.tmp")), "a temporary file was left behind"


def test_three_random_kills_lose_no_label_and_ask_none_twice(tmp_path: Path) -> None:
    _chaos(tmp_path, kills=3, seed=0)


@pytest.mark.slow  # ~3 min
def test_twenty_random_kills_in_a_row(tmp_path: Path) -> None:
    _chaos(tmp_path, kills=20, seed=1)
