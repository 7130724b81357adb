"""The learned reward of a finished run in other training code: wrappers built from a run
directory or a reward file give the agent the saved reward, normalised as the run saved it, keep
the true reward in ``info``, refuse what cannot work with a message that says why, and run each
step's reward on one torch thread inside training code that uses more."""

from __future__ import annotations

import doctest
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv
from threadpoolctl import threadpool_info, threadpool_limits

from prefrl.agents import learned_reward, saved_reward
from prefrl.agents.learned_reward import (
    LearnedRewardVecEnv,
    LearnedRewardVectorWrapper,
    LearnedRewardWrapper,
    learned_reward_env,
)
from prefrl.agents.saved_reward import load_learned_reward
from prefrl.rewards import MLPReward, save_reward_net
from prefrl.rewards.shaped import ShapedReward
from prefrl.storage.checkpoint import CheckpointDir
from prefrl.threads import ENV_VARS
from tests.agents.reward_runs import STATS, expected, make_run
from tests.narrow import array


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
        rows.append((array(obs), act, array(nxt), rew))
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
    saved_before_shifts = {**STATS, "shift": "mean", "median": 0.0}  # a checkpoint's older statistics
    assert not old.update_stats and old.normalizer.state_dict() == saved_before_shifts
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
    obs = array(envs.reset(seed=0)[0])
    resets, checked = 0, 0
    restarting = np.zeros(2, bool)
    for _ in range(20):
        acts = envs.action_space.sample()
        step_obs, rews, term, trunc, info = envs.step(acts)
        nxt, true_rews = array(step_obs), array(info["true_reward"])
        assert rews.shape == (2,) and true_rews.shape == (2,)
        last = nxt.copy()
        if mode == "SameStep" and array(info.get("_final_obs", np.zeros(2, bool))).any():
            for j in np.flatnonzero(array(info["_final_obs"])):
                last[j] = array(info["final_obs"])[j]
        want = expected(run, obs, acts, last, STATS)
        for i in range(2):
            if restarting[i]:
                assert rews[i] == 0.0 and true_rews[i] == 0.0
                resets += 1
            else:
                assert rews[i] == pytest.approx(want[i], abs=1e-4)
                checked += 1
        restarting = (term | trunc) if mode == "NextStep" else np.zeros(2, bool)
        obs = nxt
    assert checked >= 30 and (resets > 0) == (mode == "NextStep")


def shaped_run(root: Path) -> Path:
    """A run whose reward has no NumPy fast path (a shaped reward): every step runs torch."""
    env = gym.make("Pendulum-v1")
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"env": {"id": "Pendulum-v1"}}')
    net = ShapedReward(MLPReward(env.observation_space, env.action_space, hidden=(16,)), hidden=(16,))
    save_reward_net(net, root / "reward.safetensors", normalizer={"normalize": False})
    return root


@pytest.fixture
def process_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process on torch's default of several threads, no ``OMP_NUM_THREADS`` set (as a user's
    training script starts); its threads and variables come back afterwards."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    with threadpool_limits(limits=None):  # restores the BLAS/OpenMP counts it found on exit
        torch.set_num_threads(3)
        yield
    torch.set_num_threads(1)


def threads_seen(reward: Any) -> list[int]:
    """The torch threads each forward pass of ``reward``'s network runs on, from now on."""
    seen: list[int] = []
    reward.net.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    return seen


def test_wrappers_infer_on_one_thread_and_leave_the_process_its_own(
    tmp_path: Path, process_threads: None
) -> None:
    """Each wrapper runs its per-step reward on one torch thread without the user limiting
    anything, and the training code around it keeps its threads; ``threads=None`` opts out."""
    run = shaped_run(tmp_path / "run")
    single = LearnedRewardWrapper.from_run(gym.make("Pendulum-v1"), run)
    vector = LearnedRewardVectorWrapper.from_run(gym.make_vec("Pendulum-v1", num_envs=2), run)
    sb3 = LearnedRewardVecEnv.from_run(DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 2), run)
    zoo = learned_reward.zoo_wrapper(gym.make("Pendulum-v1"), str(run), threads=None)
    assert isinstance(zoo, LearnedRewardWrapper)
    for env in (single, zoo):
        seen = threads_seen(env.reward)
        env.reset(seed=0)
        for _ in range(5):
            env.step(env.action_space.sample())
            assert torch.get_num_threads() == 3  # the agent's threads, between steps
        assert seen == [1] * 5
    seen = threads_seen(vector.reward)
    vector.reset(seed=0)
    vector.step(vector.action_space.sample())
    sb3_seen = threads_seen(sb3.reward)
    sb3.reset()
    sb3.step(np.stack([sb3.action_space.sample()] * 2))
    assert seen == [1] and sb3_seen == [1] and torch.get_num_threads() == 3
    own = LearnedRewardWrapper.from_run(gym.make("Pendulum-v1"), run, threads=None)
    seen = threads_seen(own.reward)
    own.reset(seed=0)
    own.step(own.action_space.sample())
    assert seen == [3]
    with pytest.raises(ValueError, match="threads must be a whole number of threads >= 1, got 0"):
        LearnedRewardWrapper.from_run(gym.make("Pendulum-v1"), run, threads=0)


def test_zoo_wrapper_sets_the_zoo_process_to_one_thread_unless_told_not_to(
    tmp_path: Path, process_threads: None
) -> None:
    """The Zoo trains on torch's default threads unless given --num-threads: its wrapper sets the
    process to ``threads`` (1), agent and BLAS included; ``threads: null`` keeps the Zoo's."""
    run = make_run(tmp_path / "run")
    learned_reward.zoo_wrapper(gym.make("Pendulum-v1"), str(run), threads=None)
    assert torch.get_num_threads() == 3
    learned_reward.zoo_wrapper(gym.make("Pendulum-v1"), str(run))
    assert torch.get_num_threads() == 1 and {p["num_threads"] for p in threadpool_info()} == {1}
    learned_reward.zoo_wrapper(gym.make("Pendulum-v1"), str(run), threads=2)
    assert torch.get_num_threads() == 2
