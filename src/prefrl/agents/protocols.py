"""What the preference loop needs of an agent and of an environment.

Structural types: stable-baselines3's algorithms (and SBX's, which subclass them) are
:class:`Agent` s, and every Gymnasium env is an :class:`Env`, without inheriting from either.
Checkpoints, policy files and replay-buffer relabelling need more: an SB3 algorithm itself
(:class:`~stable_baselines3.common.base_class.BaseAlgorithm`, off-policy for the buffer).
"""

from __future__ import annotations

from typing import Any, Protocol, SupportsFloat

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.common.vec_env import VecEnv

from prefrl.data.arrays import Obs


class Agent(Protocol):
    """An RL agent the loop trains on the learned reward (the SB3 ``BaseAlgorithm`` interface)."""

    num_timesteps: int
    """Environment steps the agent has taken (SB3 resets it on ``learn(reset_num_timesteps=True)``)."""

    def learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = ...,
        log_interval: int = ...,
        tb_log_name: str = ...,
        reset_num_timesteps: bool = ...,
        progress_bar: bool = ...,
    ) -> object:
        """Train for ``total_timesteps`` environment steps in the agent's own env."""
        ...

    def predict(
        self,
        observation: Obs,
        state: tuple[np.ndarray, ...] | None = ...,
        episode_start: np.ndarray | None = ...,
        deterministic: bool = ...,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """The action (and recurrent state) for ``observation``."""
        ...

    def get_env(self) -> VecEnv | None:
        """The vectorised env (with the learned-reward wrapper) the agent trains in."""
        ...


class Env(Protocol):
    """A single environment with the Gymnasium API (rollouts with the true reward)."""

    @property
    def observation_space(self) -> spaces.Space[object]: ...

    @property
    def action_space(self) -> spaces.Space[object]: ...

    def reset(
        self, *, seed: int | None = ..., options: dict[str, object] | None = ...
    ) -> tuple[object, dict[str, object]]:
        """Start an episode: its first observation and info."""
        ...

    def step(self, action: Any) -> tuple[object, SupportsFloat, bool, bool, dict[str, object]]:
        """``(obs, reward, terminated, truncated, info)`` after ``action``."""
        ...

    def render(self) -> object:
        """A frame of the current state (``render_mode="rgb_array"``), or ``None``."""
        ...
