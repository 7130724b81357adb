"""PreferenceEnv: a Gymnasium wrapper that learns a reward from preferences in the background.

Real environments, real processes. Most tests use the moving dot with state observations
(a small MLP reward) so that background training is quick.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import prefrl.envs.moving_dot  # noqa: F401  (registers the env)
from prefrl.data import PreferenceDataset
from prefrl.preference import RewardTrainerConfig
from prefrl.preference_env import (
    BackgroundProcessError,
    PreferenceEnv,
    PreferenceEnvConfig,
    PreferenceVectorEnv,
)
from prefrl.preference_env.env_process import default_net
from prefrl.rewards import MLPReward, load_reward_net, save_reward_net
from prefrl.rewards.cnn import CNNReward, cnn_architecture
from prefrl.rewards.nets import RewardNet
from tests.narrow import array, number, present

ENV = "prefrl/MovingDot-v0"
ONE_EPOCH = RewardTrainerConfig(epochs=1.0)  # short training rounds: weights published often
FAST: dict[str, Any] = {"fragment_length": 5, "min_labels": 5, "train_pause_s": 0.01, "trainer": ONE_EPOCH}


def state_env(**kw: Any) -> gym.Env:
    return gym.make(ENV, obs_type="state", size=20, **kw)


def counters(env: PreferenceEnv | PreferenceVectorEnv) -> dict[str, int]:
    """The wrapper's counters (``metrics()`` without its text entries)."""
    return {k: v for k, v in env.metrics().items() if isinstance(v, int)}


