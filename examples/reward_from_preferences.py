"""Learn Pendulum-v1's reward from 300 oracle preferences over random behaviour (no agent).

Run: python examples/reward_from_preferences.py [--pairs 300]
Prints held-out preference accuracy and the correlation of learned and true per-step reward.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

from prefrl.agents.rollout import collect_episodes
from prefrl.data import PreferenceDataset, random_pairs, sample_fragments
from prefrl.preference import RewardTrainer, RewardTrainerConfig, evaluate_preferences
from prefrl.rewards import MLPReward
from prefrl.teachers import SyntheticTeacher


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pairs", type=int, default=300, help="labelled pairs to train on")
    p.add_argument("--epochs", type=float, default=30, help="training epochs")
    args = p.parse_args()
    env = gym.make("Pendulum-v1")
    rng = np.random.default_rng(0)
    episodes = collect_episodes(env, n_episodes=40, seed=0)  # random policy, 8,000 steps
    fragments, _ = sample_fragments(episodes, 4 * args.pairs, length=50, rng=rng)
    pairs = random_pairs(len(fragments), 2 * args.pairs, rng)  # [2P, 2]
    teacher = SyntheticTeacher("oracle")
    labels = teacher.label(fragments, pairs)  # [2P] in {0, 0.5, 1}
    train, test = slice(0, args.pairs), slice(args.pairs, None)

    dataset = PreferenceDataset()
    dataset.add(fragments, pairs[train], labels[train])
    net = MLPReward(env.observation_space, env.action_space, ensemble_size=3)
    metrics = RewardTrainer(net, RewardTrainerConfig(epochs=args.epochs)).train(dataset)

    held_out = evaluate_preferences(net, fragments, pairs[test], labels[test])
    rows = episodes.step_rows  # every real transition
    mean, std = net.predict(episodes.obs[rows], episodes.acts[rows], episodes.obs[rows + 1])
    pearson = np.corrcoef(mean, episodes.rews[rows])[0, 1]
    print(f"trained on {len(dataset)} pairs at {metrics['comparisons_per_s']:.0f} comparisons/s")
    print(f"held-out preference accuracy: {held_out['accuracy']:.3f}")
    print(f"Pearson(learned, true) per step: {pearson:.3f}; mean ensemble std {std.mean():.3f}")


if __name__ == "__main__":
    main()
