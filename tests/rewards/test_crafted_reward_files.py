"""Crafted reward model files (``reward.safetensors``) are one line naming the file, through the CLI
(``prefrl train --reward-from FILE``), before any network is built from their config: JSON nested
100,000 deep, and configs asking for 10**12 units, actions or ensemble members."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from gymnasium import spaces
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from prefrl.cli.main import main
from prefrl.rewards import MLPReward, load_reward_net, save_reward_net
from prefrl.rewards.io import read_reward_normalizer

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    net = MLPReward(spaces.Box(-8, 8, (3,)), spaces.Box(-2, 2, (1,)), hidden=(8,))
    return save_reward_net(net, tmp_path_factory.mktemp("good") / "reward.safetensors", {"normalize": False})


def craft(good: Path, out: Path, key: str, value: Any) -> Path:
    """``good`` with metadata ``key`` set: a config field (``config.NAME``) or a whole entry's text."""
    with safe_open(str(good), framework="pt") as f:
        meta = dict(f.metadata())
    if key.startswith("config."):
        config = json.loads(meta["config"])
        config[key.split(".", 1)[1]] = value
        meta["config"] = json.dumps(config)
    else:
        meta[key] = value
    save_file(load_file(str(good)), str(out), metadata=meta)
    return out


CASES = {
    "deep-config": ("config", DEEP, "JSON nested 100000 levels deep"),
    "deep-normalizer": ("normalizer", DEEP, "metadata 'normalizer': JSON nested 100000 levels deep"),
    "wide": ("config.hidden", [10**12], "weights do not match the stored config"),
    "members": ("config.ensemble_size", 10**12, "weights do not match the stored config"),
    "actions": ("config.action_space", {"type": "Discrete", "n": 10**12, "start": 0}, "weights do not match"),
    "not-an-object": ("config", "[1, 2]", "not a readable reward model"),
    "unknown-class": ("config.class", "os.system", "unknown reward network class"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_crafted_reward_files_are_one_line_through_the_cli(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    key, value, words = CASES[case]
    path = craft(good, tmp_path / "reward.safetensors", key, value)
    run = tmp_path / "agent"
    args = [
        "train",
        "--reward-from",
        str(path),
        "--env.id",
        "Pendulum-v1",
        "--run-dir",
        str(run),
        "--no-progress",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.strip().splitlines() if x]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path) in lines[0] and words in lines[0], err
    assert not run.exists()


def test_the_checks_pass_a_real_file(good: Path) -> None:
    net, saved = load_reward_net(good), load_file(str(good))
    assert net.state_dict().keys() == saved.keys()
    assert all(torch.equal(v, saved[k]) for k, v in net.state_dict().items())
    assert read_reward_normalizer(good) == {"normalize": False}