def step_until(env: PreferenceEnv, cond: Callable[[], bool], timeout: float = 60.0) -> dict:
    """Random actions until ``cond()`` holds; returns the last info."""
    env.reset(seed=0)
    end = time.monotonic() + timeout
    info: dict = {}
    while time.monotonic() < end:
        for _ in range(50):
            _, _, term, trunc, info = env.step(env.action_space.sample())
            if term or trunc:
                env.reset()
        if cond():
            return info
    raise AssertionError(f"condition not reached within {timeout} s; metrics {env.metrics()}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids: list[int], timeout: float = 15.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow  # ~10-20 s: pixel env, process start-up and the checker's many resets
def test_passes_gymnasium_env_checker() -> None:
    env = PreferenceEnv(gym.make(ENV), **FAST)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_learned_reward_replaces_true_reward_after_threshold_and_weights_update() -> None:
    env = PreferenceEnv(state_env(), learned_after=3, **FAST)
    env.reset(seed=0)
    _, r, *_, info = env.step(1)
    assert env.reward_source == "true" and not env.learned_reward_active
    assert r == info["true_reward"] and info["reward_source"] == "true"
    before = {k: v.clone() for k, v in present(env.reward_net).state_dict().items()}
    step_until(env, lambda: env.learned_reward_active)
    _, r, *_, info = env.step(1)
    assert info["reward_source"] == "learned" and r != info["true_reward"]
    assert counters(env)["reward_train_steps"] >= 3
    # reward weights keep changing while we step
    updates = counters(env)["weight_updates"]
    step_until(env, lambda: counters(env)["weight_updates"] > updates)
    after = present(env.reward_net).state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert any(k.startswith("mlp") for k in changed)
    # the switches
    env.use_true_reward()
    _, r, *_, info = env.step(0)
    assert r == info["true_reward"] and env.reward_source == "true"
    env.use_learned_reward()
    assert env.reward_source == "learned"
    env.close()


@pytest.mark.slow
def test_learned_reward_tracks_true_reward() -> None:
    """After some training the learned reward ranks moves like the true one does."""
    env = PreferenceEnv(
        state_env(), learned_after=150, fragment_length=10, min_labels=20, total_labels=300, trainer=ONE_EPOCH
    )
    step_until(env, lambda: env.learned_reward_active, timeout=300)
    true, learned = [], []
    for _ in range(400):
        _, r, term, trunc, info = env.step(env.action_space.sample())
        true.append(number(info["true_reward"]))
        learned.append(float(r))
        if term or trunc:
            env.reset()
    env.close()
    assert np.corrcoef(true, learned)[0, 1] > 0.5


def test_collect_only_saves_preferences_that_load_back(tmp_path: Path) -> None:
    env = PreferenceEnv(state_env(), mode="collect", queue_size=1000, **FAST)
    step_until(env, lambda: counters(env)["preferences"] >= 30)
    m = counters(env)
    assert m["reward_train_steps"] == 0 and env.reward_source == "true"
    paths = env.save_preferences(tmp_path / "prefs.npz", val_fraction=0.2)
    env.close()
    assert [p.name for p in paths] == ["prefs.npz", "prefs.train.npz", "prefs.val.npz"]
    ds, train, val = (PreferenceDataset.load(p) for p in paths)
    assert len(ds) >= 30 and len(train) + len(val) == len(ds) and len(val) > 0
    assert ds.fragments is not None and ds.fragments.length == 5
    assert ds.fragments.table_obs.shape[1:] == (4,)
    # labels agree with the true returns the teacher saw (oracle)
    ret = ds.fragments.returns()
    diff = ret[ds.pairs[:, 0]] - ret[ds.pairs[:, 1]]
    assert np.all((diff > 0) == (ds.labels == 1.0))

    # ... and train a reward model only from that file
    ckpt = tmp_path / "ckpt"
    env = PreferenceEnv(
        state_env(), mode="train", preferences_path=str(paths[0]), learned_after=5,
        checkpoint_dir=str(ckpt), checkpoint_every=2, **FAST,
    )  # fmt: skip
    step_until(env, lambda: env.learned_reward_active and counters(env)["reward_checkpoints"] >= 1)
    assert counters(env)["segments_recorded"] == 0  # nothing is labelled in train mode
    env.close()
    net = load_reward_net(ckpt / "reward_latest.safetensors")
    assert isinstance(net, MLPReward)


def test_pretrained_reward_only(tmp_path: Path) -> None:
    base = state_env()
    net = MLPReward(base.observation_space, base.action_space)
    path = save_reward_net(net, tmp_path / "r.safetensors")
    env = PreferenceEnv(base, mode="pretrained", reward_path=str(path), normalize=False)
    obs, _ = env.reset(seed=0)
    obs2, r, *_, info = env.step(2)
    expected, _ = net.predict(array(obs)[None], np.array([2]), array(obs2)[None])
    assert env.reward_source == "learned" and info["reward_source"] == "learned"
    assert r == pytest.approx(float(expected[0]), abs=1e-5)
    assert env.background_pids() == {}  # no background processes
    env.close()


def test_segments_dropped_when_labeller_falls_behind_preferences_never() -> None:
    env = PreferenceEnv(state_env(), mode="collect", fragment_length=1, queue_size=2, pool_size=4)
    env.reset(seed=0)
    for _ in range(3000):
        *_, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    m = counters(env)
    assert m["segments_dropped"] > 0
    assert m["segments_recorded"] == m["segments_sent"] + m["segments_dropped"]
    # every answer the teacher gave reaches the preference set
    end = time.monotonic() + 30
    while time.monotonic() < end:
        m = counters(env)
        if m["segments_labelled"] == m["segments_sent"] and m["preferences"] == m["pairs_labelled"]:
            break
        time.sleep(0.2)
    assert m["preferences"] == m["pairs_labelled"] > 0
    env.close()


def test_background_error_surfaces_with_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "not_prefs.npz"
    bad.write_bytes(b"this is not an npz file")
    env = PreferenceEnv(state_env(), mode="train", preferences_path=str(bad), **FAST)
    with pytest.raises(BackgroundProcessError, match="trainer") as err:
        step_until(env, lambda: False, timeout=60)
    assert "Traceback" in str(err.value) and "not_prefs.npz" in str(err.value)
    env.close()


def test_config_errors_are_clear() -> None:
    with pytest.raises(ValueError, match="unknown teacher 'oracel'"):
        PreferenceEnvConfig(teacher="oracel")
    with pytest.raises(ValueError, match="preferences_path"):
        PreferenceEnvConfig(mode="train")
    with pytest.raises(TypeError, match="fragment_lenght"):
        PreferenceEnv(state_env(), fragment_lenght=5)
    with pytest.raises(ValueError, match="rgb_array"):
        PreferenceEnv(state_env(), record="frames")
    with pytest.raises(TypeError, match="neither a Teacher"):
        PreferenceEnvConfig(teacher=object())
    with pytest.raises(ValueError, match="background process"):
        PreferenceEnvConfig(teacher="terminal")
    with pytest.raises(ValueError, match="store:"):
        PreferenceEnvConfig(teacher="store:")


def test_defaults_match_the_training_loop() -> None:
    c = PreferenceEnvConfig()
    assert c.fragment_length == 50 and c.total_labels is None and c.max_labels_kept == 3000
    assert c.trainer == RewardTrainerConfig()  # rounds of the trainer's own epochs


def test_old_option_names_still_work_with_a_warning() -> None:
    old: dict[str, Any] = {
        "segment_length": 7, "max_preferences": 40, "max_preferences_kept": 30, "min_preferences": 3,
        "pairs_per_segment": 0.5,
    }  # fmt: skip
    with pytest.warns(DeprecationWarning) as warned:
        env = PreferenceEnv(state_env(), **old)
    renamed = [str(w.message) for w in warned if "is now" in str(w.message)]
    assert len(renamed) == 5 and "'segment_length' is now 'fragment_length'" in renamed[0]
    c = env.config
    assert (c.fragment_length, c.total_labels, c.max_labels_kept, c.min_labels, c.pairs_per_fragment) == (
        7, 40, 30, 3, 0.5,
    )  # fmt: skip
    env.close()
    venv = gym.make_vec(ENV, num_envs=2, vectorization_mode="sync", obs_type="state", size=20)
    with pytest.warns(DeprecationWarning, match="segment_length"):
        venv_env = PreferenceVectorEnv(venv, segment_length=9)
    assert venv_env.config.fragment_length == 9
    venv_env.close()
    with pytest.raises(TypeError, match="not both"):
        PreferenceEnv(state_env(), segment_length=7, fragment_length=7)


def test_close_and_garbage_collection_stop_processes() -> None:
    base = state_env()
    net = MLPReward(base.observation_space, base.action_space)  # reads (s, a): the rewarder pre-scores it
    env = PreferenceEnv(base, reward_process=True, reward_net=net, **FAST)
    assert env.background_pids() == {}  # started by the first reset
    env.reset(seed=0)
    roles = env.background_pids()
    assert sorted(roles) == ["labeller", "rewarder", "trainer"]
    pids = list(roles.values())
    assert all(alive(p) for p in pids) and os.getpid() not in pids
    env.close()
    assert env.background_pids() == {}
    assert wait_gone(pids, 10)
    env = PreferenceEnv(state_env(), **FAST)
    env.reset(seed=0)
    pids = list(env.background_pids().values())
    assert len(pids) == 2
    del env
    gc.collect()
    assert wait_gone(pids, 10)


@pytest.mark.slow  # ~20-40 s: a fresh interpreter imports torch and starts the workers
def test_killing_the_main_process_leaves_no_orphans(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time, gymnasium as gym
        import prefrl.envs.moving_dot
        from prefrl.preference_env.wrappers import PreferenceEnv
        env = PreferenceEnv(gym.make("prefrl/MovingDot-v0", obs_type="state"), fragment_length=5,
                            reward_process=True)
        env.reset(seed=0)
        for _ in range(500):
            env.step(env.action_space.sample())
        print(*env.background_pids().values(), flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        line = present(proc.stdout).readline()
        pids = [int(x) for x in line.split()]
        assert len(pids) == 3 and all(alive(p) for p in pids)  # labeller, trainer, rewarder
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert wait_gone(pids, 15), "background processes outlived the killed main process"
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs(mode: str) -> None:
    venv = gym.make_vec(ENV, num_envs=3, vectorization_mode=mode, obs_type="state", size=20, max_steps=30)
    env = PreferenceVectorEnv(venv, learned_after=2, **FAST)
    obs, _ = env.reset(seed=0)
    assert array(obs).shape == (3, 4)
    _, r, *_, info = env.step(env.action_space.sample())
    assert (
        r.shape == (3,) and np.array_equal(r, array(info["true_reward"])) and info["reward_source"] == "true"
    )
    end = time.monotonic() + 60
    while not env.learned_reward_active and time.monotonic() < end:
        env.step(env.action_space.sample())
    assert env.learned_reward_active
    steps = [env.step(env.action_space.sample()) for _ in range(10)]
    r = np.stack([st[1] for st in steps])
    assert r.shape == (10, 3) and not np.allclose(r, np.stack([array(st[4]["true_reward"]) for st in steps]))
    m = counters(env)
    assert m["segments_recorded"] >= 10 and m["preferences"] >= 5
    env.close()


class _Counter(gym.Env):
    """``obs = [episode id, t, last action]``, reward ``t``; episodes of 7 to 13 steps."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.ep, self.t, self.length = (
            float(self.np_random.integers(1 << 20)),
            0,
            int(self.np_random.integers(7, 14)),
        )
        return np.array([self.ep, 0, -1], np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return (
            np.array([self.ep, self.t, action], np.float32),
            float(self.t),
            False,
            self.t >= self.length,
            {},
        )


@pytest.mark.parametrize("autoreset", ["next", "same"])
def test_recorded_segments_are_exact_transitions(tmp_path: Path, autoreset: str) -> None:
    mode = gym.vector.AutoresetMode.NEXT_STEP if autoreset == "next" else gym.vector.AutoresetMode.SAME_STEP
    venv = gym.vector.SyncVectorEnv([_Counter] * 3, autoreset_mode=mode)
    env = PreferenceVectorEnv(venv, mode="collect", fragment_length=4, queue_size=500, pool_size=8)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(400):
        env.step(rng.integers(0, 4, 3))
    end = time.monotonic() + 30
    while counters(env)["preferences"] < 100 and time.monotonic() < end:
        time.sleep(0.1)
    path = env.save_preferences(tmp_path / "p.npz", val_fraction=None)[0]
    m = counters(env)
    env.close()
    assert m["segments_dropped"] == 0 and m["segments_sent"] >= 200
    f = PreferenceDataset.load(path).fragments
    assert f is not None and len(f) >= 100
    obs = f.table_obs[f.rows[:, None] + np.arange(5)]  # [N, L+1, 3]
    acts = f.table_acts[f.rows[:, None] + np.arange(4)]
    rews = present(f.table_rews)[f.rows[:, None] + np.arange(4)]
    assert np.all(obs[:, :, 0] == obs[:, :1, 0])  # one episode per segment
    assert np.all(np.diff(obs[:, :, 1], axis=1) == 1)  # consecutive steps
    np.testing.assert_array_equal(acts, obs[:, 1:, 2])  # the action that led to each obs
    np.testing.assert_array_equal(rews, obs[:, 1:, 1])  # the reward of that step
    np.testing.assert_array_equal(f.start, obs[:, 0, 1])  # provenance: start step in its episode


@pytest.mark.parametrize("obs_type", ["state", "pixels", "pixels-next"])
@pytest.mark.parametrize("process", [True, False])
def test_rewarder_process_gives_the_networks_rewards(tmp_path: Path, obs_type: str, process: bool) -> None:
    """The rewards the agent sees are the network's, with or without a rewarder process (a reward
    that reads s', here the keypoints' displacement, is scored once the step is made)."""
    venv = gym.make_vec(ENV, num_envs=3, vectorization_mode="sync", obs_type=obs_type[:6], size=40)
    obs_space, act_space = venv.single_observation_space, venv.single_action_space
    net: RewardNet
    if obs_type == "pixels-next":
        net = CNNReward(obs_space, act_space, features="spatial", channels=(4,), kernels=(1,), strides=(1,),
                        hidden=(16,), use_next_obs=True)  # fmt: skip
    elif obs_type == "pixels":  # a flat CNN of (s, a): the rewarder process can score it ahead
        arch: dict[str, Any] = cnn_architecture(obs_space)
        net = CNNReward(obs_space, act_space, **arch)
    else:
        assert isinstance(obs_space, gym.spaces.Box)
        net = default_net(obs_space, act_space)
    path = save_reward_net(net, tmp_path / "r.safetensors")
    env = PreferenceVectorEnv(
        venv, reward_path=str(path), learned_after=0, max_train_steps=0, normalize=False,
        reward_process=process, **FAST,
    )  # fmt: skip
    obs, _ = env.reset(seed=0)
    # the default state reward reads s' (prefrl train's MLP): scored once the step is made
    assert ("rewarder" in env.background_pids()) == (process and obs_type == "pixels")
    rng = np.random.default_rng(0)
    for _ in range(60):
        a = rng.integers(0, 5, 3)
        nxt, r, *_, info = env.step(a)
        want, _ = net.predict(array(obs), a, array(nxt))
        assert info["reward_source"] == "learned"
        np.testing.assert_allclose(r, want, rtol=1e-4, atol=1e-5)
        obs = nxt
    env.close()


def test_small_images_get_a_small_default_cnn() -> None:
    small = default_net(gym.spaces.Box(0, 255, (40, 40, 3), np.uint8), gym.spaces.Discrete(5))
    big = default_net(gym.spaces.Box(0, 255, (84, 84, 3), np.uint8), gym.spaces.Discrete(5))
    assert isinstance(small, CNNReward) and isinstance(big, CNNReward)
    n_small = sum(p.numel() for p in small.parameters())
    assert n_small < sum(
        p.numel() for p in CNNReward(small.observation_space, small.action_space).parameters()
    )


def test_a_save_asked_during_a_long_fit_round_waits_for_the_round(tmp_path: Path) -> None:
    """The trainer answers between rounds of its fit; a save asked while a long round runs (here
    seconds; minutes for image clips on a busy machine) waits for it, however long, and writes
    every label the trainer holds, instead of giving up while the trainer works. A request that
    gave up leaves a late answer behind, which a later request never takes for its own."""
    slow = RewardTrainerConfig(epochs=1000.0)  # rounds of seconds on this small set
    env = PreferenceEnv(
        state_env(), fragment_length=5, min_labels=5, total_labels=20, train_pause_s=0.0, trainer=slow
    )
    step_until(env, lambda: counters(env)["reward_train_steps"] > 0, timeout=120)
    runtime = env._core.runtime
    assert runtime is not None
    probe = tmp_path / "probe.npz"
    for _ in range(20):  # ask until the question lands inside a round (not between two)
        steps = counters(env)["reward_train_steps"]
        try:
            runtime.request(("save", str(probe), None), timeout=0.3)
        except TimeoutError:
            break
    else:
        pytest.fail("no request landed inside a fit round of seconds")
    held = counters(env)["preferences"]
    paths = env.save_preferences(tmp_path / "prefs.npz", val_fraction=None)
    after = counters(env)["reward_train_steps"]
    env.close()
    assert paths == [tmp_path / "prefs.npz"]  # its own answer, not the probe's late one
    assert after > steps  # answered once the round under way had ended
    assert len(PreferenceDataset.load(paths[0])) >= held
