"""The shipped gridworld: dynamics, true reward and its exact tables agree."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from prefrl.agents.rollout import collect_episodes
from prefrl.envs.gridworld import ENV_ID, GridWorldEnv
from prefrl.interpret.tabular import optimal_actions, value_iteration


def test_registered_and_follows_its_tables() -> None:
    env = gym.make(ENV_ID)
    base = env.unwrapped
    assert isinstance(base, GridWorldEnv)
    p, r = base.transition_table(), base.reward_table()
    batch = collect_episodes(env, n_episodes=20, seed=0)
    rows = batch.step_rows
    s, a, s2 = batch.obs[rows], batch.acts[rows], batch.obs[rows + 1]
    assert np.all(p[s, a, s2] == 1.0)  # deterministic: every observed step is the table's successor
    assert batch.rews is not None
    np.testing.assert_array_equal(batch.rews[rows], r[s, a, s2])
    ends = batch.starts + batch.lengths
    assert np.all(base.terminal_states()[batch.obs[ends]] == batch.terminated)


def test_walls_and_goal() -> None:
    env = GridWorldEnv(["S#G"])
    env.reset(seed=0)
    s, rew, term, _, _ = env.step(1)  # into the wall: stay
    assert (s, rew, term) == (0, 0.0, False)
    env2 = GridWorldEnv(["SG"])
    env2.reset()
    assert env2.step(1)[1:3] == (1.0, True)


def test_optimal_policy_heads_for_goal() -> None:
    env = GridWorldEnv()
    q, v = value_iteration(env.transition_table(), env.reward_table(), 0.9, env.terminal_states())
    assert v[env.start_state] == pytest.approx(0.9**7)  # 8 steps from S to G on the 5x5 grid
    best = optimal_actions(q)
    assert best[23, 1] and not best[23, 0]  # next to the goal: go right
    assert env.terminal_states()[12] and not best[7, 2]  # never step down into the lava at cell 12


def test_bad_layouts_are_rejected() -> None:
    with pytest.raises(ValueError, match="start"):
        GridWorldEnv(["..G"])
    with pytest.raises(ValueError, match="unknown"):
        GridWorldEnv(["S?G"])
    with pytest.raises(ValueError, match="action"):
        env = GridWorldEnv()
        env.reset()
        env.step(7)


def test_render_shows_agent() -> None:
    env = GridWorldEnv(render_mode="rgb_array", cell_pixels=8)
    env.reset()
    img = env.render()
    assert img.shape == (40, 40, 3) and img.dtype == np.uint8
    assert tuple(img[4, 4]) == (20, 20, 120)
