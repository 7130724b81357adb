"""The first-reward probe: trains the loop's first reward per draw and scores it on unseen clips."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("first_reward", ROOT / "benchmarks/first_reward.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_probe_learns_from_the_first_labels_and_refuses_a_foreign_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
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
