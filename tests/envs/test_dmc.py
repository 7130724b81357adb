"""DeepMind Control tasks (``dm_control/...`` through Shimmy) as ordinary environment ids."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from prefrl.agents.sb3 import check_env_id, make_env
from prefrl.cli.main import main
from prefrl.envs.dmc import FlattenBoxDict, is_box_dict

ENV = "dm_control/cartpole-swingup-v0"


def test_dmc_id_is_known_and_its_dict_observation_becomes_one_vector() -> None:
    check_env_id(ENV)  # registered on first use, no import needed by the user
    env = make_env(ENV)
    assert env.observation_space == gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
    obs, _ = env.reset(seed=0)
    raw = env.unwrapped.observation_space
    assert (
        is_box_dict(raw)
        and isinstance(raw, gym.spaces.Dict)
        and sorted(raw.spaces) == ["position", "velocity"]
    )
    assert obs.shape == (5,) and obs.dtype == np.float32 and env.observation_space.contains(obs)
    _, rew, terminated, truncated, _ = env.step(env.action_space.sample())
    assert np.isfinite(float(rew)) and not terminated and not truncated
    env.close()


def test_flatten_keeps_sorted_key_order_and_refuses_other_spaces() -> None:
    env = make_env(ENV)
    assert isinstance(env, FlattenBoxDict)  # the outermost wrapper
    inner = env.unwrapped
    inner.reset(seed=3)
    parts = inner.step(np.zeros(1))[0]  # a dict {"position": [3], "velocity": [2]}
    flat = env.observation(parts)
    np.testing.assert_allclose(flat, np.concatenate([parts["position"], parts["velocity"]]), rtol=1e-6)
    with pytest.raises(ValueError, match="Dict of Box"):
        FlattenBoxDict(gym.make("Pendulum-v1"))
    env.close()


def test_episodes_end_by_truncation_after_1000_steps() -> None:
    env = make_env(ENV)
    env.reset(seed=0)
    t = -1
    for t in range(1000):  # noqa: B007  (t is the step that ended the episode)
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        assert not terminated
        if truncated:
            break
    assert t == 999 and truncated
    env.close()


def test_headless_render_gives_frames() -> None:
    env = make_env(ENV, render=True)
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray)
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 0
    env.close()


def test_train_resume_and_evaluate_a_dmc_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    args = ["train", "--env.id", ENV, "--run-dir", str(run), "--no-progress", "--eval-episodes", "1"]
    args += ["--no-page"]  # the run's HTML page renders four 1,000-step episodes: minutes here
    args += ["--loop.total-steps", "1600", "--loop.initial-steps", "500", "--loop.iterations", "2"]
    args += ["--loop.total-labels", "8", "--loop.fragment-length", "20", "--agent.batch-size", "32"]
    assert main(args) == 0
    rep = json.loads((run / "report.json").read_text())
    assert rep["env_steps"] == 1600 and rep["labels_used"] == 8
    assert not (run / "report").exists() and "page" not in rep["files"]  # --no-page
    assert sorted(
        p.name for p in (run / "checkpoints").iterdir()
    )  # the replay buffer was relabelled and saved
    # a resume of a finished run loads its checkpoint (policy, flat replay buffer) and reports again
    assert main(["train", "--resume", str(run), "--no-progress", "--no-page"]) == 0
    assert json.loads((run / "report.json").read_text())["resumed"] is True
    assert main(["evaluate", str(run), "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert '"env": "dm_control/cartpole-swingup-v0"' in out
