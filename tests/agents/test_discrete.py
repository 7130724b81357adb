"""Every action space: the agent chosen from it, DQN with replay relabelling, one-hot actions."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3 import DQN, PPO, SAC

from prefrl.agents.learned_reward import LearnedRewardVecEnv
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.reward_signal import LearnedReward
from prefrl.agents.sb3 import (
    AgentConfig,
    buffer_transitions,
    check_agent_space,
    make_agent,
    make_vec_env,
    relabel_replay_buffer,
    resolve_algo,
)
from prefrl.rewards import MLPReward
from tests.narrow import replay_buffer


def test_auto_agent_follows_the_action_space() -> None:
    assert resolve_algo("auto", spaces.Box(-1, 1, (2,))) == "sac"
    assert resolve_algo("auto", spaces.Discrete(3)) == "ppo"
    assert resolve_algo("auto", spaces.MultiDiscrete([2, 3])) == "ppo"
    assert resolve_algo("dqn", spaces.Discrete(3)) == "dqn"
    assert AgentConfig().algo == "auto"
    assert isinstance(make_agent(AgentConfig(net_arch=[8]), make_vec_env("CartPole-v1")), PPO)
    assert isinstance(make_agent(AgentConfig(net_arch=[8]), make_vec_env("Pendulum-v1")), SAC)
    with pytest.raises(ValueError, match=r"dqn.*Discrete"):
        check_agent_space("dqn", spaces.Box(-1, 1, (2,)))


def test_dqn_replay_buffer_is_relabelled_with_integer_actions() -> None:
    rec = TrajectoryRecorder(make_vec_env("CartPole-v1", 2, seed=0))
    net = MLPReward(rec.observation_space, rec.action_space, hidden=(8,), ensemble_size=1)
    venv = LearnedRewardVecEnv(rec, LearnedReward(net))
    agent = make_agent(AgentConfig(algo="dqn", net_arch=[16], batch_size=32), venv, learning_starts=100)
    assert isinstance(agent, DQN)
    agent.learn(300)
    m = replay_buffer(agent).pos * 2  # two envs per row
    obs, acts, nxt, done = buffer_transitions(agent, slice(0, replay_buffer(agent).pos))
    assert m >= 300 and acts.shape == (m,) and acts.dtype == np.int64 and set(np.unique(acts)) <= {0, 1}
    assert obs.shape == nxt.shape == (m, 4) and done.any()  # CartPole episodes fell
    seen = []

    def reward_fn(o, a, n, d):
        seen.append(a)
        return net.predict(o, a, n, d)[0]

    raw = relabel_replay_buffer(agent, reward_fn)
    assert raw.shape == (m,) and np.isfinite(raw).all() and np.std(raw) > 0
    # the executed actions of the episodes the recorder saw are the ones relabelled
    batch = rec.pop_episodes(include_partial=True)
    assert batch is not None
    assert (
        np.bincount(np.concatenate(seen), minlength=2).tolist()
        == np.bincount(batch.acts[batch.step_rows], minlength=2).tolist()
    )


def test_multidiscrete_actions_are_one_hot_in_the_reward_net() -> None:
    obs_space = spaces.Box(-1, 1, (2,), np.float32)
    act_space = spaces.MultiDiscrete([2, 3])
    net = MLPReward(obs_space, act_space, hidden=(8,), ensemble_size=1)
    o = np.zeros((4, 2), np.float32)
    a = np.array([[0, 0], [1, 0], [0, 2], [1, 2]])
    r, _ = net.predict(o, a, o, np.zeros(4, bool))
    assert len(set(np.round(r, 6).tolist())) == 4  # each action combination is its own input


def test_cartpole_trains_from_the_command_line_with_no_flags(tmp_path) -> None:
    from prefrl.cli.train import main

    run = tmp_path / "cp"
    rc = main(["--env.id", "CartPole-v1", "--loop.total-steps", "1500", "--loop.total-labels", "6",
               "--loop.iterations", "2", "--loop.initial-steps", "300", "--agent.n-steps", "256",
               "--eval-episodes", "1", "--run-dir", str(run), "--no-progress"])  # fmt: skip
    assert rc == 0
    import json

    conf = json.loads((run / "config.json").read_text())
    rep = json.loads((run / "report.json").read_text())
    assert conf["agent"]["algo"] == "ppo" and rep["agent"] == "ppo" and rep["labels_used"] == 6
    assert conf["reward"]["output"] == "tanh"  # auto: CartPole terminates (the pole falls)
    assert conf["reward"]["action_heads"] is False  # auto: the MLP keeps the one-hot action input
    # SB3's own metrics go to TensorBoard beside prefrl's
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set(EventAccumulator(str(run / "tb" / "agent")).Reload().Tags()["scalars"])
    assert {"train/loss", "train/entropy_loss"} <= tags, tags
    assert "labels/total" in EventAccumulator(str(run / "tb")).Reload().Tags()["scalars"]


@pytest.mark.slow  # about 40 s on 2 cores
def test_cartpole_is_learned_from_50_labels(tmp_path) -> None:
    """Terminations carry the signal: PPO on the learned reward keeps the pole up."""
    from prefrl.cli.train import main

    run = tmp_path / "cp"
    rc = main(["--env.id", "CartPole-v1", "--loop.total-labels", "50", "--loop.total-steps", "20000",
               "--eval-episodes", "5", "--run-dir", str(run), "--no-progress"])  # fmt: skip
    assert rc == 0
    import json

    rep = json.loads((run / "report.json").read_text())
    assert rep["true_return"] >= 450 and rep["random_return"] < 40  # the maximum is 500
    assert rep["reward_accuracy"] > 0.9 and rep["label_tie_fraction"] < 0.5
