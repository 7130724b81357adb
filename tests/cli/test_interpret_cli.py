"""`prefrl interpret` end to end, from a tiny run directory and from bare files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from matplotlib.image import imread

from prefrl.agents.rollout import collect_episodes
from prefrl.cli.interpret import main
from prefrl.cli.main import main as prefrl_main
from prefrl.data import PreferenceDataset, Trajectory, TrajectoryBatch, random_pairs, sample_fragments
from prefrl.envs.gridworld import ENV_ID, GridWorldEnv
from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig
from prefrl.rewards import CNNReward, MLPReward, save_reward_net


def png_ok(path: Path) -> None:
    img = imread(str(path))
    assert img.shape[0] > 50 and len(np.unique(img.reshape(-1, img.shape[-1]), axis=0)) > 10


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory as the training loop writes it, built from the core engine."""
    run = tmp_path_factory.mktemp("run")
    env = GridWorldEnv()
    batch = collect_episodes(env, n_episodes=40, seed=0)
    frags, _ = sample_fragments(batch, 200, 5, np.random.default_rng(0))
    pairs = random_pairs(len(frags), 400, np.random.default_rng(1))
    ret = frags.returns()
    labels = np.where(ret[pairs[:, 0]] == ret[pairs[:, 1]], 0.5, ret[pairs[:, 0]] > ret[pairs[:, 1]])
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels.astype(np.float32))
    torch.manual_seed(0)
    net = MLPReward(env.observation_space, env.action_space, use_next_obs=True)
    RewardTrainer(net, RewardTrainerConfig(epochs=8, batch_size=64)).train(ds)
    save_reward_net(net, run / "reward.safetensors")
    ds.save(run / "preferences.npz")
    (run / "config.json").write_text(json.dumps({"env": {"id": ENV_ID}, "seed": 0}))
    (run / "metrics.csv").write_text(
        "step,reward/train_loss,reward/val_accuracy,agent/true_return,labels\n"
        "0,0.69,0.5,0.1,100\n1,0.45,0.8,0.4,200\n2,0.3,0.9,0.7,400\n"
    )
    return run


def test_report_from_a_run_directory(grid_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--run", str(grid_run), "--gamma", "0.9", "--shape-steps", "30"]) == 0
    out = grid_run / "interpret"
    for name in ("training.png", "curves.png", "heatmap.png", "shaping.png", "shaping_heatmap.png"):
        png_ok(out / name)
    html = (out / "index.html").read_text()
    assert html.count("data:image/png;base64,") >= 5 and "epic_true" in html and "heldout_accuracy" in html


def test_epic_and_evaluate_against_the_true_reward(
    grid_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert prefrl_main(["interpret", "epic", "--run", str(grid_run), "--coverage", "tabular"]) == 0
    d = json.loads(capsys.readouterr().out)["epic"]
    assert 0.0 <= d < 0.6  # trained on preferences of the true reward: closer than unrelated (≈0.71)
    assert main(["evaluate", "--run", str(grid_run)]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["heldout_pairs"] > 10 and m["pearson"] > 0.3 and 0 <= m["heldout_accuracy"] <= 1
    assert json.loads((grid_run / "interpret" / "metrics.json").read_text())["epic_true"] == m["epic_true"]


def test_bare_files_and_clear_errors(
    grid_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traj = collect_episodes(GridWorldEnv(), n_episodes=5, seed=3).save(tmp_path / "t.npz")
    args = [
        "--reward",
        str(grid_run / "reward.safetensors"),
        "--trajectories",
        str(traj),
        "--out",
        str(tmp_path),
    ]
    assert main(["curves", *args]) == 0
    png_ok(tmp_path / "curves.png")
    capsys.readouterr()
    assert main(["supervised", *args, "--epochs", "5"]) == 0
    assert "epic_model_vs_supervised" in json.loads(capsys.readouterr().out)
    assert main(["curves", "--trajectories", str(traj)]) == 2
    assert "no reward model" in capsys.readouterr().err
    (tmp_path / "bad.safetensors").write_bytes(b"not a model")
    assert main(["curves", "--reward", str(tmp_path / "bad.safetensors"), "--trajectories", str(traj)]) == 2
    assert "not a readable reward model" in capsys.readouterr().err


def test_image_commands_from_bare_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 256, (13, 16, 16, 3), dtype=np.uint8)
    traj = TrajectoryBatch.from_trajectories(
        [Trajectory(obs, rng.integers(0, 2, 12), rng.normal(size=12).astype(np.float32))]
    )
    traj.save(tmp_path / "img.npz")
    torch.manual_seed(0)
    net = CNNReward(
        spaces.Box(0, 255, (16, 16, 3), np.uint8),
        spaces.Discrete(2),
        channels=(4,),
        kernels=(3,),
        strides=(2,),
        hidden=(8,),
    )
    save_reward_net(net, tmp_path / "cnn.safetensors")
    args = [
        "--reward",
        str(tmp_path / "cnn.safetensors"),
        "--trajectories",
        str(tmp_path / "img.npz"),
        "--out",
        str(tmp_path / "o"),
    ]
    assert main(["saliency", *args, "--length", "3", "--patch", "4"]) == 0
    assert main(["extremes", *args, "--k", "3"]) == 0
    assert main(["synthesize", *args, "--n", "2", "--steps", "20"]) == 0
    for name in ("saliency.png", "extremes.png", "synthesized.png"):
        png_ok(tmp_path / "o" / name)
    ex = json.loads((tmp_path / "o" / "extremes.json").read_text())
    assert len(ex["top_rows"]) == 3 and ex["top_rewards"][0] >= ex["bottom_rewards"][0]
