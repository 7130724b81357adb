"""SB3 adapters: PEBBLE relabelling, buffer files, recorder, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3 import SAC

from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.sb3 import (
    AgentConfig,
    load_replay_buffer,
    make_agent,
    make_vec_env,
    relabel_replay_buffer,
    save_replay_buffer,
    write_buffer_rewards,
)
from tests.narrow import replay_buffer


def _sac(steps: int = 300) -> tuple[SAC, TrajectoryRecorder]:
    rec = TrajectoryRecorder(make_vec_env("Pendulum-v1", 2, seed=0))
    agent = make_agent(AgentConfig(algo="sac", net_arch=[16, 16], batch_size=32), rec, learning_starts=steps)
    agent.learn(steps)
    assert isinstance(agent, SAC)
    return agent, rec


def test_recorder_keeps_true_returns_and_actions() -> None:
    agent, rec = _sac(400)
    batch = rec.pop_episodes()
    assert batch is not None and len(batch) == 2 and set(batch.lengths) == {200}
    buffer_returns = replay_buffer(agent).rewards[:200].sum(0)  # [n_envs]: true rewards here
    np.testing.assert_allclose(np.sort(batch.episode_returns()), np.sort(buffer_returns), rtol=1e-4)
    assert np.abs(batch.acts).max() > 1.0  # unscaled env actions in [-2, 2]


def test_relabel_replaces_every_reward_with_env_scale_actions() -> None:
    agent, rec = _sac(300)
    before = replay_buffer(agent).rewards[:150].copy()
    seen = []

    def reward_fn(obs, acts, next_obs, dones):
        seen.append(acts)
        return acts[:, 0] * 10.0

    new = relabel_replay_buffer(agent, reward_fn, batch=64)
    write_buffer_rewards(agent, new)
    assert new.shape == (300,)
    assert not np.allclose(replay_buffer(agent).rewards[:150], before)
    acts = np.concatenate(seen)
    assert np.abs(acts).max() > 1.0  # mapped back from the buffer's [-1, 1] scale
    # the reward written for each buffer row is a function of the executed action
    batch = rec.pop_episodes(include_partial=True)
    assert batch is not None
    executed = np.sort(batch.acts[batch.step_rows, 0])
    np.testing.assert_allclose(np.sort(acts[:, 0]), executed, atol=1e-5)
    np.testing.assert_allclose(replay_buffer(agent).rewards[:150].ravel(), new, rtol=1e-6)


def test_replay_buffer_npz_roundtrip(tmp_path) -> None:
    agent, _ = _sac(200)
    path = save_replay_buffer(replay_buffer(agent), tmp_path / "buf.npz")
    other, _ = _sac(50)
    load_replay_buffer(replay_buffer(other), path)
    assert replay_buffer(other).pos == replay_buffer(agent).pos
    np.testing.assert_array_equal(
        replay_buffer(other).observations[:100], replay_buffer(agent).observations[:100]
    )
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"bad\.npz"):
        load_replay_buffer(replay_buffer(other), tmp_path / "bad.npz")


def test_sac_on_discrete_actions_is_a_clear_error() -> None:
    venv = make_vec_env("CartPole-v1")
    with pytest.raises(ValueError, match=r"continuous.*Discrete"):
        make_agent(AgentConfig(algo="sac"), venv)


def test_unknown_env_id_suggests_close_match() -> None:
    with pytest.raises(ValueError, match=r"Pendulum-v1"):
        make_vec_env("Pendulum-v9")
