"""Exact reproduction: a fixed-seed run gives the figures it gave before the loop became stages.

``golden/*.json`` were written by the loop as one class (commit 6b9df36, before issue 46's
stages) with ``python -m tests.training.test_golden --write``: a tiny CartPole PPO run from
scratch, and the resume of ``golden/pendulum_sac_v1/``, a run directory that code left after
its iteration-2 checkpoint (as a kill there leaves it: a version-1 ``state.json``, replay buffer,
normaliser, evaluations). Every figure but wall-clock time must come out the same: a change to
the order of the loop's random draws, a stage that forgets part of its state, or a checkpoint
field read back differently shows up here. Floats are compared to 1e-5, relative: another CPU's
float32 rounding moves them by about 1e-7 (measured: a machine of 2026-11-28 against the one that
wrote the files), a changed draw or a lost piece of state by far more.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from prefrl.cli.main import main

HERE = Path(__file__).parent / "golden"
TINY = ["--agent.net-arch", "16", "16", "--agent.batch-size", "32", "--reward.hidden", "16", "16",
        "--reward.ensemble-size", "2", "--trainer.epochs", "2", "--loop.fragment-length", "20",
        "--no-progress", "--no-page", "--threads", "1"]  # fmt: skip
CARTPOLE = ["--seed", "1", "--env.id", "CartPole-v1", "--agent.algo", "ppo", "--agent.n-steps", "128",
            "--loop.total-steps", "1024", "--loop.iterations", "4", "--loop.initial-steps", "256",
            "--loop.total-labels", "12", "--eval-episodes", "2", "--eval-interval", "256", *TINY]  # fmt: skip
WALL_CLOCK = ("time/", "reward/wall_s", "reward/comparisons_per_s")
LATER = ("watch/", "reward/fresh_hits", "reward/fresh_n", "agent/entropy")
"""Metrics the loop logs since the golden files were written (issue 48's run watch, the agent's
entropy): measured without a random draw of the loop's, so every figure the golden files hold
must still come out the same; these are left out of the comparison."""
REL_TOL = 1e-5
"""Floats agree to this, relative: another CPU's rounding passes, a changed figure does not."""
REPORT = ("env_steps", "true_return", "true_return_std", "random_return", "labels_used", "queries_asked",
          "evaluations", "eval_last10_mean", "reward_accuracy", "label_tie_fraction")  # fmt: skip


def _number(text: str) -> float | None:
    return None if text in ("", "nan") else float(text)


def _row(line: str) -> list[float]:
    """An ``evaluations.csv`` line (as the golden files keep them) as numbers."""
    return [float(x) for x in line.split(",")]


def figures(run: Path) -> dict[str, Any]:
    """Every figure of a finished run but wall-clock time: metrics.csv, evaluations.csv, the
    report's results and the labels (pairs and answers)."""
    with (run / "metrics.csv").open() as f:
        rows = [
            {k: _number(v) for k, v in r.items() if not k.startswith(WALL_CLOCK + LATER)}
            for r in csv.DictReader(f)
        ]
    path = run / "evaluations.csv"
    lines = path.read_text().splitlines()[1:] if path.exists() else []
    evals = [_row(line) for line in lines]
    report = json.loads((run / "report.json").read_text())
    with np.load(run / "preferences.npz", allow_pickle=False) as prefs:
        labels = {"pairs": prefs["pairs"].tolist(), "labels": prefs["labels"].tolist()}
    return {"metrics": rows, "evaluations": evals, "report": {k: report.get(k) for k in REPORT}, **labels}


def _same(got: Any, want: Any, where: str = "") -> list[str]:
    """Where ``got`` and ``want`` differ (floats equal to :data:`REL_TOL`, relative)."""
    if isinstance(want, dict) and isinstance(got, dict):
        keys = sorted(set(want) | set(got))
        return [
            d for k in keys for d in _same(got.get(k, "<missing>"), want.get(k, "<missing>"), f"{where}.{k}")
        ]
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in _same(g, w, f"{where}[{i}]")]
    if isinstance(want, float) and isinstance(got, float | int) and not isinstance(got, bool):
        close = math.isclose(got, want, rel_tol=REL_TOL, abs_tol=1e-9)
        return [] if close else [f"{where}: {got!r} != {want!r}"]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


def _cartpole(run: Path) -> None:
    assert main(["train", "--run-dir", str(run), *CARTPOLE]) == 0


def _resume_v1(run: Path) -> None:
    shutil.copytree(HERE / "pendulum_sac_v1", run)
    assert main(["train", "--resume", str(run), "--no-progress", "--no-page"]) == 0


def _check(run: Path, name: str) -> None:
    want = json.loads((HERE / f"{name}.json").read_text())
    want["evaluations"] = [_row(e) if isinstance(e, str) else e for e in want["evaluations"]]  # old or new
    diffs = _same(figures(run), want)
    assert not diffs, f"{len(diffs)} figures differ from golden/{name}.json, the first:\n" + "\n".join(
        diffs[:10]
    )


def test_a_fixed_seed_run_gives_the_figures_it_gave_before(tmp_path: Path) -> None:
    _cartpole(tmp_path / "run")
    _check(tmp_path / "run", "cartpole_ppo")


def test_a_checkpoint_written_before_the_stages_resumes_to_the_same_figures(tmp_path: Path) -> None:
    state = json.loads((HERE / "pendulum_sac_v1/checkpoints/iter_000002/state.json").read_text())
    assert state["version"] == 1 and "rng" in state and "normalizer" in state  # as that code wrote it
    _resume_v1(tmp_path / "run")
    _check(tmp_path / "run", "pendulum_sac_resumed")
    report = json.loads((tmp_path / "run/report.json").read_text())
    assert report["resumed"] and report["env_steps"] == 700 and report["labels_used"] == 10


def test_the_comparison_sees_a_changed_figure() -> None:
    want = {"metrics": [{"reward/train_loss": 0.25, "labels/asked": 3.0}], "pairs": [[0, 1]]}
    assert _same(json.loads(json.dumps(want)), want) == []
    rounded = {"metrics": [{"reward/train_loss": 0.25 * (1 + 2e-7), "labels/asked": 3.0}], "pairs": [[0, 1]]}
    assert _same(rounded, want) == []  # another CPU's float32 rounding
    assert _same(
        {"metrics": [{"reward/train_loss": 0.25 * (1 + 1e-4), "labels/asked": 3.0}], "pairs": [[0, 1]]}, want
    )
    assert _same({"metrics": [{"reward/train_loss": 0.25}], "pairs": [[0, 1]]}, want)  # a metric gone
    assert _same({**want, "pairs": [[1, 0]]}, want)


if __name__ == "__main__" and "--write" in sys.argv:  # the golden files, from the code on sys.path
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("cartpole_ppo", _cartpole), ("pendulum_sac_resumed", _resume_v1)):
            make(Path(tmp) / name)
            (HERE / f"{name}.json").write_text(json.dumps(figures(Path(tmp) / name), indent=1) + "\n")
