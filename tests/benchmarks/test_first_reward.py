"""The first-reward probe: trains the loop's first reward per draw and scores it on unseen clips."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("first_reward", ROOT / "benchmarks/first_reward.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_probe_learns_from_the_first_labels_and_refuses_a_foreign_file(tmp_path: Path, capsys) -> None:
    fr = _module()
    from prefrl.agents.policy_io import save_agent
    from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env

    agent = make_agent(AgentConfig(algo="sac"), make_vec_env("Pendulum-v1"), seed=0)
    save_agent(agent, tmp_path / "policy.zip")
    args = ["--env", "Pendulum-v1", "--policy", str(tmp_path / "policy.zip"), "--draws", "2",
            "--labels", "15", "--initial-steps", "400", "--fragment-length", "10"]  # fmt: skip
    assert fr.main(args) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert [r["draw"] for r in lines[:-1]] == [0, 1]
    summary = lines[-1]
    assert summary["draws"] == 2 and 0.0 <= summary["cross_accuracy_mean"] <= 1.0
    assert summary["random_accuracy_mean"] > 0.6  # 15 oracle labels teach Pendulum's reward
    (tmp_path / "junk.zip").write_text("not a policy")
    with pytest.raises(SystemExit, match=r"junk\.zip: not a readable policy file"):
        fr.main([*args[:2], "--policy", str(tmp_path / "junk.zip")])


def _agents_module():
    spec = importlib.util.spec_from_file_location(
        "first_reward_agents", ROOT / "benchmarks/first_reward_agents.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_agent_clip_probe_scores_buffer_clips_and_names_bad_files(tmp_path: Path, capsys) -> None:
    import gymnasium as gym
    import numpy as np

    fa = _agents_module()
    env = gym.make("HalfCheetah-v5")
    obs, _ = env.reset(seed=0)
    rows: dict[str, list[np.ndarray]] = {"observations": [], "actions": [], "next_observations": []}
    for t in range(600):  # a buffer whose behaviour drifts from standing to pushing one way
        act = np.clip(env.action_space.sample() * 0.3 + (0.8 if t > 300 else 0.0), -1, 1)
        nxt, *_ = env.step(act)
        for k, v in zip(rows, (obs, act, nxt), strict=True):
            rows[k].append(np.asarray(v, np.float32)[None])  # [1, d]: SB3's n_envs axis
        obs = nxt
    obs_, acts, next_obs = (np.stack(rows[k]) for k in ("observations", "actions", "next_observations"))
    np.savez(tmp_path / "replay_buffer.npz", observations=obs_, actions=acts, next_observations=next_obs)
    args = [str(tmp_path / "replay_buffer.npz"), "--draws", "2", "--labels", "10", "--initial-steps", "400",
            "--fragment-length", "10", "--trainer", "l2_init=0.01"]  # fmt: skip
    assert fa.main(args) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert [r["draw"] for r in lines[:-1]] == [0, 1]
    summary = lines[-1]
    assert summary["clips"] == 60 and summary["trainer"] == {"l2_init": 0.01}
    assert 0.0 <= summary["accuracy"] <= 1.0 and -1.0 <= summary["spearman"] <= 1.0
    (tmp_path / "junk.npz").write_text("not a buffer")
    with pytest.raises(SystemExit, match=r"junk\.npz: not a replay buffer"):
        fa.main([str(tmp_path / "junk.npz")])
    np.savez(tmp_path / "pendulum.npz", observations=np.zeros((20, 1, 3)), actions=np.zeros((20, 1, 1)),
             next_observations=np.zeros((20, 1, 3)))  # fmt: skip
    with pytest.raises(SystemExit, match="not a HalfCheetah-v5 replay buffer"):
        fa.main([str(tmp_path / "pendulum.npz")])
