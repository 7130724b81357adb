"""The learned reward of a finished run trains agents in other people's training code, as
docs/integrations.md shows: a CleanRL-style loop (examples/cleanrl_learned_reward.py), RL
Baselines3 Zoo (``python -m rl_zoo3.train`` with prefrl's ``env_wrapper``) and SBX. Each trains a
few thousand steps and checks that the reward the agent saw is the run's learned reward."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from prefrl.agents.learned_reward import LearnedRewardVecEnv
from tests.agents.reward_runs import STATS, expected, make_run
from tests.narrow import replay_buffer

ROOT = Path(__file__).resolve().parents[2]


def test_cleanrl_style_loop_trains_on_the_learned_reward(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", normalizer={"normalize": True, **STATS})
    spec = importlib.util.spec_from_file_location(
        "cleanrl_example", ROOT / "examples/cleanrl_learned_reward.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    sys.modules["cleanrl_example"] = example  # its dataclass looks its module up
    spec.loader.exec_module(example)
    args = example.Args(run=str(run), total_timesteps=2048, num_envs=2, num_steps=512, update_epochs=2)
    last = example.train(args)  # 2 iterations of 1024 steps; the last rollout crosses an episode end
    real = last["true_rewards"] != 0.0  # Gymnasium's reset-only steps (autoreset) pay 0
    assert (~real).sum() == 6  # steps 602, 803, 1004 of each env: 200-step episodes, one reset step each
    acts = np.clip(last["actions"], -2.0, 2.0)  # the loop clips its actions to the space
    want = expected(run, last["obs"][real], acts[real], last["next_obs"][real], STATS)
    np.testing.assert_allclose(last["rewards"][real], want, rtol=1e-4, atol=1e-4)
    assert not np.allclose(last["rewards"][real], last["true_rewards"][real], atol=0.1)


def test_sbx_agent_trains_on_the_learned_reward(tmp_path: Path) -> None:
    pytest.importorskip("sbx", reason="SBX is an optional extra: pip install 'prefrl[sbx]'")
    from sbx import SAC

    run = make_run(tmp_path / "run", normalizer={"normalize": True, **STATS})
    venv = LearnedRewardVecEnv.from_run(DummyVecEnv([lambda: gym.make("Pendulum-v1")]), run)
    agent = SAC(
        "MlpPolicy", venv, learning_starts=500, train_freq=4, seed=0, policy_kwargs={"net_arch": [32]}
    )
    agent.learn(1500)
    buf = replay_buffer(agent)  # what the agent learned from: (obs, action, next obs, reward) rows
    n = buf.pos
    assert n == 1500
    acts = agent.policy.unscale_action(buf.actions[:n, 0])  # the buffer keeps actions scaled to [-1, 1]
    want = expected(run, buf.observations[:n, 0], acts, buf.next_observations[:n, 0], STATS)
    np.testing.assert_allclose(buf.rewards[:n, 0], want, rtol=1e-4, atol=1e-4)


def test_rl_zoo_trains_with_prefrl_env_wrapper(tmp_path: Path) -> None:
    pytest.importorskip("rl_zoo3", reason="RL Baselines3 Zoo is an optional extra: pip install 'prefrl[zoo]'")
    run = make_run(tmp_path / "run", normalizer={"normalize": True, **STATS})
    tap = tmp_path / "tap.npz"
    (tmp_path / "hyper.yml").write_text(
        "Pendulum-v1:\n"
        "  policy: MlpPolicy\n"
        "  n_timesteps: 1024\n"
        "  n_steps: 256\n"
        "  batch_size: 64\n"
        "  n_epochs: 2\n"
        "  policy_kwargs: 'dict(net_arch=[32])'\n"
        "  env_wrapper:\n"
        "    - prefrl.agents.learned_reward.zoo_wrapper:\n"
        f"        run_dir: {run}\n"
        "    - reward_runs.RewardTap:\n"
        f"        out: {tap}\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", "Pendulum-v1", "-n", "1024",
           "-conf", str(tmp_path / "hyper.yml"), "-f", str(tmp_path / "logs"), "--seed", "0",
           "--eval-freq", "-1", "--device", "cpu", "--verbose", "0"]  # fmt: skip
    res = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "logs/ppo/Pendulum-v1_1/Pendulum-v1.zip").exists()  # saved; prefrl never loads it
    seen = np.load(tap)
    assert len(seen["rews"]) == 1000  # five whole episodes, every step the agent took
    want = expected(run, seen["obs"], seen["acts"], seen["next_obs"], STATS)
    np.testing.assert_allclose(seen["rews"], want, rtol=1e-4, atol=1e-4)
    assert not np.allclose(seen["rews"], seen["true_rews"], atol=0.1)
