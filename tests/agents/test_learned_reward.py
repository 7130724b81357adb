"""Learned-reward wrappers: the agent sees the (normalised) learned reward, logs keep the true one."""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from prefrl.agents.learned_reward import LearnedRewardVecEnv, LearnedRewardWrapper
from prefrl.agents.reward_signal import LearnedReward
from prefrl.rewards import MLPReward
from prefrl.rewards.normalization import RewardNormalizer
from tests.narrow import array


class CountingReward(LearnedReward):
    """A real LearnedReward that also counts its batched calls."""

    calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return super().__call__(*args, **kwargs)


def _net(env: gym.Env | DummyVecEnv) -> MLPReward:
    return MLPReward(env.observation_space, env.action_space, ensemble_size=2)


def test_vec_wrapper_one_batched_call_per_step_and_true_reward_in_info() -> None:
    n = 3
    plain = DummyVecEnv([lambda: gym.make("Pendulum-v1")] * n)
    plain.seed(0)
    wrapped_inner = DummyVecEnv([lambda: gym.make("Pendulum-v1")] * n)
    wrapped_inner.seed(0)
    reward = CountingReward(_net(wrapped_inner), normalize=False)
    venv = LearnedRewardVecEnv(wrapped_inner, reward)
    plain.reset()
    obs_w = venv.reset()
    rng = np.random.default_rng(0)
    for t in range(210):  # crosses the 200-step time limit: terminal observations matter
        acts = rng.uniform(-2, 2, size=(n, 1)).astype(np.float32)
        _, true_rews, _, _ = plain.step(acts)
        prev = obs_w
        obs_w, rews, dones, infos = venv.step(acts)
        assert reward.calls == t + 1
        np.testing.assert_allclose([i["true_reward"] for i in infos], true_rews, rtol=1e-6)
        nxt = np.stack([i["terminal_observation"] if d else o for i, d, o in zip(infos, dones, obs_w)])
        expect, _ = reward.net.predict(array(prev), acts, nxt)
        np.testing.assert_allclose(rews, expect, rtol=1e-5, atol=1e-6)
        assert not np.allclose(rews, true_rews)


def test_normalised_rewards_have_unit_scale() -> None:
    inner = DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 2)
    venv = LearnedRewardVecEnv(inner, LearnedReward(_net(inner)))
    venv.reset()
    out = [venv.step(np.random.default_rng(t).uniform(-2, 2, (2, 1)))[1] for t in range(400)]
    rews = np.concatenate(out[100:])
    assert abs(rews.mean()) < 0.5 and 0.5 < rews.std() < 1.5


def test_gym_wrapper_matches_net_and_keeps_true_reward() -> None:
    env = LearnedRewardWrapper(
        gym.make("Pendulum-v1"), LearnedReward(_net(gym.make("Pendulum-v1")), normalize=False)
    )
    ref = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=1)
    ref.reset(seed=1)
    for _ in range(5):
        act = env.action_space.sample()
        nxt, rew, _, _, info = env.step(act)
        _, true_rew, _, _, _ = ref.step(act)
        expect, _ = env.reward.net.predict(array(obs)[None], act[None], array(nxt)[None])
        assert rew == pytest.approx(float(expect[0]), rel=1e-5)
        assert info["true_reward"] == pytest.approx(true_rew)
        obs = nxt


def test_normalizer_state_roundtrip() -> None:
    a, b = RewardNormalizer(), RewardNormalizer()
    x = np.random.default_rng(0).normal(3.0, 2.0, 1000)
    a.update(x[:500])
    a.update(x[500:])
    assert a.mean == pytest.approx(x.mean()) and a.var == pytest.approx(x.var())
    b.load_state_dict(a.state_dict())
    np.testing.assert_allclose(a(x), b(x))


