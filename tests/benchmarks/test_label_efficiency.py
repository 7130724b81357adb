"""The label-efficiency benchmark's options: any section of the train config, oracle reuse."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from prefrl.training.run import TrainConfig

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("label_efficiency", ROOT / "benchmarks/label_efficiency.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_options_reach_every_section_of_the_train_config() -> None:
    le = _module()
    opts = le.parse_loop_options(
        ["end_clip_frac=0.5", "trainer.weight_decay=0.01", "reward.output=tanh", "reward.hidden=[8,8]"]
    )
    assert opts == {"end_clip_frac": 0.5, "trainer.weight_decay": 0.01, "reward.output": "tanh",
                    "reward.hidden": [8, 8]}  # fmt: skip
    cfg = TrainConfig()
    le.apply_options(cfg, opts)
    assert cfg.loop.end_clip_frac == 0.5 and cfg.trainer.weight_decay == 0.01
    assert cfg.reward.output == "tanh" and list(cfg.reward.hidden) == [8, 8]
    for bad in ["nosuch=1", "trainer.nosuch=1", "teacher.x=1", "end_clip_frac"]:
        with pytest.raises(SystemExit, match="expected NAME=VALUE"):
            le.parse_loop_options([bad])


def test_true_reward_runs_are_reused_across_label_budgets_and_options(tmp_path) -> None:
    le = _module()
    done = tmp_path / "Hopper-v5-sac-oracle-200l-100000s"
    done.mkdir()
    (done / "seed1-oracle.json").write_text(json.dumps({"return": 900.0, "wall_s": 1.0, "cpu_s": 1.0}))
    hit = le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 1)
    assert hit == done / "seed1-oracle.json"
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 100_000, 2) is None  # another seed
    assert le.find_oracle(tmp_path, "Hopper-v5", "sac", 10_000, 1) is None  # other steps
    assert le.find_oracle(tmp_path, "Hopper-v5", "td3", 100_000, 1) is None  # another agent
