"""Periodic evaluation on the true reward (``--eval-interval``): when, what is kept, resume."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from prefrl.cli.main import main
from prefrl.training.evaluations import last_mean

if TYPE_CHECKING:
    from prefrl.training.loop import PreferenceLoop

ARGS = ["--loop.total-steps", "2400", "--loop.initial-steps", "400", "--loop.iterations", "4",
        "--loop.total-labels", "12", "--loop.labels-per-round", "4", "--loop.round-interval", "1",
        "--loop.fragment-length", "20", "--agent.batch-size", "32", "--eval-episodes", "1",
        "--eval-interval", "1000", "--no-progress"]  # fmt: skip


def test_evaluations_every_interval_are_reported_and_survive_a_resume(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["train", "--run-dir", str(run), *ARGS]) == 0
    rep = json.loads((run / "report.json").read_text())
    steps = [t for t, _ in rep["evaluations"]]
    assert steps == [1000, 2000, 2400]  # every 1,000 steps, and the final policy at the last step
    rows = (run / "evaluations.csv").read_text().splitlines()
    assert rows[0] == "step,true_return" and len(rows) == 4
    assert np.isclose(rep["eval_last10_mean"], np.mean([r for _, r in rep["evaluations"]]))
    assert all(-2000 < r <= 0 for _, r in rep["evaluations"])  # Pendulum returns over one episode
    # the rounds asked 4 labels before training and 4 at each of the next two iterations
    with (run / "metrics.csv").open() as f:
        asked = [row["labels/asked"] for row in csv.DictReader(f)]
    assert [float(a) for a in asked if a] == [4.0, 4.0, 4.0]
    # resuming the finished run keeps the evaluations it had (saved in the checkpoint)
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    again = json.loads((run / "report.json").read_text())
    assert again["evaluations"] == rep["evaluations"]


def test_last_mean_takes_the_last_ten() -> None:
    evals = [(i * 10, float(i)) for i in range(15)]
    assert last_mean(evals) == np.mean(range(5, 15)) and last_mean([]) is None


def test_a_warning_line_when_the_correlation_turns_negative() -> None:
    import io
    from types import SimpleNamespace

    from prefrl.training.evaluations import CorrelationWatch

    out = io.StringIO()
    watch, loop = CorrelationWatch(out), SimpleNamespace(env_steps=0)
    seen = cast("PreferenceLoop", loop)  # a stand-in with only what the watch reads
    for step, r in [(1, 0.5), (2, -0.2), (3, -0.4), (4, 0.1), (5, -0.3)]:
        loop.env_steps = step * 1000
        watch.on_iteration_end(seen, {"reward/pearson_true": r})
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # once each time it turns negative
    assert "at step 2000" in lines[0] and "-0.20" in lines[0] and "at step 5000" in lines[1]
    watch.on_iteration_end(seen, {})  # no true reward measured: nothing
    assert len(out.getvalue().splitlines()) == 2
