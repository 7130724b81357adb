"""prefrl interpret policies: a reward that misranks behaviour is told from an agent that did not
optimise a right one."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
import torch

from prefrl.agents.rollout import collect_episodes
from prefrl.cli.interpret import main as interpret_main
from prefrl.data import Trajectory, TrajectoryBatch
from prefrl.envs.gridworld import GridWorldEnv
from prefrl.interpret.policies import plot_policy_ranking, rank_policies
from prefrl.interpret.supervised import SupervisedConfig, fit_supervised
from prefrl.rewards import MLPReward, save_reward_net


def _split(batch: TrajectoryBatch) -> dict[str, TrajectoryBatch]:
    """Two 'policies': the random episodes paid most and least per step by the true reward."""
    assert batch.rews is not None
    per_step = batch.episode_returns() / np.maximum(batch.lengths, 1)
    order = np.argsort(per_step)
    half = len(order) // 2
    pick = lambda idx: TrajectoryBatch.from_trajectories([batch.episode(int(i)) for i in idx])  # noqa: E731
    return {"better": pick(order[half:]), "worse": pick(order[:half])}


def _fitted(env: GridWorldEnv, batch: TrajectoryBatch, sign: float) -> MLPReward:
    torch.manual_seed(0)
    net = MLPReward(env.observation_space, env.action_space, hidden=(32,), use_next_obs=True)
    assert batch.rews is not None
    target = dataclasses.replace(batch, rews=(sign * batch.rews).astype(np.float32))
    fit_supervised(net, target, SupervisedConfig(epochs=30, seed=0))
    return net.eval()


def _collect(env: GridWorldEnv, seed: int) -> TrajectoryBatch:
    return collect_episodes(env, n_episodes=40, seed=seed)


def test_a_right_reward_agrees_with_the_true_ranking_and_a_wrong_one_is_named(
    grid_env: GridWorldEnv, tmp_path: Path, png_ok: Callable[..., np.ndarray]
) -> None:
    batch = TrajectoryBatch.concat([_collect(grid_env, seed) for seed in range(3)])  # two clear halves
    pols = _split(batch)
    right = rank_policies(_fitted(grid_env, batch, 1.0), pols)
    assert right["order_true"] == ["better", "worse"] and right["order_learned"] == ["better", "worse"]
    assert right["misranked"] == [] and right["agreement"] == 1.0
    assert "ranks these policies as the true reward does" in str(right["verdict"])

    wrong = rank_policies(_fitted(grid_env, batch, -1.0), pols)  # pays what the true reward charges
    assert wrong["order_learned"] == ["worse", "better"]
    assert wrong["misranked"] == ["worse over better"] and wrong["agreement"] == 0.0
    assert "misranks" in str(wrong["verdict"])
    png_ok(plot_policy_ranking(wrong, tmp_path / "p.png"))


def test_the_command_ranks_trajectory_files_and_refuses_what_it_cannot_rank(
    grid_env: GridWorldEnv, grid_batch: TrajectoryBatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reward = save_reward_net(_fitted(grid_env, grid_batch, 1.0), tmp_path / "reward.safetensors")
    files = [b.save(tmp_path / f"{name}.npz") for name, b in _split(grid_batch).items()]
    out = tmp_path / "out"
    argv = ["policies", "--reward", str(reward), "--out", str(out), "--compare", *map(str, files)]
    assert interpret_main(argv) == 0
    res = json.loads((out / "policies.json").read_text())
    assert {p["name"] for p in res["policies"]} == {"better", "worse"} and (out / "policies.png").exists()
    assert json.loads(capsys.readouterr().out)["order_learned"] == res["order_learned"]
    assert interpret_main(["policies", "--reward", str(reward), "--compare", str(files[0])]) == 2
    assert "at least 2 policies" in capsys.readouterr().err
    same = ["policies", "--reward", str(reward), "--compare", str(files[0]), str(files[0])]
    assert interpret_main(same) == 2 and "distinct names" in capsys.readouterr().err


def _line(lo: float, hi: float, sign: float, seed: int) -> TrajectoryBatch:
    """Episodes of a 1-D walk within [lo, hi]; the true reward is the state (``sign`` x it)."""
    rng = np.random.default_rng(seed)
    eps = []
    for _ in range(8):
        obs = rng.uniform(lo, hi, size=(21, 1)).astype(np.float32)
        acts = rng.uniform(-1, 1, size=(20, 1)).astype(np.float32)
        eps.append(Trajectory(obs, acts, (sign * obs[1:, 0]).astype(np.float32), truncated=True))
    return TrajectoryBatch.from_trajectories(eps)


def test_the_members_disagreement_names_behaviour_the_labels_did_not_cover() -> None:
    """Each policy gets the ensemble's disagreement on its steps. A reward fitted where one policy
    walks, paying it over a better policy whose states it never saw, disagrees most on that one,
    and the verdict says so; members that are copies of one another disagree nowhere."""
    from gymnasium import spaces

    box = spaces.Box(-10.0, 10.0, (1,), np.float32)
    torch.manual_seed(0)
    net = MLPReward(box, box, hidden=(32, 32), use_next_obs=True, ensemble_size=3)
    fit_supervised(net, _line(0.0, 1.0, -1.0, seed=0), SupervisedConfig(epochs=60, seed=0))  # pays low states
    pols = {"near": _line(0.0, 1.0, 1.0, seed=1), "far": _line(6.0, 8.0, 1.0, seed=2)}  # far is better
    out = rank_policies(net.eval(), pols)
    spread = {p["name"]: p["learned_disagreement"] for p in cast(list[dict[str, Any]], out["policies"])}
    assert spread["far"] > 3 * spread["near"] > 0
    assert out["misranked"] == ["near over far"]
    assert "members disagree most on far" in str(out["verdict"])
    with torch.no_grad():  # every member a copy of the first: no disagreement, no such clause
        for param in net.parameters():
            if param.dim() and param.shape[0] == 3:
                param[1:] = param[:1]
    same = rank_policies(net, pols)
    scores = cast(list[dict[str, Any]], same["policies"])
    assert all(p["learned_disagreement"] == pytest.approx(0.0, abs=1e-6) for p in scores)
    assert same["misranked"] == ["near over far"] and "disagree" not in str(same["verdict"])
