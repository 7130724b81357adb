"""How saved policies spread their actions (``benchmarks/policy_actions.py``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from prefrl.agents.policy_io import save_agent
from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import AgentConfig, make_agent, make_env, make_vec_env

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("policy_actions", ROOT / "benchmarks/policy_actions.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_policy_that_dropped_an_action_everywhere_is_told_from_a_fresh_one(tmp_path: Path, capsys) -> None:
    """A fresh PPO policy samples both of CartPole's actions about evenly; one whose action head
    pushes everything to the left has a mean entropy and an entropy of the mean near 0."""
    cfg = AgentConfig(algo="ppo", net_arch=[16], n_steps=64, batch_size=32)
    fresh = make_agent(cfg, make_vec_env("CartPole-v1", 1, seed=0))
    save_agent(fresh, tmp_path / "fresh.zip")
    left = make_agent(cfg, make_vec_env("CartPole-v1", 1, seed=0))
    head = left.policy.action_net
    assert isinstance(head, torch.nn.Linear)
    with torch.no_grad():
        head.bias.copy_(torch.tensor([10.0, -10.0]))
    save_agent(left, tmp_path / "left.zip")
    collect_episodes(make_env("CartPole-v1"), n_episodes=5, seed=0).save(tmp_path / "random.npz")
    out = tmp_path / "actions.json"
    policies = ["--policy", f"fresh={tmp_path / 'fresh.zip'}", "--policy", f"left={tmp_path / 'left.zip'}"]
    code = _module().main(["--env.id", "CartPole-v1", "--trajectories", str(tmp_path / "random.npz"),
                           *policies, "--out", str(out)])  # fmt: skip
    assert code == 0
    records = {r["policy"]: r for r in json.loads(out.read_text())["records"]}
    assert len(capsys.readouterr().out.splitlines()) == 2  # one JSON object per policy
    for r in records.values():
        assert np.isclose(sum(r["mean_probs"]), 1.0, atol=1e-3)
        assert 0 <= r["mean_entropy"] <= r["entropy_of_mean"] + 1e-6 <= r["max_entropy"] + 1e-6
        assert np.isclose(r["mutual_information"], r["entropy_of_mean"] - r["mean_entropy"], atol=1e-3)
    assert records["fresh"]["mean_entropy"] > 0.95 * np.log(2) and min(records["fresh"]["mean_probs"]) > 0.4
    assert records["left"]["mean_probs"][0] > 0.99 and records["left"]["entropy_of_mean"] < 0.01
    with pytest.raises(SystemExit, match="NAME=FILE"):
        _module().main(["--env.id", "CartPole-v1", "--trajectories", str(tmp_path / "random.npz"),
                        "--policy", str(tmp_path / "fresh.zip")])  # fmt: skip
