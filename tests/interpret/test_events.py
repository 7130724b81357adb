"""prefrl interpret events: a reward that charges an event is told from one whose surroundings pay
the event's value back."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from prefrl.cli.interpret import main as interpret_main
from prefrl.data import Trajectory, TrajectoryBatch
from prefrl.interpret.events import event_profiles, plot_event_profiles
from prefrl.interpret.supervised import SupervisedConfig, fit_supervised
from prefrl.rewards import MLPReward, save_reward_net

PHASES = 16


def _episodes(seed: int, n: int = 12, length: int = 200) -> TrajectoryBatch:
    """Episodes where an event (true reward -1) comes every 8 to 20 steps; each observation is a
    one-hot of the steps since the last event (capped), so a reward can key on any offset after it."""
    rng = np.random.default_rng(seed)
    trajs = []
    for _ in range(n):
        since = np.zeros(length + 1, dtype=np.int64)
        gap, t_last = int(rng.integers(8, 21)), 0  # each episode opens with an event
        for t in range(length + 1):
            if t - t_last >= gap:
                t_last, gap = t, int(rng.integers(8, 21))
            since[t] = min(t - t_last, PHASES - 1)
        obs = np.eye(PHASES, dtype=np.float32)[since]
        rews = np.where(since[:-1] == 0, -1.0, 0.0).astype(np.float32)
        trajs.append(Trajectory(obs=obs, acts=rng.integers(0, 2, length), rews=rews, truncated=True))
    return TrajectoryBatch.from_trajectories(trajs)


def _fitted(batch: TrajectoryBatch, target: np.ndarray) -> MLPReward:
    """A reward fitted by regression to ``target`` ``[S]`` (one value per row)."""
    torch.manual_seed(0)
    space = gym.spaces.Box(0.0, 1.0, (PHASES,), np.float32)
    net = MLPReward(space, gym.spaces.Discrete(2), hidden=(32,), use_act=False)
    fit_supervised(
        net, dataclasses.replace(batch, rews=target.astype(np.float32)), SupervisedConfig(epochs=60)
    )
    return net.eval()


@pytest.fixture(scope="module")
def batch() -> TrajectoryBatch:
    return _episodes(0)


def _only(res: dict[str, object]) -> dict[str, Any]:
    """The one event profile of ``res``."""
    events = res["events"]
    assert isinstance(events, list) and len(events) == 1
    return events[0]


def _since(batch: TrajectoryBatch) -> np.ndarray:
    return np.argmax(batch.obs, axis=1)


def test_a_reward_that_charges_the_event_keeps_its_value_and_one_that_pays_it_back_does_not(
    batch: TrajectoryBatch, tmp_path: Path, png_ok: Callable[..., np.ndarray]
) -> None:
    assert batch.rews is not None
    right = event_profiles(_fitted(batch, batch.rews), batch, window=12)
    ev = _only(right)
    assert ev["value"] == -1.0 and ev["count"] == int((batch.rews == -1).sum())
    assert ev["peak_offset"] == 0 and ev["peak"] < 0
    assert ev["true"][12] < 0 and abs(sum(ev["true"]) - ev["true"][12]) < 1e-6  # the true reward: a spike
    assert ev["kept"] > 0.8, ev["kept"]
    explained = right["explained"]
    assert isinstance(explained, float) and explained > 0.9  # the events and nothing else
    assert "keeps" in right["verdict"][0] and "pay" not in right["verdict"][0]  # type: ignore[index]

    since = _since(batch)
    paid_back = np.where(since == 0, -1.0, np.where(since == 5, 1.0, 0.0))  # +1 five steps after each
    wrong = event_profiles(_fitted(batch, paid_back), batch, window=12)
    ev = _only(wrong)
    assert ev["peak"] < 0 and ev["peak_offset"] == 0  # marked, then paid back five steps on
    assert ev["learned"][12 + 5] > 0.5 * abs(ev["learned"][12])  # the payback five steps on
    assert abs(ev["kept"]) < 0.25, ev["kept"]
    assert "pay it back" in wrong["verdict"][0]  # type: ignore[index]
    png_ok(plot_event_profiles(wrong, tmp_path / "e.png"))


def test_events_need_a_sparse_true_reward(batch: TrajectoryBatch) -> None:
    assert batch.rews is not None
    net = _fitted(batch, batch.rews)
    dense = dataclasses.replace(batch, rews=np.linspace(0, 1, len(batch.acts), dtype=np.float32))
    with pytest.raises(ValueError, match="dense"):
        event_profiles(net, dense)
    with pytest.raises(ValueError, match="no events"):
        event_profiles(net, dataclasses.replace(batch, rews=np.zeros_like(batch.rews)))
    with pytest.raises(ValueError, match="true rewards"):
        event_profiles(net, dataclasses.replace(batch, rews=None))
    with pytest.raises(ValueError, match="window"):
        event_profiles(net, batch, window=0)


def test_the_command_writes_the_profiles_and_refuses_a_dense_reward(
    batch: TrajectoryBatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert batch.rews is not None
    reward = save_reward_net(_fitted(batch, batch.rews), tmp_path / "reward.safetensors")
    file = batch.save(tmp_path / "rollouts.npz")
    out = tmp_path / "out"
    argv = [
        "events",
        "--reward",
        str(reward),
        "--trajectories",
        str(file),
        "--window",
        "10",
        "--out",
        str(out),
    ]
    assert interpret_main(argv) == 0
    res = json.loads((out / "events.json").read_text())
    assert res["window"] == 10 and len(res["events"][0]["learned"]) == 21 and (out / "events.png").exists()
    assert json.loads(capsys.readouterr().out)["verdict"] == res["verdict"]
    dense = dataclasses.replace(batch, rews=np.linspace(0, 1, len(batch.acts), dtype=np.float32))
    argv[argv.index(str(file))] = str(dense.save(tmp_path / "dense.npz"))
    assert interpret_main(argv) == 2 and "dense" in capsys.readouterr().err
