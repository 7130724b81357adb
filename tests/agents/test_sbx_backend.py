"""The SBX (JAX) agent backend: same loop, same relabelling, checkpoints and evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from prefrl.agents.learned_reward import LearnedReward, LearnedRewardVecEnv
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.sb3 import (
    AgentConfig,
    agent_class,
    buffer_transitions,
    make_agent,
    make_vec_env,
    relabel_replay_buffer,
    write_buffer_rewards,
)
from prefrl.cli.main import main
from prefrl.rewards import MLPReward

sbx = pytest.importorskip("sbx", reason='the sbx backend needs pip install "prefrl[sbx]" (in the dev extras)')


def test_sbx_sac_relabels_its_sb3_replay_buffer() -> None:
    rec = TrajectoryRecorder(make_vec_env("Pendulum-v1", 1, seed=0))
    net = MLPReward(rec.observation_space, rec.action_space, hidden=(16, 16), ensemble_size=2)
    reward = LearnedReward(net)
    agent = make_agent(AgentConfig(backend="sbx", net_arch=[16, 16]), LearnedRewardVecEnv(rec, reward),
                       learning_starts=100)  # fmt: skip
    assert type(agent) is sbx.SAC
    agent.learn(300)
    acts = buffer_transitions(agent, slice(0, 300))[1]
    assert 1.0 < np.abs(acts).max() <= 2.0 + 1e-6  # the env's scale (Pendulum: +-2), not SBX's [-1, 1]
    for p in net.parameters():  # another reward: every stored reward must follow it
        p.data.add_(0.5)
    reward.refresh()
    raw = relabel_replay_buffer(agent, reward.raw)
    write_buffer_rewards(agent, raw)
    obs, acts, nxt, done = buffer_transitions(agent, slice(0, 300))
    assert raw.shape == (300,)
    want = reward.raw(obs, acts, nxt, done)
    np.testing.assert_allclose(agent.replay_buffer.rewards[:300, 0], want, rtol=1e-5, atol=1e-5)


def test_train_resume_and_evaluate_with_sbx(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    args = ["train", "--agent.backend", "sbx", "--loop.total-steps", "900", "--loop.initial-steps", "200",
            "--loop.total-labels", "6", "--loop.iterations", "3", "--loop.fragment-length", "20",
            "--run-dir", str(run), "--no-progress", "--eval-episodes", "2"]  # fmt: skip
    assert main(args) == 0
    conf = json.loads((run / "config.json").read_text())
    assert conf["agent"]["backend"] == "sbx" and conf["agent"]["algo"] == "sac"
    rep = json.loads((run / "report.json").read_text())
    assert rep["labels_used"] == 6 and np.isfinite(rep["true_return"])
    # the saved policy is SBX's; resuming a finished run reloads it and its replay buffer
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    assert main(["evaluate", str(run), "--episodes", "2"]) == 0
    assert "true_return" in capsys.readouterr().out


def test_bad_backend_choices_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="sbx backend has no 'a2c'"):
        AgentConfig(backend="sbx", algo="a2c")
    with pytest.raises(ValueError, match="unknown agent backend"):
        AgentConfig(backend="jax")  # type: ignore[arg-type]
    assert agent_class("ppo", "sbx") is sbx.PPO
