"""The core-engine example runs as a script and learns the reward."""

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reward_from_preferences.py"


def test_reward_from_preferences_example_learns():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--pairs", "150", "--epochs", "15"],
        capture_output=True, text=True, check=True, env=env, timeout=300,
    ).stdout  # fmt: skip
    acc_line = re.search(r"held-out preference accuracy: ([0-9.]+)", out)
    pearson_line = re.search(r"Pearson\(learned, true\) per step: ([0-9.-]+)", out)
    assert acc_line and pearson_line, out
    acc, pearson = float(acc_line.group(1)), float(pearson_line.group(1))
    assert acc >= 0.85 and pearson >= 0.7, out
