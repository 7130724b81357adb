"""Shaping keeps optimal policies and improves readability; supervised learning fits rewards."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pytest
import torch

from prefrl.data import TrajectoryBatch
from prefrl.envs.gridworld import GridWorldEnv
from prefrl.interpret.evaluation import Coverage, epic_distance, reward_correlations
from prefrl.interpret.rewardfn import reward_table
from prefrl.interpret.shaping import ShapingConfig, learn_shaping, plot_shaping
from prefrl.interpret.supervised import SupervisedConfig, fit_supervised
from prefrl.interpret.tabular import optimal_actions, value_iteration
from prefrl.rewards import MLPReward, load_reward_net, save_reward_net

GAMMA = 0.9


@pytest.mark.parametrize("objective", ["sparse", "smooth"])
def test_shaping_keeps_the_optimal_policy_of_a_gridworld(
    objective: Literal["sparse", "smooth"],
    grid_env: GridWorldEnv,
    grid_batch: TrajectoryBatch,
    tmp_path: Path,
) -> None:
    torch.manual_seed(1)
    net = MLPReward(grid_env.observation_space, grid_env.action_space, hidden=(16,), use_next_obs=True)
    shaped, m = learn_shaping(net, grid_batch, ShapingConfig(objective=objective, gamma=GAMMA, steps=300))
    key = "l1" if objective == "sparse" else "tv"
    assert m[f"{key}_after"] < 0.8 * m[f"{key}_before"]  # it did become more readable

    term, p = grid_env.terminal_states(), grid_env.transition_table()
    r0 = reward_table(net, grid_env.n_states, 4, dones=term)
    r1 = reward_table(shaped, grid_env.n_states, 4, dones=term)
    assert np.abs(r1 - r0).max() > 0.05  # the reward really changed
    q0, _ = value_iteration(p, r0, GAMMA, term)
    q1, _ = value_iteration(p, r1, GAMMA, term)
    live = ~(term | grid_env.wall_states())
    np.testing.assert_array_equal(optimal_actions(q0, 1e-5)[live], optimal_actions(q1, 1e-5)[live])
    diff = (q1 - q0)[live]  # Q' = Q − Φ(s): the same shift for every action of a state
    np.testing.assert_allclose(diff, diff[:, :1].repeat(4, 1), atol=1e-4)

    # The shaped reward saves and loads like any reward network; EPIC sees no difference.
    loaded = load_reward_net(save_reward_net(shaped, tmp_path / "shaped.safetensors"))
    np.testing.assert_allclose(reward_table(loaded, 25, 4, term), r1, atol=1e-6)
    assert epic_distance(net, loaded, Coverage.tabular(25, 4), GAMMA) < 1e-3
    plot_shaping(net, shaped, grid_batch, tmp_path / "shape.png")
    assert (tmp_path / "shape.png").stat().st_size > 5000


def test_supervised_learning_recovers_the_true_reward(
    grid_env: GridWorldEnv, grid_batch: TrajectoryBatch
) -> None:
    torch.manual_seed(0)
    net = MLPReward(grid_env.observation_space, grid_env.action_space, hidden=(32,), use_next_obs=True)
    m = fit_supervised(net, grid_batch, SupervisedConfig(epochs=60, lr=1e-2, val_fraction=0.2))
    assert m["val_mse"] < 0.01 and m["train_mse"] < 0.01
    assert reward_correlations(net, grid_batch)["pearson"] > 0.95
    cov = Coverage.from_batch(grid_batch, n_mean=25)
    assert epic_distance(net, grid_env.reward_table(), cov, GAMMA) < 0.2


def test_supervised_needs_true_rewards(grid_env: GridWorldEnv, grid_batch: TrajectoryBatch) -> None:
    b = grid_batch
    net = MLPReward(grid_env.observation_space, grid_env.action_space)
    with pytest.raises(ValueError, match="true rewards"):
        fit_supervised(net, TrajectoryBatch(b.obs, b.acts, None, b.lengths, b.terminated, b.truncated))
    with pytest.raises(ValueError, match="objective"):
        ShapingConfig(objective="pretty")  # type: ignore[arg-type]
