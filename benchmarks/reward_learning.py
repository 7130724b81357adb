"""Speed of the core engine: reward training, ensemble training, query selection, images.

Measured on Pendulum-v1-sized data (obs 3, act 1, fragments of L=50, 1000 labelled pairs,
batch 32, a 32x32 MLP on obs+act), an ensemble of 5 trained in one batched pass,
disagreement selection with an ensemble of 3 picking 100 of 1000 candidate pairs, and
a CNN reward on 84x84x4 uint8 fragments (L=25, 200 pairs), and the keypoint CNN reward that
``prefrl train`` picks for the moving dot (40x40x3 frames of random episodes, reading the
displacement to s', an ensemble of 3 with bootstrap, L=10, 400 pairs). Each figure is the median
over several epochs (or repeats). With ``--imitation-python`` the same sizes are also run
through imitation 1.0.1 (in its own virtual environment), interleaved with prefrl's runs
so both see the same machine load, and the ratios are reported.

The last line printed is one JSON object.

Example:
    python benchmarks/reward_learning.py --threads 1 2 --imitation-python ../imitation-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces

from prefrl.data import PreferenceDataset, Trajectory, TrajectoryBatch, random_pairs, sample_fragments
from prefrl.preference import RewardTrainer, RewardTrainerConfig
from prefrl.rewards import CNNReward, MLPReward
from prefrl.rewards.cnn import cnn_architecture
from prefrl.selection import DisagreementSelector
from prefrl.teachers import SyntheticTeacher

OBS = spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = spaces.Box(-2.0, 2.0, (1,), np.float32)


def pendulum_sized(n_episodes: int, rng: np.random.Generator) -> TrajectoryBatch:
    """Episodes of 200 steps with obs 3, act 1 (the shapes of Pendulum-v1)."""
    trajs = []
    for _ in range(n_episodes):
        obs = rng.normal(size=(201, 3)).astype(np.float32)
        acts = rng.uniform(-2, 2, size=(200, 1)).astype(np.float32)
        trajs.append(Trajectory(obs=obs, acts=acts, rews=-(obs[:-1] ** 2).sum(1).astype(np.float32)))
    return TrajectoryBatch.from_trajectories(trajs)


def image_batch(n_episodes: int, rng: np.random.Generator) -> TrajectoryBatch:
    """Episodes of 100 steps of 84x84x4 uint8 frames, 6 discrete actions."""
    trajs = []
    for _ in range(n_episodes):
        obs = rng.integers(0, 256, size=(101, 84, 84, 4), dtype=np.uint8)
        trajs.append(
            Trajectory(obs=obs, acts=rng.integers(0, 6, 100), rews=rng.normal(size=100).astype(np.float32))
        )
    return TrajectoryBatch.from_trajectories(trajs)


def moving_dot_batch(n_episodes: int) -> TrajectoryBatch:
    """Random-action episodes of ``prefrl/MovingDot-v0`` (200 steps of 40x40x3 frames)."""
    import gymnasium as gym

    import prefrl  # noqa: F401  (registers the environment)

    env, rng, trajs = gym.make("prefrl/MovingDot-v0"), np.random.default_rng(0), []
    for i in range(n_episodes):
        frames, acts, rews = [env.reset(seed=i)[0]], [], []
        for _ in range(200):
            acts.append(int(rng.integers(5)))
            obs, r, *_ = env.step(acts[-1])
            frames.append(obs)
            rews.append(r)
        trajs.append(Trajectory(np.array(frames), np.array(acts), np.array(rews, np.float32), truncated=True))
    return TrajectoryBatch.from_trajectories(trajs)


def labelled(
    batch: TrajectoryBatch, n_pairs: int, length: int, rng: np.random.Generator
) -> PreferenceDataset:
    frags, _ = sample_fragments(batch, 2 * n_pairs, length, rng)
    pairs = np.arange(2 * n_pairs).reshape(-1, 2)
    ds = PreferenceDataset()
    ds.add(frags, pairs, SyntheticTeacher("oracle").label(frags, pairs))
    return ds


def train_speed(net: torch.nn.Module, ds: PreferenceDataset, epochs: int, batch_size: int = 32) -> float:
    """Median comparisons per second over ``epochs`` one-epoch training calls (after a warm-up)."""
    trainer = RewardTrainer(net, RewardTrainerConfig(batch_size=batch_size, epochs=1, val_fraction=0.0))
    trainer.train(ds)  # warm-up: allocations, normalisation statistics
    rates = []
    for _ in range(epochs):
        t = time.perf_counter()
        trainer.train(ds)
        rates.append(len(ds) / (time.perf_counter() - t))
    return statistics.median(rates)


def selection_speed(batch: TrajectoryBatch, repeats: int, rng: np.random.Generator) -> float:
    """Candidate pairs scored per second: an ensemble of 3 picks 100 of 1000 (includes sampling)."""
    net = MLPReward(OBS, ACT, ensemble_size=3)
    selector = DisagreementSelector(net, "logit", rng=rng)
    rates = []
    for _ in range(repeats + 1):
        t = time.perf_counter()
        frags, _ = sample_fragments(batch, 2000, 50, rng)
        cands = random_pairs(len(frags), 1000, rng)
        selector.select(frags, cands, 100)
        rates.append(1000 / (time.perf_counter() - t))
    return statistics.median(rates[1:])


def run_prefrl(threads: int, epochs: int) -> dict[str, float]:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    batch = pendulum_sized(100, rng)
    ds = labelled(batch, 1000, 50, rng)
    out = {
        "single.comparisons_per_s": train_speed(MLPReward(OBS, ACT), ds, epochs),
        "ensemble5.comparisons_per_s": train_speed(MLPReward(OBS, ACT, ensemble_size=5), ds, epochs),
        "selection.candidate_pairs_per_s": selection_speed(batch, epochs, rng),
    }
    img = image_batch(12, rng)
    img_ds = labelled(img, 200, 25, rng)
    cnn = CNNReward(spaces.Box(0, 255, (84, 84, 4), np.uint8), spaces.Discrete(6))
    out["image.comparisons_per_s"] = train_speed(cnn, img_ds, max(2, epochs // 2))
    dots = moving_dot_batch(20)
    kp_space = spaces.Box(0, 255, (40, 40, 3), np.uint8)
    kp = CNNReward(kp_space, spaces.Discrete(5), ensemble_size=3, use_next_obs=True, features="spatial",
                   **cnn_architecture(kp_space, features="spatial"))  # fmt: skip
    out["keypoints.comparisons_per_s"] = train_speed(kp, labelled(dots, 400, 10, rng), max(2, epochs // 2))
    return out


def run_imitation(python: str, threads: int, repeats: int) -> dict[str, float]:
    script = Path(__file__).with_name("imitation_baseline.py")
    res = subprocess.run(
        [python, str(script), "--threads", str(threads), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2], help="thread counts to try; best is kept"
    )
    p.add_argument("--epochs", type=int, default=7, help="timed epochs (repeats) per figure; median reported")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds of prefrl and imitation runs")
    p.add_argument(
        "--imitation-python",
        default=None,
        help="python of a virtual env with imitation==1.0.1, to measure it side by side and report ratios",
    )
    args = p.parse_args()
    best: dict[str, float] = {}
    best_threads: dict[str, int] = {}
    imit: dict[str, list[float]] = {}
    per_round: list[dict[str, float]] = []
    for _ in range(args.rounds):
        for th in args.threads:
            res = run_prefrl(th, args.epochs)
            per_round.append({**res, "threads": th})
            print(json.dumps({"prefrl": res, "threads": th}), file=sys.stderr)
            for k, v in res.items():
                if v > best.get(k, 0.0):
                    best[k], best_threads[k] = v, th
        if args.imitation_python:
            for th in args.threads:
                r = run_imitation(args.imitation_python, th, 3)
                print(json.dumps({"imitation": r, "threads": th}), file=sys.stderr)
                for k, v in r.items():
                    imit.setdefault(k, []).append(v)
    out: dict[str, object] = dict(best)
    out["threads"] = best_threads
    if imit:
        ib = {k: max(v) for k, v in imit.items()}
        out["imitation"] = ib
        out["ratio.single"] = best["single.comparisons_per_s"] / ib["single.comparisons_per_s"]
        out["ratio.ensemble5_vs_imitation_ensemble3"] = (
            best["ensemble5.comparisons_per_s"] / ib["ensemble3.comparisons_per_s"]
        )
        out["ratio.selection"] = (
            best["selection.candidate_pairs_per_s"] / ib["selection.candidate_pairs_per_s"]
        )
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["torch"] = torch.__version__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
