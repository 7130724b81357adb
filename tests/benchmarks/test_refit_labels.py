"""Fitting a run's own labels again offline (``benchmarks/refit_labels.py``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from prefrl.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("refit_labels", ROOT / "benchmarks/refit_labels.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_refit_records_each_variants_course_and_names_a_wrong_directory(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    args = ["train", "--env.id", "Pendulum-v1", "--run-dir", str(run), "--loop.total-steps", "600",
            "--loop.initial-steps", "400", "--loop.iterations", "1", "--loop.total-labels", "40",
            "--loop.fragment-length", "10", "--no-page", "--no-progress"]  # fmt: skip
    assert main(args) == 0
    ckpt = sorted((run / "checkpoints").glob("iter_*"))[-1]
    rf = _module()
    out = tmp_path / "refit.json"
    assert rf.main(["--checkpoint", str(ckpt), "--variants", "tanh:0.003", "linear:0.003",
                    "--steps", "60", "--every", "30", "--out", str(out)]) == 0  # fmt: skip
    records = json.loads(out.read_text())["records"]
    want = [("linear", 0), ("tanh", 30), ("tanh", 60), ("linear", 30), ("linear", 60)]
    assert [(r["output"], r["steps"]) for r in records] == want  # the run's own (linear) reward first
    assert records == [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()[-5:]]
    for r in records:
        assert len(r["level"]) == 3 and 0.0 <= r["saturated"] <= 1.0 and r["held_out_pairs"] > 0
        assert r["spread"] > 0  # a live reward pays steps differently
    assert records[0]["lr"] is None and records[0]["train_loss"] is None  # not fitted again
    assert records[-1]["train_accuracy"] > 0.7  # Pendulum's labels are learned
    assert records[-1]["saturated"] == 0.0  # linear: nothing to saturate
    assert rf.main(["--checkpoint", str(ckpt), "--variants"]) == 0  # the saved reward alone
    assert len(capsys.readouterr().out.strip().splitlines()) == 1
    with pytest.raises(SystemExit):
        rf.main(["--checkpoint", str(run / "tb")])  # no labels there
    assert "has no preferences.npz" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        rf.main(["--checkpoint", str(ckpt), "--variants", "sigmoid:0.1"])
    assert "a variant is OUTPUT:LR" in capsys.readouterr().err


def test_refit_records_how_each_reward_ranks_the_policies_it_is_given(tmp_path: Path) -> None:
    """--compare: every record scores the trajectory files by its reward; a reward fitted to
    Pendulum's labels pays the random episodes the true reward pays most above those it pays least."""
    import numpy as np

    from prefrl.agents.rollout import collect_episodes
    from prefrl.agents.sb3 import make_env
    from prefrl.data import TrajectoryBatch

    run = tmp_path / "run"
    args = ["train", "--env.id", "Pendulum-v1", "--run-dir", str(run), "--loop.total-steps", "600",
            "--loop.initial-steps", "400", "--loop.iterations", "1", "--loop.total-labels", "60",
            "--loop.fragment-length", "10", "--no-page", "--no-progress"]  # fmt: skip
    assert main(args) == 0
    batch = collect_episodes(make_env("Pendulum-v1"), n_episodes=16, seed=3)
    order = np.argsort(batch.episode_returns())
    files = []
    for name, idx in (("worse", order[:8]), ("better", order[8:])):
        files.append(TrajectoryBatch.from_trajectories([batch.episode(int(i)) for i in idx]).save(
            tmp_path / f"{name}.npz"))  # fmt: skip
    out = tmp_path / "refit.json"
    argv = ["--checkpoint", str(run), "--variants", "linear:0.003", "--steps", "100", "--every", "100",
            "--out", str(out), "--compare", *map(str, files), "--events", str(files[0])]  # fmt: skip
    assert _module().main(argv) == 0
    records = json.loads(out.read_text())["records"]
    assert len(records) == 2 and all(set(r["per_step_in_spreads"]) == {"better", "worse"} for r in records)
    assert all("dense" in r["events"]["worse"]["skipped"] for r in records)  # Pendulum: no events
    assert records[-1]["order"] == ["better", "worse"], records[-1]
    gap = records[-1]["per_step_in_spreads"]["better"] - records[-1]["per_step_in_spreads"]["worse"]
    assert 0 < gap < 10  # in units of the per-step rewards' spread
    assert all(abs(v) < 10 for r in records for v in r["per_step_in_spreads"].values())  # around the mean


def test_refit_adds_oracle_labels_of_other_clips_and_profiles_events(tmp_path: Path, capsys) -> None:
    """--extra-clips/--extra-labels: oracle-labelled pairs of another file's clips join the fitted
    labels; --events: every record says where the reward puts each file's sparse events."""
    from prefrl.agents.rollout import collect_episodes
    from prefrl.envs.gridworld import GridWorldEnv

    run = tmp_path / "run"
    args = ["train", "--env.id", "prefrl/GridWorld-v0", "--run-dir", str(run), "--loop.total-steps", "600",
            "--loop.initial-steps", "400", "--loop.iterations", "1", "--loop.total-labels", "40",
            "--loop.fragment-length", "5", "--no-page", "--no-progress"]  # fmt: skip
    assert main(args) == 0
    extra = collect_episodes(GridWorldEnv(), n_episodes=30, seed=1).save(tmp_path / "other.npz")
    probe = collect_episodes(GridWorldEnv(), n_episodes=30, seed=2).save(tmp_path / "probe.npz")
    out = tmp_path / "refit.json"
    argv = ["--checkpoint", str(run), "--variants", "linear:0.003", "--steps", "40", "--every", "40",
            "--extra-clips", str(extra), "--extra-labels", "25", "--events", str(probe),
            "--out", str(out)]  # fmt: skip
    rf = _module()
    assert rf.main(argv) == 0
    saved, fitted = json.loads(out.read_text())["records"]
    assert "extra_labels" not in saved and fitted["extra_labels"] == 25 and 0 <= fitted["extra_ties"] <= 1
    for r in (saved, fitted):
        ev = r["events"]["probe"]
        assert 0 <= ev["explained"] <= 1 and set(ev["kept"]) <= {"+1", "-1"} and ev["kept"]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        rf.main(["--checkpoint", str(run), "--extra-labels", "5"])
    assert "go together" in capsys.readouterr().err
