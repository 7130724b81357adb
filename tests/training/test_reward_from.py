"""``prefrl train --reward-from RUN``: a finished run's reward, frozen, trains a new agent; and a run
keeps, with its reward, the normalisation its agent saw at the end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefrl.cli.main import main
from prefrl.rewards.io import load_reward_net, read_reward_normalizer
from prefrl.storage.checkpoint import CheckpointDir

TINY = ["--agent.algo", "ppo", "--agent.n-steps", "64", "--agent.batch-size", "32", "--eval-episodes", "1",
        "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("src") / "run"
    args = ["train", "--env.id", "CartPole-v1", "--run-dir", str(run), "--loop.total-steps", "400",
            "--loop.initial-steps", "100", "--loop.iterations", "2", "--loop.total-labels", "6",
            *TINY]  # fmt: skip
    assert main(args) == 0
    return run


def test_a_run_saves_the_final_normalisation_with_its_reward(source: Path) -> None:
    ckpt = CheckpointDir(source)
    final = ckpt.read_state(ckpt.latest())["normalizer"]  # type: ignore[arg-type]
    saved = read_reward_normalizer(source / "reward.safetensors")
    assert saved == {"normalize": True, **final} and saved["count"] > 0


def test_reward_from_trains_only_an_agent_on_the_frozen_reward(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent"
    assert main(["train", "--reward-from", str(source), "--run-dir", str(out), "--loop.total-steps", "256",
                 *TINY]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert f"reward from                 : {source}" in text and "labels used" not in text
    report = json.loads((out / "report.json").read_text())
    assert report["env"] == "CartPole-v1"  # the source run's environment, not --env.id's default
    assert report["env_steps"] >= 256 and 0 < report["true_return"] <= 500
    config = json.loads((out / "config.json").read_text())
    assert config["reward_from"] == str(source) and config["env"]["id"] == "CartPole-v1"
    # the new run holds the reward it trained on, with the source's statistics, unchanged (frozen)
    assert read_reward_normalizer(out / "reward.safetensors") == read_reward_normalizer(
        source / "reward.safetensors"
    )
    a, b = load_reward_net(out / "reward.safetensors"), load_reward_net(source / "reward.safetensors")
    assert all((x == y).all() for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not (out / "preferences.npz").exists()


def test_reward_from_a_run_without_a_reward_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "early").mkdir()
    (tmp_path / "early" / "config.json").write_text("{}")
    assert main(["train", "--reward-from", str(tmp_path / "early"), "--run-dir", str(tmp_path / "x")]) == 2
    assert "without a reward.safetensors" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
