"""Hybrid replay (QPA): a share of every batch from the newest transitions, in SB3's buffers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from prefrl.agents.replay import HybridReplayBuffer
from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env
from tests.narrow import replay_buffer

OBS = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
ACT = gym.spaces.Box(-1, 1, (1,), np.float32)


def _filled(n: int, size: int, recent_frac: float = 0.5, recent_size: int = 10_000) -> HybridReplayBuffer:
    buf = HybridReplayBuffer(size, OBS, ACT, device="cpu", recent_frac=recent_frac, recent_size=recent_size)
    for t in range(n):
        o = np.array([[t]], dtype=np.float32)
        buf.add(o, o + 1, np.zeros((1, 1), np.float32), np.zeros(1, np.float32), np.zeros(1), [{}])
    return buf


@pytest.mark.parametrize(("n", "size"), [(1000, 5000), (7000, 5000)])  # not yet full / wrapped around
def test_half_of_each_batch_comes_from_the_newest_rows(n: int, size: int) -> None:
    np.random.seed(0)  # noqa: NPY002  (the buffers draw from the global generator, as SB3's)
    buf = _filled(n, size, recent_frac=0.5, recent_size=100)
    got = buf.sample(2000).observations.numpy().ravel()  # the step each sampled row was written at
    assert got.max() <= n - 1 and got.min() >= max(0, n - size)  # only rows the buffer holds
    recent = got >= n - 100
    assert 0.5 <= recent.mean() <= 0.55  # half by design, plus the uniform half's few recent rows
    assert len(np.unique(got[~recent])) > 500  # the rest spreads over the whole buffer


def test_zero_share_is_uniform_and_bad_settings_are_refused() -> None:
    np.random.seed(1)  # noqa: NPY002
    got = _filled(1000, 5000, recent_frac=0.0, recent_size=100).sample(4000).observations.numpy()
    assert 0.05 <= (got >= 900).mean() <= 0.15
    with pytest.raises(ValueError, match="recent_frac"):
        _filled(1, 10, recent_frac=1.5)
    with pytest.raises(ValueError, match="hybrid_replay"):
        AgentConfig(hybrid_replay=2.0)


def test_agent_config_switches_the_buffer() -> None:
    venv = make_vec_env("Pendulum-v1", 1, seed=0)
    agent = make_agent(
        AgentConfig(algo="sac", net_arch=[8], hybrid_replay=0.25, hybrid_replay_window=500), venv
    )
    buf = replay_buffer(agent)
    assert isinstance(buf, HybridReplayBuffer)
    assert buf.recent_frac == 0.25 and buf.recent_size == 500
    agent.learn(300)  # trains with it
    plain = make_agent(AgentConfig(algo="sac", net_arch=[8]), venv)
    assert type(replay_buffer(plain)).__name__ == "ReplayBuffer"
