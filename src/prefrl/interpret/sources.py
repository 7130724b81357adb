"""Find what to interpret: a run directory, or a bare reward model and trajectory file.

A run directory (written by the training loop) may hold ``config.json``,
``reward.safetensors``, ``preferences.npz``, ``metrics.csv``, ``policy.zip`` and
``report.json``; every piece is optional here and looked up only when needed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import prefrl.envs.gridworld  # noqa: F401  (registers prefrl/GridWorld-v0)
from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import make_env
from prefrl.data.arrays import obs_map
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.tabular import TabularEnv
from prefrl.rewards.io import load_reward_net
from prefrl.rewards.nets import RewardNet


def batch_from_fragments(frags: Fragments) -> TrajectoryBatch:
    """Each fragment as a short episode (``L`` transitions), e.g. from a run's preferences."""
    fa = frags.arrays()
    n, length = len(frags), frags.length

    def episodes(o: np.ndarray, o2: np.ndarray) -> np.ndarray:  # [N, L, ...] x2 -> [N*(L+1), ...]
        return np.concatenate([o, o2[:, -1:]], 1).reshape(n * (length + 1), *o.shape[2:])

    def pad(x: np.ndarray) -> np.ndarray:  # [N, L, ...] -> [N*(L+1), ...], zero final rows
        z = np.zeros((n, 1, *x.shape[2:]), x.dtype)
        return np.concatenate([x, z], 1).reshape(n * (length + 1), *x.shape[2:])

    obs = obs_map(lambda a: a, fa.obs)
    table = (
        {k: episodes(v, fa.next_obs[k]) for k, v in obs.items()}
        if isinstance(obs, dict)
        else episodes(obs, fa.next_obs)
    )
    ends = fa.dones[:, -1]
    return TrajectoryBatch(
        table,
        pad(fa.acts),
        None if fa.rews is None else pad(fa.rews.astype(np.float32)),
        np.full(n, length),
        ends,
        ~ends,
    )


def env_id_from_config(config: dict[str, Any]) -> str | None:
    """The Gymnasium id a run's ``config.json`` names (``env``, ``env_id`` or ``env.id``), if any."""
    for key in ("env_id", "env"):
        v = config.get(key)
        if isinstance(v, str):
            return v
        if isinstance(v, dict):
            for k in ("id", "env_id", "name"):
                if isinstance(v.get(k), str):
                    return v[k]
    return None


@dataclass
class Sources:
    """Resolved inputs. Anything may be missing; ``require_*`` raise a clear error."""

    run: Path | None = None
    reward: Path | None = None
    trajectories: Path | None = None
    env: str | None = None
    episodes: int = 20
    seed: int = 0

    def __post_init__(self) -> None:
        if self.run is not None and not self.run.is_dir():
            raise FileNotFoundError(f"{self.run}: no such run directory")
        if self.reward is None and self.run is not None and (self.run / "reward.safetensors").exists():
            self.reward = self.run / "reward.safetensors"
        if self.env is None and self.run is not None and (self.run / "config.json").exists():
            try:
                self.env = env_id_from_config(json.loads((self.run / "config.json").read_text()))
            except json.JSONDecodeError as e:
                raise ValueError(f"{self.run / 'config.json'}: not valid JSON ({e})") from e
        self._net: RewardNet | None = None
        self._batch: TrajectoryBatch | None = None

    def require_net(self) -> RewardNet:
        if self._net is None:
            if self.reward is None:
                raise ValueError(
                    "no reward model: pass --reward FILE.safetensors or --run DIR with reward.safetensors"
                )
            self._net = load_reward_net(self.reward).eval()
        return self._net

    def preferences(self) -> PreferenceDataset | None:
        p = None if self.run is None else self.run / "preferences.npz"
        return PreferenceDataset.load(p) if p is not None and p.exists() else None

    def make_env(self) -> gym.Env:
        if self.env is None:
            raise ValueError("no environment: pass --env ID (e.g. prefrl/GridWorld-v0)")
        try:  # as prefrl train makes it: Atari preprocessing, flat DMC observations, MuJoCo's log routed
            return make_env(self.env)
        except gym.error.Error as e:
            raise ValueError(f"cannot make environment {self.env!r}: {e}") from e

    def require_batch(self) -> TrajectoryBatch:
        """Trajectories from ``--trajectories``, else the run's preference fragments, else
        random rollouts of ``--env``."""
        if self._batch is None:
            if self.trajectories is not None:
                self._batch = TrajectoryBatch.load(self.trajectories)
            elif (ds := self.preferences()) is not None and ds.fragments is not None:
                self._batch = batch_from_fragments(ds.fragments)
            elif self.env is not None:
                self._batch = collect_episodes(self.make_env(), n_episodes=self.episodes, seed=self.seed)
            else:
                raise ValueError(
                    "no transitions: pass --trajectories FILE.npz, a --run DIR with preferences.npz, "
                    "or --env ID"
                )
        return self._batch

    def metrics_csv(self) -> Path | None:
        p = None if self.run is None else self.run / "metrics.csv"
        return p if p is not None and p.exists() else None

    def tabular_env(self) -> Any:
        """The unwrapped env if it has exact ``reward_table``/``transition_table``, else ``None``."""
        if self.env is None:
            return None
        base = self.make_env().unwrapped
        return base if isinstance(base, TabularEnv) else None
