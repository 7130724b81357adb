"""Offline probe of image rewards: which network and augmentation learn most from few labels?

    python benchmarks/image_reward.py --env prefrl/MovingDot-v0 --labels 200 --fragment-length 10 \
        --variants default shift shared shared+shift --draws 3

Each draw collects random-action episodes of ``--env`` (prefrl's preprocessing: Atari games as
84x84 grayscale stacks of 4 with the score hidden), asks ``--labels`` oracle comparisons of
uniformly drawn clip pairs, and fits the default CNN reward ensemble of ``prefrl train`` with
each variant, the same pairs and the same number of optimiser steps (``--steps``, the fair
comparison when compute is what binds):

* ``default``: prefrl's CNN reward as ``prefrl train`` builds it;
* ``shift``: the same, trained with random-shift augmentation (``--trainer.image-shift``);
* ``shared``: the ensemble on one convolution trunk (``--reward.cnn-shared-trunk``; flat
  features, which it needs);
* ``flat``: the default members with flat features (the ``shared`` variant's own baseline);
* ``tanh``: the reward's output squashed by tanh (``--reward.output tanh``; the others are
  linear, as ``auto`` makes every flat CNN: a tanh there saturated on Pong);
* ``reed``: REED on images (``--reward.kind reed``): the network's image features first train
  on the self-predictive objective over every transition of the random episodes the clips come
  from (``--spr-steps`` updates; no labels), then the preference fit as the others;
* ``+`` joins variants (``shared+shift``).

The reward is then scored on clips of other random episodes: ``accuracy`` is the share of
non-tied held-out pairs it orders as the true reward does, ``pearson`` its per-step correlation
with the true reward, ``fit_s`` the seconds its fitting took, ``train_accuracy`` the share of its
labelled pairs it orders as labelled (at the fit's last epoch) and ``saturated`` the share of
its per-step rewards a tanh output holds at +-1 (0 for linear). Prints one JSON object per
draw and variant, and a summary (median over draws) as the last line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any

import numpy as np
import torch

from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import make_env
from prefrl.data import sample_fragments
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import random_pairs
from prefrl.preference.self_predictive import SelfPredictiveConfig, SelfPredictiveTrainer, has_self_predictive
from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig
from prefrl.rewards.config import RewardNetConfig
from prefrl.rewards.encode import fragment_rewards
from prefrl.teachers.synthetic import SyntheticTeacher

PARTS = ("default", "shift", "shared", "flat", "reed", "tanh")
"""The parts a variant joins with ``+``."""
SHIFT = 4
"""Pixels of the ``shift`` variant (DrQ's 4 on 84-pixel frames), scaled down for smaller frames."""


def variant_configs(
    name: str, height: int, steps: int, seed: int
) -> tuple[RewardNetConfig, RewardTrainerConfig]:
    """The reward network and trainer configs of a variant (``+``-joined parts)."""
    parts = set(name.split("+"))
    unknown = parts - set(PARTS)
    if unknown:
        raise SystemExit(f"unknown variant part(s) {sorted(unknown)}: use {', '.join(PARTS)}")
    output = "tanh" if "tanh" in parts else "linear"
    net = RewardNetConfig(kind="reed" if "reed" in parts else "cnn", output=output)
    if "shared" in parts or "flat" in parts:
        net = dataclasses.replace(net, cnn_features="flat", cnn_shared_trunk="shared" in parts)
    shift = max(1, round(SHIFT * height / 84)) if "shift" in parts else 0
    trainer = RewardTrainerConfig(epochs=1e6, max_steps=steps, image_shift=shift, seed=seed)
    return net, trainer


def saturated(net: Any, clips: Any) -> float:
    """Share of the members' per-step rewards of ``clips`` that a tanh output holds within 0.001 of
    +-1, where its gradient is all but gone (0 for a linear output)."""
    if net.output != "tanh":
        return 0.0
    return float((np.abs(fragment_rewards(net, clips).cpu().numpy()) > 0.999).mean())


def draw(a: argparse.Namespace, seed: int) -> list[dict[str, Any]]:
    """One draw: the same labelled pairs and held-out clips for every variant."""
    env = make_env(a.env, a.env_kwargs)
    rng = np.random.default_rng(seed)
    train_eps = collect_episodes(env, n_steps=a.train_steps, seed=seed)
    test_eps = collect_episodes(env, n_steps=a.test_steps, seed=10_000 + seed)
    frags, _ = sample_fragments(train_eps, 2 * a.labels, a.fragment_length, rng)
    pairs = np.arange(2 * a.labels).reshape(-1, 2)
    teacher = SyntheticTeacher("oracle")
    data = PreferenceDataset()
    data.add(frags, pairs, teacher.label(frags, pairs))
    test, _ = sample_fragments(test_eps, 2 * a.eval_pairs, a.fragment_length, rng)
    test_pairs = random_pairs(len(test), a.eval_pairs, rng)
    test_rews = test.arrays().rews  # [N, L] true per-step rewards
    true = test_rews.sum(-1)  # [N] true clip returns
    strict = true[test_pairs[:, 0]] != true[test_pairs[:, 1]]
    out = []
    height = int(env.observation_space.shape[-2])  # [C, H, W] or [H, W, C]: a side either way
    for name in a.variants:
        net_cfg, tr_cfg = variant_configs(name, height, a.steps, seed)
        torch.manual_seed(seed)
        net = net_cfg.resolved(env.observation_space, env.action_space).build(
            env.observation_space, env.action_space
        )
        t0 = time.perf_counter()
        fit = RewardTrainer(net, tr_cfg)  # built first, as in the loop: its flat buffer aliases the net
        if has_self_predictive(net):
            rows = train_eps.step_rows
            spr = SelfPredictiveTrainer(net, SelfPredictiveConfig(steps=a.spr_steps, seed=seed))
            spr.train(train_eps.obs[rows], train_eps.acts[rows], train_eps.obs[rows + 1])
        train_accuracy = fit.train(data)["train_accuracy"]
        fit_s = time.perf_counter() - t0
        pred = fragment_rewards(net, test).mean(0).cpu().numpy()  # [N, L]
        ret = pred.sum(-1)
        first, second = test_pairs[strict, 0], test_pairs[strict, 1]
        right = np.sign(ret[first] - ret[second]) == np.sign(true[first] - true[second])
        steps_true, steps_pred = test_rews.reshape(-1), pred.reshape(-1)
        pearson = float(np.corrcoef(steps_pred, steps_true)[0, 1]) if steps_true.std() > 0 else float("nan")
        out.append({"env": a.env, "variant": name, "seed": seed, "labels": a.labels, "steps": a.steps,
                    "accuracy": float(right.mean()), "pearson": pearson, "fit_s": fit_s,
                    "train_accuracy": train_accuracy, "saturated": saturated(net, test),
                    "held_out_pairs": int(strict.sum())})  # fmt: skip
        print(json.dumps(out[-1]), flush=True)
    env.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="prefrl/MovingDot-v0", help="an environment with image observations")
    p.add_argument("--env-kwargs", type=json.loads, default={}, help="its keyword arguments (JSON)")
    p.add_argument("--labels", type=int, default=200, help="oracle comparisons of random clip pairs")
    p.add_argument("--fragment-length", type=int, default=10, help="steps per clip")
    p.add_argument("--steps", type=int, default=300, help="optimiser steps of every variant's fit")
    p.add_argument("--train-steps", type=int, default=5_000, help="random steps the labelled clips come from")
    p.add_argument("--test-steps", type=int, default=3_000, help="random steps of the held-out clips")
    p.add_argument("--eval-pairs", type=int, default=1_000, help="held-out clip pairs")
    p.add_argument("--variants", nargs="+", default=["default", "shift"], help=f"{', '.join(PARTS)}, a+b")
    p.add_argument("--spr-steps", type=int, default=500, help="self-predictive updates of the reed variant")
    p.add_argument("--draws", type=int, default=3, help="independent draws (seeds 0..N-1)")
    p.add_argument("--out", default=None, help="also write the rows and the summary to this JSON file")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    rows = [r for seed in range(a.draws) for r in draw(a, seed)]
    summary: dict[str, Any] = {"env": a.env, "labels": a.labels, "steps": a.steps, "draws": a.draws}
    for name in a.variants:
        mine = [r for r in rows if r["variant"] == name]
        keys = ("accuracy", "pearson", "fit_s", "train_accuracy", "saturated")
        summary[name] = {k: float(np.median([r[k] for r in mine])) for k in keys}
        summary[name]["accuracies"] = [round(r["accuracy"], 3) for r in mine]
    print(json.dumps(summary))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(
                {"summary": summary, "rows": rows, "args": {k: v for k, v in vars(a).items()}}, f, indent=1
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
