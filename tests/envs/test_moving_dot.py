"""The moving-dot pixel environment."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from prefrl.envs.moving_dot import ENV_ID, MovingDotEnv


def test_registered_and_passes_env_checker() -> None:
    env = gym.make(ENV_ID, render_mode="rgb_array")
    check_env(env.unwrapped)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (40, 40, 3) and obs.dtype == np.uint8
    frame = env.render()
    assert isinstance(frame, np.ndarray) and np.array_equal(frame, obs)


def test_state_observations() -> None:
    env = gym.make(ENV_ID, obs_type="state")  # through gym.make: the checker tests render modes too
    check_env(env.unwrapped)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (4,) and obs.dtype == np.float32 and 0 <= obs.min() and obs.max() <= 1


def test_reward_is_progress_towards_target() -> None:
    env = MovingDotEnv(size=40, speed=2, max_steps=1000)
    env.reset(seed=3)
    greedy_return = 0.0
    for _ in range(200):
        dy, dx = env._target - env._pos
        a = (2 if dy > 0 else 1) if abs(dy) >= abs(dx) else (4 if dx > 0 else 3)
        _, r, *_ = env.step(a)
        assert -1.0 - 1e-6 <= r <= 1.0 + 1e-6
        greedy_return += r
    env.reset(seed=3)
    random_return = sum(env.step(env.action_space.sample())[1] for _ in range(200))
    assert greedy_return > 100 and greedy_return > random_return + 50


def test_truncates_after_max_steps_and_rejects_bad_args() -> None:
    env = MovingDotEnv(max_steps=5)
    env.reset(seed=0)
    flags = [env.step(0)[3] for _ in range(5)]
    assert flags == [False] * 4 + [True]
    with pytest.raises(ValueError, match="size"):
        MovingDotEnv(size=4)
    with pytest.raises(ValueError, match="obs_type"):
        MovingDotEnv(obs_type="ram")  # type: ignore[arg-type]
