"""Smoke tests: the moving-dot examples run end to end as scripts, with tiny budgets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # 35 s on an idle 2-core machine: over the default suite's budget with the rest
def test_custom_loop_example_runs() -> None:
    res = run_example("moving_dot_custom_loop.py", "--total-timesteps", "2048", "--learned-after", "1")
    assert res["episodes"] >= 1 and res["preferences"] > 0


@pytest.mark.slow
def test_sb3_example_runs_with_pixels() -> None:
    res = run_example(
        "moving_dot_sb3.py", "--obs-type", "pixels", "--total-timesteps", "256", "--n-steps", "128",
        "--eval-episodes", "1", "--fragment-length", "10", "--learned-after", "1",
    )  # fmt: skip
    assert set(res) >= {"true_return", "random_return", "preferences"}


@pytest.mark.slow
def test_sb3_example_runs_with_state() -> None:
    res = run_example(
        "moving_dot_sb3.py", "--total-timesteps", "512", "--n-steps", "128", "--eval-episodes", "1"
    )
    assert res["final_reward_source"] in ("true", "learned")
