"""The SBX (JAX) agent backend: same loop, same relabelling, checkpoints and evaluation.

Each test runs in a child process: JAX starts threads when imported, and a pytest process
that later forks (the wrapper's and the web tests' subprocesses) must not have it loaded.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from prefrl.agents.sb3 import AgentConfig

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sbx") is None,
    reason='the sbx backend needs pip install "prefrl[sbx]" (in the dev extras)',
)
PREFRL = str(Path(sys.executable).parent / "prefrl")


def run_python(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_sbx_sac_relabels_its_sb3_replay_buffer() -> None:
    out = run_python("""
        import json
        import numpy as np, sbx
        from prefrl.agents.learned_reward import LearnedReward, LearnedRewardVecEnv
        from prefrl.agents.recorder import TrajectoryRecorder
        from prefrl.agents.sb3 import (AgentConfig, buffer_transitions, make_agent, make_vec_env,
                                       relabel_replay_buffer, write_buffer_rewards)
        from prefrl.rewards import MLPReward

        rec = TrajectoryRecorder(make_vec_env("Pendulum-v1", 1, seed=0))
        net = MLPReward(rec.observation_space, rec.action_space, hidden=(16, 16), ensemble_size=2)
        reward = LearnedReward(net)
        agent = make_agent(AgentConfig(backend="sbx", net_arch=[16, 16]), LearnedRewardVecEnv(rec, reward),
                           learning_starts=100)
        agent.learn(300)
        acts = buffer_transitions(agent, slice(0, 300))[1]
        for p in net.parameters():  # another reward: every stored reward must follow it
            p.data.add_(0.5)
        reward.refresh()
        raw = relabel_replay_buffer(agent, reward.raw)
        write_buffer_rewards(agent, raw)
        obs, a, nxt, done = buffer_transitions(agent, slice(0, 300))
        err = float(np.abs(agent.replay_buffer.rewards[:300, 0] - reward.raw(obs, a, nxt, done)).max())
        print(json.dumps({"sbx": type(agent) is sbx.SAC, "max_act": float(np.abs(acts).max()),
                          "n": len(raw), "err": err}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["sbx"] and got["n"] == 300 and got["err"] < 1e-4
    assert 1.0 < got["max_act"] <= 2.0 + 1e-6  # the env's scale (Pendulum: +-2), not SBX's [-1, 1]


def test_train_resume_and_evaluate_with_sbx(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["train", "--agent.backend", "sbx", "--loop.total-steps", "900", "--loop.initial-steps", "200",
            "--loop.total-labels", "6", "--loop.iterations", "3", "--loop.fragment-length", "20",
            "--run-dir", str(run), "--no-progress", "--eval-episodes", "2"]  # fmt: skip
    for argv in (
        args,
        ["train", "--resume", str(run), "--no-progress"],
        ["evaluate", str(run), "--episodes", "2"],
    ):
        out = subprocess.run([PREFRL, *argv], capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
    assert "true_return" in out.stdout
    conf = json.loads((run / "config.json").read_text())
    assert conf["agent"]["backend"] == "sbx" and conf["agent"]["algo"] == "sac"
    rep = json.loads((run / "report.json").read_text())
    assert rep["labels_used"] == 6 and np.isfinite(rep["true_return"]) and rep["resumed"]


def test_bad_backend_choices_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="sbx backend has no 'a2c'"):
        AgentConfig(backend="sbx", algo="a2c")
    with pytest.raises(ValueError, match="unknown agent backend"):
        AgentConfig(backend="jax")  # type: ignore[arg-type]