def test_a_median_shift_makes_the_typical_reward_zero_however_skewed_the_rest() -> None:
    """A skewed reward (most steps -1, a few +20, as a coin among plain steps): the mean shift
    pays the typical step below 0, the median shift pays it 0, at the same scale; the median
    is the one of the last reset, kept through later batches and through a checkpoint."""
    x = np.concatenate([np.full(95, -1.0), np.full(5, 20.0)])
    mean, median = RewardNormalizer(), RewardNormalizer(shift="median")
    mean.reset_to(x)
    median.reset_to(x)
    assert mean(np.array([-1.0]))[0] < -0.2 and median(np.array([-1.0]))[0] == pytest.approx(0.0)
    assert median.std == pytest.approx(mean.std) and median(np.array([20.0]))[0] > 4.0
    median.update(np.full(100, 5.0))  # folded into the scale; the shift stays the reset's median
    assert median.median == -1.0 and median.mean > 1.0
    again = RewardNormalizer()
    again.load_state_dict(median.state_dict())
    np.testing.assert_allclose(again(x), median(x))
    old = {k: v for k, v in median.state_dict().items() if k not in ("shift", "median")}
    again.load_state_dict(old)  # saved before the median shift existed: the mean, as then
    assert again.shift == "mean"
    fresh = RewardNormalizer(shift="median")
    fresh.update(np.array([3.0, 1.0, 2.0]))  # never reset: the first batch's median
    assert fresh.median == 2.0
    with pytest.raises(ValueError, match="unknown reward shift 'mode'"):
        RewardNormalizer(shift="mode")
    with pytest.raises(ValueError, match="unknown reward shift 'mode' in a saved normaliser"):
        again.load_state_dict({**old, "shift": "mode"})


def test_fast_path_gives_the_networks_rewards_and_follows_refresh() -> None:
    """The per-step NumPy path equals the network (mean minus the absorbing reward), and after
    a weight change it is stale until refresh() -- the loop calls it after every update."""
    import torch

    env = gym.make("Pendulum-v1")
    net = MLPReward(env.observation_space, env.action_space, ensemble_size=3, output="tanh")
    rng = np.random.default_rng(0)
    obs, nxt = rng.normal(size=(2, 8, 3)).astype(np.float32)
    acts = rng.normal(size=(8, 1)).astype(np.float32)
    dones = np.array([0, 0, 1, 0, 0, 0, 0, 1], dtype=bool)
    slow, fast = LearnedReward(net), LearnedReward(net)
    fast.configure(fast=True)
    np.testing.assert_allclose(fast.raw(obs, acts, nxt, dones), slow.raw(obs, acts, nxt, dones), atol=1e-5)
    assert fast._fast_fn  # the NumPy path, not the fallback
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.3)
    assert not np.allclose(fast.raw(obs, acts, nxt, dones), slow.raw(obs, acts, nxt, dones), atol=1e-4)
    fast.refresh()
    np.testing.assert_allclose(fast.raw(obs, acts, nxt, dones), slow.raw(obs, acts, nxt, dones), atol=1e-5)
    fast.set_bonus(0.5)  # the bonus needs the ensemble's spread: the network itself
    np.testing.assert_allclose(
        fast.raw(obs, acts, nxt, dones),
        slow.raw(obs, acts, nxt, dones) + 0.5 * net.predict(obs, acts, nxt, dones)[1],
        atol=1e-5,
    )


def test_learned_reward_is_driven_by_its_methods() -> None:
    """The loop sets a LearnedReward through methods, never by writing its attributes."""
    env = gym.make("Pendulum-v1")
    reward = LearnedReward(_net(env))
    assert reward.configure(normalize=False, fast=True, update_stats=False) is reward
    assert (reward.normalize, reward.fast, reward.update_stats) == (False, True, False)
    reward.configure(normalize=True)  # None keeps the others
    assert (reward.normalize, reward.fast, reward.update_stats) == (True, True, False)
    x = np.zeros((4, 3), np.float32)
    reward.use_intrinsic(lambda nxt: np.full(len(nxt), 7.0))
    assert np.all(reward(x, np.zeros((4, 1), np.float32), x)[0] == 7.0)
    reward.use_intrinsic(None)
    assert reward.intrinsic is None
    reward.set_bonus(0.25)
    assert reward.bonus == 0.25
    reward.set_bonus(-1.0)  # a penalty (the loop's uncertainty_penalty)
    assert reward.bonus == -1.0
    with pytest.raises(ValueError, match="finite"):
        reward.set_bonus(float("nan"))
    reward.scale_only()
    assert not reward.normalizer.center


