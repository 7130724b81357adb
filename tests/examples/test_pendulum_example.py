"""The Pendulum example runs end to end at a tiny budget and writes a complete run directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # ~30 s on an idle 2-core machine; the loop itself is covered by tests/training
def test_pendulum_example_smoke(tmp_path: Path) -> None:
    run = tmp_path / "pend"
    cmd = [sys.executable, str(ROOT / "examples/pendulum.py"), "--steps", "600", "--labels", "4",
           "--iterations", "2", "--run-dir", str(run)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "true return of final policy" in res.stdout
    rep = json.loads((run / "report.json").read_text())
    assert rep["labels_used"] == 4 and rep["env_steps"] == 600
    for name in ["config.json", "reward.safetensors", "preferences.npz", "metrics.csv", "policy.zip", "tb"]:
        assert (run / name).exists(), name
    plot = [sys.executable, str(ROOT / "examples/pendulum_plot.py"), str(run), str(tmp_path / "c.png")]
    png = subprocess.run(plot, capture_output=True, text=True, timeout=120)
    assert png.returncode == 0, png.stderr
    assert (tmp_path / "c.png").stat().st_size > 1000
