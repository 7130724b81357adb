"""The learned reward of a finished run in other training code: wrappers built from a run
directory or a reward file give the agent the saved reward, normalised as the run saved it, keep
the true reward in ``info``, and refuse what cannot work with a message that says why."""

from __future__ import annotations

import doctest
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from reward_runs import STATS, expected, make_run
from stable_baselines3.common.vec_env import DummyVecEnv

from prefrl.agents import learned_reward, saved_reward
from prefrl.agents.learned_reward import (
    LearnedRewardVecEnv,
    LearnedRewardVectorWrapper,
    LearnedRewardWrapper,
    learned_reward_env,
)
from prefrl.agents.saved_reward import load_learned_reward
from prefrl.storage.checkpoint import CheckpointDir


def test_module_examples_run() -> None:
    for module in (saved_reward, learned_reward):
        assert doctest.testmod(module).failed == 0


def test_wrapper_from_run_gives_the_saved_reward_normalised_and_keeps_the_true_one(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", normalizer={"normalize": True, **STATS})
    env = LearnedRewardWrapper.from_run(gym.make("Pendulum-v1"), run)
    twin = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=3)
    twin.reset(seed=3)
    rows = []
    for _ in range(30):
        act = env.action_space.sample()
        nxt, rew, _, _, info = env.step(act)
        _, true_rew, _, _, _ = twin.step(act)
        assert info["true_reward"] == pytest.approx(true_rew)
        rows.append((obs, act, nxt, rew))
        obs = nxt
    o, a, n, r = (np.stack([row[i] for row in rows]) for i in range(4))
    np.testing.assert_allclose(r, expected(run, o, a, n, STATS), rtol=1e-4, atol=1e-4)
    assert env.reward.normalizer.count == STATS["count"]  # frozen: the run's statistics stay


def test_a_reward_file_alone_works_and_the_env_spaces_are_checked(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", normalizer={"normalize": False})
    env = learned_reward_env(gym.make("Pendulum-v1"), run / "reward.safetensors")
    assert isinstance(env, LearnedRewardWrapper) and not env.reward.normalize
    with pytest.raises(ValueError, match=r"observation space Box.*\(3,\).*this environment has Box.*\(4,\)"):
        learned_reward_env(gym.make("CartPole-v1"), run)
    venv = learned_reward_env(DummyVecEnv([lambda: gym.make("Pendulum-v1")]), run)
    assert isinstance(venv, LearnedRewardVecEnv)


def test_missing_or_wrong_sources_fail_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "early").mkdir()
    (tmp_path / "early" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"run directory without a reward\.safetensors"):
        load_learned_reward(tmp_path / "early")
    with pytest.raises(FileNotFoundError, match="no such run directory or reward file"):
        load_learned_reward(tmp_path / "nowhere")
    (tmp_path / "junk.safetensors").write_text("not a reward")
    with pytest.raises(ValueError, match="not a readable reward model"):
        load_learned_reward(tmp_path / "junk.safetensors")
    with pytest.raises(ValueError, match="choose run, running or off"):
        load_learned_reward(make_run(tmp_path / "run"), normalize="batch")  # type: ignore[arg-type]


def test_older_runs_take_the_last_checkpoint_statistics_else_running_ones(tmp_path: Path) -> None:
    """A reward file without saved statistics: the run's last checkpoint has them; with no
    checkpoint either, a running scale (never a shift, so ending an episode stays worth 0)."""
    run = make_run(tmp_path / "run")
    fresh = load_learned_reward(run)
    assert fresh.normalize and fresh.update_stats and not fresh.normalizer.center
    ckpt = CheckpointDir(run)
    ckpt.commit(ckpt.begin(3), {"normalizer": STATS})
    old = load_learned_reward(run)
    assert not old.update_stats and old.normalizer.state_dict() == STATS
    assert not load_learned_reward(run, normalize="off").normalize


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_vector_wrapper_rewards_every_transition_and_nothing_on_reset_steps(
    tmp_path: Path, mode: str
) -> None:
    """Gymnasium vector envs (CleanRL's): across episode ends the reward is the learned reward of
    each real transition, with the real last observation, and 0 on NextStep's reset-only step."""
    run = make_run(tmp_path / "run", normalizer={"normalize": True, **STATS})
    venv = gym.make_vec("Pendulum-v1", num_envs=2, vector_kwargs={"autoreset_mode": mode},
                        max_episode_steps=7)  # fmt: skip
    envs = LearnedRewardVectorWrapper.from_run(venv, run)
    obs, _ = envs.reset(seed=0)
    resets, checked = 0, 0
    restarting = np.zeros(2, bool)
    for _ in range(20):
        acts = envs.action_space.sample()
        nxt, rews, term, trunc, info = envs.step(acts)
        assert rews.shape == (2,) and info["true_reward"].shape == (2,)
        last = nxt.copy()
        if mode == "SameStep" and info.get("_final_obs", np.zeros(2, bool)).any():
            for i in np.flatnonzero(info["_final_obs"]):
                last[i] = info["final_obs"][i]
        want = expected(run, obs, acts, last, STATS)
        for i in range(2):
            if restarting[i]:
                assert rews[i] == 0.0 and info["true_reward"][i] == 0.0
                resets += 1
            else:
                assert rews[i] == pytest.approx(want[i], abs=1e-4)
                checked += 1
        restarting = (term | trunc) if mode == "NextStep" else np.zeros(2, bool)
        obs = nxt
    assert checked >= 30 and (resets > 0) == (mode == "NextStep")
