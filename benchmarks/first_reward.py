"""Offline probe of the loop's first reward: does it rank a good policy above random behaviour?

    python benchmarks/first_reward.py --env HalfCheetah-v5 --policy run/policy.zip --draws 12

Each draw does what ``prefrl train`` does before any agent training, with its defaults: it
collects ``--initial-steps`` of random actions, asks ``--labels`` oracle comparisons of
uniformly drawn clip pairs, and fits the default reward ensemble (the reward reading s')
with the first update's longer training. The reward is then scored on clips it never saw:
``cross_accuracy`` is the share of (policy clip, random clip) pairs where it prefers the
policy's clip (did it learn which way is better?), ``random_accuracy`` the share of random
clip pairs it orders as the true reward does. Prints one JSON object per draw and a summary
as the last line. ``--policy`` is any policy saved by a run (``policy.zip``, prefrl's format) that does
better than random on the true reward.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from prefrl.agents.policy_io import load_agent
from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import ALGOS, make_vec_env
from prefrl.data import sample_fragments
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments
from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig
from prefrl.rewards.config import RewardNetConfig
from prefrl.selection import ensemble_logits
from prefrl.teachers.synthetic import SyntheticTeacher
from prefrl.training.config import LoopConfig

EVAL_CLIPS = 100
"""Clips of each behaviour the reward is scored on."""


def draw(
    env: gym.Env,
    seed: int,
    labels: int,
    initial_steps: int,
    length: int,
    reward: dict[str, Any] | None = None,
    trainer: dict[str, Any] | None = None,
) -> torch.nn.Module:
    """The first reward of one run: random clips, oracle labels, the first (longer) fit;
    ``reward`` and ``trainer`` override fields of ``RewardNetConfig`` and ``RewardTrainerConfig``."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    batch = collect_episodes(env, n_steps=initial_steps, seed=seed)
    frags, _ = sample_fragments(batch, 2 * labels, length, rng, replace=None)
    pairs = rng.permutation(2 * labels).reshape(-1, 2)
    data = PreferenceDataset()
    data.add(frags, pairs, SyntheticTeacher("oracle").label(frags, pairs))
    net = RewardNetConfig(**{"use_next_obs": True, **(reward or {})}).build(
        env.observation_space, env.action_space
    )
    trainer_cfg = RewardTrainerConfig(**{"seed": seed, **(trainer or {})})
    RewardTrainer(net, trainer_cfg).train(data, LoopConfig().initial_epoch_multiplier)
    return net


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="HalfCheetah-v5", help="Gymnasium environment id")
    p.add_argument("--policy", required=True, help="a run's policy.zip that beats random behaviour")
    p.add_argument("--algo", default="sac", choices=sorted(ALGOS), help="the agent that saved --policy")
    p.add_argument("--labels", type=int, default=15, help="labels of the first update (30%% of 50)")
    p.add_argument("--initial-steps", type=int, default=1000, help="random steps before the first query")
    p.add_argument("--fragment-length", type=int, default=50, help="transitions per clip")
    p.add_argument("--draws", type=int, default=12, help="independent first rewards (seeds 0..N-1)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    env = gym.make(a.env)
    try:
        policy = load_agent(a.algo, a.policy, make_vec_env(a.env))
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(str(e)) from None
    steps = EVAL_CLIPS * a.fragment_length
    good = collect_episodes(env, n_steps=steps, policy=lambda o: policy.predict(o)[0], seed=10_001)
    rand = collect_episodes(env, n_steps=steps, seed=10_002)
    rng = np.random.default_rng(10_003)
    sampled = [sample_fragments(b, EVAL_CLIPS, a.fragment_length, rng)[0] for b in (good, rand)]
    clips = Fragments.concat(sampled)  # [policy clips, random clips]
    returns = SyntheticTeacher("oracle").returns(clips)
    cross = np.stack([np.arange(EVAL_CLIPS), EVAL_CLIPS + np.arange(EVAL_CLIPS)], 1)  # [100, 2]
    within = rng.integers(EVAL_CLIPS, 2 * EVAL_CLIPS, (3 * EVAL_CLIPS, 2))
    within = within[within[:, 0] != within[:, 1]]  # [m, 2] random against random
    out = []
    for seed in range(a.draws):
        net = draw(env, seed, a.labels, a.initial_steps, a.fragment_length)
        with torch.no_grad():
            lc = ensemble_logits(net, clips, cross).mean(0).numpy()
            lw = ensemble_logits(net, clips, within).mean(0).numpy()
        truth = np.sign(returns[within[:, 0]] - returns[within[:, 1]])
        row = {"draw": seed, "cross_accuracy": float(np.mean(lc > 0)),
               "random_accuracy": float(np.mean(np.sign(lw) == truth))}  # fmt: skip
        print(json.dumps(row), flush=True)
        out.append(row)
    cross_acc = [r["cross_accuracy"] for r in out]
    print(json.dumps({
        "env": a.env, "labels": a.labels, "draws": a.draws,
        "cross_accuracy_mean": float(np.mean(cross_acc)),
        "draws_preferring_random": int(sum(c < 0.5 for c in cross_acc)),
        "random_accuracy_mean": float(np.mean([r["random_accuracy"] for r in out])),
        "policy_clip_return": float(returns[:EVAL_CLIPS].mean()),
        "random_clip_return": float(returns[EVAL_CLIPS:].mean()),
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