def test_hidden_terminations_reach_the_agent_as_truncations_and_the_recorder_as_they_were() -> None:
    """hide_terminations: SB3 then bootstraps from the last frame's value (a truncation), while
    the clips keep the true episode end for the reward's absorbing states."""
    from prefrl.agents.recorder import TrajectoryRecorder
    from prefrl.agents.sb3 import make_vec_env

    for hide in (False, True):
        rec = TrajectoryRecorder(make_vec_env("CartPole-v1", 2, seed=0))
        net = MLPReward(rec.observation_space, rec.action_space, ensemble_size=2)
        venv = LearnedRewardVecEnv(rec, LearnedReward(net), hide_terminations=hide)
        venv.reset()
        ended: list[dict] = []
        while not ended:  # random actions fell the pole within a few dozen steps
            _, _, dones, infos = venv.step(np.array([venv.action_space.sample() for _ in range(2)]))
            ended = [info for d, info in zip(dones, infos) if d]
        assert all(info.get("TimeLimit.truncated", False) == hide for info in ended)
        batch = rec.pop_episodes()
        assert batch is not None and batch.terminated.any()  # the recorder saw the fall either way


def test_hidden_terminations_as_next_episode_run_the_agents_stream_on_and_keep_time_limits() -> None:
    """hidden_end="next_episode": at a termination the agent sees no done, and the observation it
    gets is the next episode's first frame (what it bootstraps from); the recorder still saw the
    fall, and a time limit still reaches the agent as a truncated done."""
    from prefrl.agents.recorder import TrajectoryRecorder
    from prefrl.agents.sb3 import make_vec_env
    from prefrl.training.config import LoopConfig

    with pytest.raises(ValueError, match="it needs hide_terminations"):
        LoopConfig(hidden_end="next_episode")  # nothing hidden: nothing to tell
    assert LoopConfig(hide_terminations=True, hidden_end="next_episode").hidden_end == "next_episode"
    with pytest.raises(ValueError, match="hidden_end"):
        LearnedRewardVecEnv(
            make_vec_env("CartPole-v1", 1, seed=0),
            LearnedReward(MLPReward(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))),
            True,
            cast(Any, "restart"),
        )
    rec = TrajectoryRecorder(make_vec_env("CartPole-v1", 2, seed=0))
    net = MLPReward(rec.observation_space, rec.action_space, ensemble_size=2)
    venv = LearnedRewardVecEnv(rec, LearnedReward(net), hide_terminations=True, hidden_end="next_episode")
    obs = np.asarray(venv.reset())
    while True:  # random actions fell a pole within a few dozen steps
        prev = obs
        step = venv.step(np.array([venv.action_space.sample() for _ in range(2)]))
        obs, dones, infos = np.asarray(step[0]), step[2], step[3]
        ended = [i for i, info in enumerate(infos) if "terminal_observation" in info]
        if ended:
            break
    assert not dones[ended].any()  # no done reached the agent
    i = ended[0]
    assert np.abs(obs[i]).max() <= 0.05  # a fresh episode's first frame (CartPole starts within ±0.05)
    assert np.abs(infos[i]["terminal_observation"] - prev[i]).max() > 0  # not the frame it came from
    batch = rec.pop_episodes()
    assert batch is not None and batch.terminated.any()  # the recorder saw the fall
    limited = LearnedRewardVecEnv(
        make_vec_env("CartPole-v1", 1, {"max_episode_steps": 5}, seed=0),
        LearnedReward(net),
        hide_terminations=True,
        hidden_end="next_episode",
    )
    limited.reset()
    for _ in range(5):
        _, _, dones, infos = limited.step(np.array([0]))
    assert dones[0] and infos[0]["TimeLimit.truncated"]  # a time limit still ends the agent's episode
