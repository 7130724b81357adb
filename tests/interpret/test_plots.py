"""Plots are produced, non-empty, and draw the right numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from prefrl.data import Trajectory, TrajectoryBatch
from prefrl.envs.gridworld import GridWorldEnv
from prefrl.interpret.plots import (
    affine_fit,
    gridworld_state_action_rewards,
    plot_gridworld_heatmaps,
    plot_reward_curves,
    plot_reward_slice,
    plot_training_curves,
    read_metrics_csv,
    training_panels,
)
from prefrl.interpret.report import write_html_report
from prefrl.rewards import MLPReward


def test_gridworld_rewards_per_state_and_action(grid_env: GridWorldEnv) -> None:
    r = gridworld_state_action_rewards(grid_env.reward_table(), grid_env)
    assert r.shape == (4, 5, 5)
    assert r[1, 4, 3] == 1.0 and r[2, 3, 4] == 1.0  # right into G from (4,3), down into G from (3,4)
    assert r[2, 1, 2] == -1.0  # down into the lava
    assert np.isnan(r[:, 1, 1]).all() and np.isnan(r[:, 4, 4]).all()  # wall, goal
    assert np.nansum(np.abs(r)) == 6.0  # 2 ways into G, 4 into L


def test_heatmaps_reward_curves_and_report(
    tmp_path: Path, grid_env: GridWorldEnv, grid_batch: TrajectoryBatch, png_ok
) -> None:
    net = MLPReward(grid_env.observation_space, grid_env.action_space, use_next_obs=True)
    heat = plot_gridworld_heatmaps(
        {"true": grid_env.reward_table(), "learned": net}, grid_env, tmp_path / "h.png"
    )
    png_ok(heat)
    curves = plot_reward_curves(net, grid_batch, tmp_path / "c.png", episodes=[0, 2])
    png_ok(curves)
    with pytest.raises(ValueError, match="out of range"):
        plot_reward_curves(net, grid_batch, tmp_path / "x.png", episodes=[99])
    html = write_html_report(tmp_path / "r.html", [("heat", heat), ("curves", curves)], {"epic": 0.25})
    text = html.read_text()
    assert text.count("data:image/png;base64,") == 2 and "0.25" in text


def test_affine_fit_recovers_scale() -> None:
    x = np.array([0.0, 1.0, 2.0, 5.0])
    assert affine_fit(x, 3 * x - 2) == pytest.approx((3.0, -2.0))


def test_reward_slices_1d_and_2d(tmp_path: Path, png_ok) -> None:
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(41, 3)).astype(np.float32)
    batch = TrajectoryBatch.from_trajectories(
        [Trajectory(obs, rng.integers(0, 2, 40), np.zeros(40, np.float32))]
    )
    net = MLPReward(spaces.Box(-np.inf, np.inf, (3,), np.float32), spaces.Discrete(2))
    torch.manual_seed(0)
    png_ok(plot_reward_slice(net, [1], tmp_path / "s1.png", batch=batch))
    png_ok(plot_reward_slice(net, [0, 2], tmp_path / "s2.png", batch=batch), min_colors=50)
    with pytest.raises(ValueError, match="distinct observation dimensions"):
        plot_reward_slice(net, [3], tmp_path / "bad.png")


def test_training_curves_from_metrics_csv(tmp_path: Path, png_ok) -> None:
    csv = tmp_path / "metrics.csv"
    csv.write_text(
        "step,reward/train_loss,reward/val_accuracy,agent/true_return,labels,note\n"
        "0,0.69,0.5,,10,start\n1,0.5,0.7,3.0,20,x\n2,0.4,0.8,5.5,30,y\n"
    )
    cols = read_metrics_csv(csv)
    assert set(cols) == {"step", "reward/train_loss", "reward/val_accuracy", "agent/true_return", "labels"}
    assert np.isnan(cols["agent/true_return"][0]) and cols["labels"][2] == 30
    png_ok(plot_training_curves(csv, tmp_path / "t.png"))
    png_ok(plot_training_curves(csv, tmp_path / "all.png", panels="all"))
    (tmp_path / "empty.csv").write_text("step,note\n0,a\n")
    with pytest.raises(ValueError, match="no numeric metric"):
        plot_training_curves(tmp_path / "empty.csv", tmp_path / "e.png")


def test_training_figure_shows_the_headline_panels_first() -> None:
    """Issue 15.9: training.png was a 25-panel dump with flat panels; the headline figure
    groups what a person reads first, and the full one leaves constant metrics out."""
    n = 6
    ramp = np.arange(n, dtype=float)
    cols = {"step": ramp, "env_steps": ramp * 1000, "rollout/true_return": ramp * 10,
            "reward/heldout_accuracy": ramp / 10, "reward/val_accuracy": ramp / 8,
            "reward/l2_coef": np.zeros(n), "labels/total": ramp,
            **{f"time/x{i}": ramp * i for i in range(1, 20)}}  # fmt: skip
    panels, _ = training_panels(cols)
    titles = [t for t, _, _ in panels]
    assert len(panels) <= 6 and titles[0].startswith("agent: true return")
    accuracy = dict((t, names) for t, names, _ in panels)["reward model: pair accuracy"]
    assert accuracy == ["reward/heldout_accuracy", "reward/val_accuracy"]  # drawn together
    every, flat = training_panels(cols, "all")
    assert flat == 1 and "reward/l2_coef" not in [t for t, _, _ in every] and len(every) == len(cols) - 3
    fallback, _ = training_panels({"my/metric": ramp})  # none of the usual metrics
    assert [t for t, _, _ in fallback] == ["my/metric"]
    on_policy, _ = training_panels({**cols, "agent/entropy": 1.0 / (1.0 + ramp)})  # PPO's runs log it
    assert [names for t, names, _ in on_policy if t.startswith("agent: action entropy")] == [
        ["agent/entropy"]
    ]
