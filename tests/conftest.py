"""Shared fixtures: small real rollouts, generated on the fly (no downloaded data)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from prefrl.agents.rollout import collect_episodes
from prefrl.data import Trajectory, TrajectoryBatch


@pytest.fixture(autouse=True)
def _seed_and_threads() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def pendulum_batch() -> TrajectoryBatch:
    """40 random-policy Pendulum-v1 episodes (8,000 transitions) with true rewards."""
    env = gym.make("Pendulum-v1")
    return collect_episodes(env, n_episodes=40, seed=0)


def make_batch(
    lengths: list[int], obs_dim: int = 3, act_dim: int = 1, seed: int = 0, terminated: bool = False
) -> TrajectoryBatch:
    """Episodes whose observation at step t of episode i is (i, t, ...) so content is checkable."""
    rng = np.random.default_rng(seed)
    trajs = []
    for i, t in enumerate(lengths):
        obs = rng.normal(size=(t + 1, obs_dim)).astype(np.float32)
        obs[:, 0], obs[:, 1] = i, np.arange(t + 1)
        trajs.append(
            Trajectory(
                obs=obs,
                acts=rng.normal(size=(t, act_dim)).astype(np.float32),
                rews=(i * 1000 + np.arange(t)).astype(np.float32),
                terminated=terminated,
            )
        )
    return TrajectoryBatch.from_trajectories(trajs)
