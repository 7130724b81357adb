"""Box2D tasks (LunarLander, BipedalWalker, CarRacing) install with the package and train."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from prefrl.agents.sb3 import make_env
from prefrl.cli.main import main


@pytest.mark.parametrize("env_id", ["LunarLander-v3", "BipedalWalker-v3", "CarRacing-v3"])
def test_box2d_task_steps_and_renders_headless(env_id: str) -> None:
    env = make_env(env_id, render=True)
    obs, _ = env.reset(seed=0)
    _, rew, *_ = env.step(env.action_space.sample())
    assert env.observation_space.contains(obs) and np.isfinite(float(rew))
    frame = env.render()
    assert isinstance(frame, np.ndarray)
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.std() > 0  # a clip for people
    env.close()


@pytest.mark.parametrize(("kwargs", "algo"), [("{}", "ppo"), ('{"continuous": true}', "sac")])
def test_train_on_lunar_lander_discrete_and_continuous(tmp_path: Path, kwargs: str, algo: str) -> None:
    run = tmp_path / "run"
    args = ["train", "--env.id", "LunarLander-v3", "--env.kwargs", kwargs, "--run-dir", str(run)]
    args += ["--no-progress", "--no-page", "--eval-episodes", "1", "--loop.total-steps", "800"]
    args += ["--loop.initial-steps", "300", "--loop.iterations", "2", "--loop.total-labels", "6"]
    args += ["--loop.fragment-length", "20"]
    assert main(args) == 0
    rep = json.loads((run / "report.json").read_text())
    assert rep["env_steps"] == 800 and rep["labels_used"] == 6
    conf = json.loads((run / "config.json").read_text())
    assert conf["agent"]["algo"] == algo  # chosen from the action space
