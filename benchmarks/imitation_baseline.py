"""imitation 1.0.1 on the same Pendulum-sized data, for side-by-side ratios.

Run with the Python of a separate virtual environment that has ``imitation==1.0.1``
(see ``reward_learning.py --imitation-python``); prints one JSON object as its last line.
Nothing from imitation is imported by prefrl itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import gymnasium as gym
import numpy as np
import torch
from imitation.algorithms import preference_comparisons as pc
from imitation.data.types import TrajectoryWithRew
from imitation.rewards.reward_nets import BasicRewardNet, RewardEnsemble


def pendulum_sized_trajectories(n: int, rng: np.random.Generator) -> list[TrajectoryWithRew]:
    """``n`` episodes of 200 steps with obs 3, act 1, like Pendulum-v1."""
    out = []
    for _ in range(n):
        obs = rng.normal(size=(201, 3)).astype(np.float32)
        acts = rng.uniform(-2, 2, size=(200, 1)).astype(np.float32)
        rews = -(obs[:-1] ** 2).sum(1).astype(np.float32)
        out.append(TrajectoryWithRew(obs=obs, acts=acts, infos=None, terminal=False, rews=rews))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--pairs", type=int, default=1000)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    act_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    trajs = pendulum_sized_trajectories(100, rng)
    fragmenter = pc.RandomFragmenter(rng=rng, warning_threshold=0)
    pairs = fragmenter(trajs, fragment_length=50, num_pairs=args.pairs)
    labels = pc.SyntheticGatherer(rng=rng)(pairs)
    dataset = pc.PreferenceDataset()
    dataset.push(pairs, labels)
    out: dict[str, float] = {}

    model = pc.PreferenceModel(BasicRewardNet(obs_space, act_space))
    trainer = pc.BasicRewardTrainer(model, pc.CrossEntropyRewardLoss(), rng=rng, batch_size=32, epochs=1)
    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        trainer.train(dataset)
        times.append(time.perf_counter() - t)
    out["single.comparisons_per_s"] = args.pairs / statistics.median(times)

    members = [BasicRewardNet(obs_space, act_space) for _ in range(3)]
    ens_model = pc.PreferenceModel(RewardEnsemble(obs_space, act_space, members))
    ens_trainer = pc.EnsembleTrainer(ens_model, pc.CrossEntropyRewardLoss(), rng=rng, batch_size=32, epochs=1)
    times = []
    for _ in range(max(1, args.repeats - 1)):
        t = time.perf_counter()
        ens_trainer.train(dataset)
        times.append(time.perf_counter() - t)
    out["ensemble3.comparisons_per_s"] = args.pairs / statistics.median(times)

    selector = pc.ActiveSelectionFragmenter(ens_model, fragmenter, fragment_sample_factor=10)
    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        selector(trajs, fragment_length=50, num_pairs=100)
        times.append(time.perf_counter() - t)
    out["selection.candidate_pairs_per_s"] = 1000 / statistics.median(times)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
