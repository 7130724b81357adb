"""Helpers of the learned-reward tests: a run directory as ``prefrl train`` leaves it, the reward an
agent must see computed without the wrappers, and a wrapper that records what the agent saw
(RL Zoo's hyperparameter files name it by its dotted path, ``reward_runs.RewardTap``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
import torch

from prefrl.rewards import MLPReward
from prefrl.rewards.io import load_reward_net, save_reward_net

STATS = {"mean": 0.3, "var": 2.25, "count": 100.0, "center": True}


def make_run(root: Path, env_id: str = "Pendulum-v1", normalizer: dict[str, Any] | None = None) -> Path:
    """A run directory: config.json and a reward file (a small random MLP reward)."""
    env = gym.make(env_id)
    torch.manual_seed(0)
    net = MLPReward(env.observation_space, env.action_space, hidden=(16,), use_next_obs=True)
    with torch.no_grad():
        net.absorbing_reward.fill_(0.4)
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"env": {"id": env_id}, "loop": {"normalize_reward": True}}))
    save_reward_net(net, root / "reward.safetensors", normalizer=normalizer)
    return root


def expected(run: Path, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, stats: dict) -> np.ndarray:
    """The reward ``[B]`` the agent must see for transitions ``[B, ...]``, from the saved network alone."""
    net = load_reward_net(run / "reward.safetensors")
    mean, _ = net.predict(obs, acts, next_obs, np.zeros(len(acts), np.float32))
    raw = mean - net.absorbing_value()
    return ((raw - stats["mean"]) / np.sqrt(stats["var"] + 1e-8)).astype(np.float32)


class RewardTap(gym.Wrapper):
    """Records every transition and the reward handed up, into ``out`` (.npz) at each episode's end."""

    def __init__(self, env: gym.Env, out: str) -> None:
        super().__init__(env)
        self.out, self._obs = out, None
        self.rows: list[tuple[Any, ...]] = []

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._obs, info = self.env.reset(**kwargs)
        return self._obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, rew, term, trunc, info = self.env.step(action)
        self.rows.append((self._obs, np.asarray(action), obs, rew, info["true_reward"]))
        self._obs = obs
        if term or trunc:
            obs_, acts, next_obs, rews, true_rews = (np.stack([r[i] for r in self.rows]) for i in range(5))
            np.savez(self.out, obs=obs_, acts=acts, next_obs=next_obs, rews=rews, true_rews=true_rews)
        return obs, rew, term, trunc, info
