"""A CoinRun reward from preferences beside its supervised twin: do both key on the coin?

    python benchmarks/coinrun.py --labels 1000 --out benchmarks/results/coinrun/coinrun.json \
        --save runs/coinrun

Data: CoinRun (easy, 200 levels) played by random actions and, so that clips which reach the
coin are common, by a policy that holds "right" + "jump" (Procgen's action 8) with some random
actions mixed in (``--hold-noise``). That policy is this benchmark's data collection only, not a
setting of the library: ``prefrl train`` collects with its agent.

Two rewards, the same network (a small CNN over the 64x64 frame, ``--channels`` etc., its
ensemble on one shared trunk) and the same training episodes:

* ``preference``: fitted by prefrl's :class:`~prefrl.preference.trainer.RewardTrainer` to
  ``--labels`` comparisons of uniformly drawn clip pairs, labelled by the oracle teacher (the
  game's reward: +10 for the coin), ``--steps`` optimiser steps;
* ``supervised``: regression on the true per-step reward of every transition of those episodes
  (:func:`~prefrl.interpret.supervised.fit_supervised`, ``--supervised-epochs``).

Each is scored on two held-out sets, other episodes of the same 200 levels (``held_out``) and
episodes of levels never trained on (``unseen_levels``):

* ``coin_accuracy``: the share of (coin clip, other clip) pairs whose learned returns put the
  clip that reaches the coin above the one that does not (ties count half; every pair of the
  held-out clips, so it is the area under the ROC curve); ``coin_vs_death`` the same against
  clips that end in a death, the hard ones;
* ``saliency_on_coin``: on held-out frames where the coin is visible (located by its colour,
  itself found from the frames: the colour that tells the frames at the coin from episodes'
  first frames, :mod:`prefrl.interpret.objects`), the mean share of the attribution mass within
  ``--radius`` pixels of the coin, for gradient saliency and integrated gradients (black
  baseline), the ensemble mean of the action taken; ``chance`` is the share a uniform map gets;
* ``without_coin``: the share of its reward for the steps that took the coin that the reward keeps
  when the coin is painted out of those frames (0: the reward is the coin; 1: it pays for
  something else that is there when the coin is, such as the wall at the level's end).

Prints one JSON line per reward and set, then the result (also written to ``--out``). With
``--erase-share S`` (random erasing, Zhong et al. 2020, a try at breaking the coin's tie to the level's
end): every training frame gets a copy with a rectangle of random size and colour painted over it;
a share ``S`` of the labelled clips is drawn from the copies, and the supervised reward fits both.
With ``--save DIR``: both rewards (``preference.safetensors``, ``supervised.safetensors``) and the
held-out episodes (``heldout.npz``) for ``prefrl interpret features``, and the last 8 steps of
each held-out episode that took the coin (``coin_endings.npz``) for ``prefrl interpret saliency``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import make_env
from prefrl.data import sample_fragments
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments
from prefrl.data.trajectories import Trajectory, TrajectoryBatch
from prefrl.interpret.attribution import (
    encode_images,
    gradient_saliency,
    heatmap,
    integrated_gradients,
)
from prefrl.interpret.objects import distinctive_colour, erase_colour, locate_colour, mass_near
from prefrl.interpret.supervised import SupervisedConfig, fit_supervised
from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig
from prefrl.rewards import save_reward_net
from prefrl.rewards.config import RewardNetConfig
from prefrl.rewards.encode import fragment_rewards
from prefrl.rewards.nets import RewardNet, to_tensor
from prefrl.teachers.synthetic import SyntheticTeacher

ENV = "procgen/coinrun"
RIGHT_JUMP = 8
"""Procgen's button combination ("RIGHT", "UP"): run right and jump (CoinRun's levels end in the coin
on the right)."""
UNSEEN_START = 100_000
"""First level of the ``unseen_levels`` set (the training levels are 0..num_levels-1)."""


def hold_right_jump(noise: float, rng: np.random.Generator) -> Any:
    """A policy: right + jump, a random action with probability ``noise``."""

    def act(_obs: Any) -> int:
        return int(rng.integers(15)) if rng.random() < noise else RIGHT_JUMP

    return act


def collect(a: argparse.Namespace, kwargs: dict[str, Any], seed: int, scale: float = 1.0) -> TrajectoryBatch:
    """Random episodes and right+jump episodes of CoinRun, ``scale`` times the training budget."""
    env = make_env(ENV, kwargs)
    rand = collect_episodes(env, n_steps=max(1, round(scale * a.random_steps)), seed=seed)
    policy = hold_right_jump(a.hold_noise, np.random.default_rng(seed))
    held = collect_episodes(env, n_steps=max(1, round(scale * a.hold_steps)), policy=policy, seed=seed + 1)
    env.close()
    return TrajectoryBatch.concat([rand, held])


def erased(
    batch: TrajectoryBatch, rng: np.random.Generator, sides: tuple[int, int] = (12, 32)
) -> TrajectoryBatch:
    """A copy of ``batch`` whose every frame ``[H, W, 3]`` has its own rectangle (each side drawn
    in ``sides`` pixels) painted one random colour: a clip that earned the coin still did, with the
    coin, the wall or neither hidden, so the label no longer ties every object of those frames."""
    obs = batch.obs.copy()  # [S, H, W, 3] uint8
    height, width = obs.shape[1:3]
    for i in range(len(obs)):
        h, w = rng.integers(sides[0], sides[1] + 1, 2)
        y, x = rng.integers(0, height - h + 1), rng.integers(0, width - w + 1)
        obs[i, y : y + h, x : x + w] = rng.integers(0, 256, 3, dtype=np.uint8)
    return dataclasses.replace(batch, obs=obs)


def build_net(a: argparse.Namespace, env_kwargs: dict[str, Any], seed: int) -> RewardNet:
    """A fresh reward network of the options ``a`` names, for CoinRun's frames."""
    env = make_env(ENV, env_kwargs)
    cfg = RewardNetConfig(
        kind="cnn", cnn_features=a.features, cnn_shared_trunk=a.features == "flat", cnn_channels=a.channels,
        cnn_kernels=a.kernels, cnn_strides=a.strides, cnn_hidden=a.hidden, ensemble_size=a.ensemble,
    )  # fmt: skip
    torch.manual_seed(seed)
    net = cfg.resolved(env.observation_space, env.action_space).build(env.observation_space, env.action_space)
    env.close()
    return net


def coin_colour(batch: TrajectoryBatch) -> np.ndarray:
    """The coin's colour, from the frames: the colour that tells the frames of the steps that
    earned the coin from episodes' first frames."""
    assert batch.rews is not None
    at_coin = np.flatnonzero(batch.rews > 0)
    if not len(at_coin):
        raise SystemExit("no episode reached the coin: collect more steps (--random-steps, --hold-steps)")
    return distinctive_colour(batch.obs[at_coin], batch.obs[batch.starts])


def coin_accuracy(returns: np.ndarray, coin: np.ndarray, others: np.ndarray) -> float | None:
    """Share of (coin clip, other clip) pairs ordered coin first; ties count half (None: no pair)."""
    if not coin.any() or not others.any():
        return None
    a, b = np.sort(returns[others]), returns[coin]
    below = np.searchsorted(a, b, side="left")
    ties = np.searchsorted(a, b, side="right") - below
    return float((below + 0.5 * ties).sum() / (len(a) * len(b)))


def saliency_frames(
    batch: TrajectoryBatch, colour: np.ndarray, n: int, rng: np.random.Generator
) -> dict[str, Any]:
    """Up to ``n`` transitions of ``batch`` whose frame shows the coin, and where it is."""
    rows = batch.step_rows
    centres, visible = locate_colour(batch.obs[rows], colour)
    keep = np.flatnonzero(visible)
    keep = np.sort(rng.choice(keep, size=min(n, len(keep)), replace=False))
    return {"rows": rows[keep], "centres": centres[keep], "visible_share": float(visible.mean())}


@torch.no_grad()
def mean_reward(net: RewardNet, obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
    """Ensemble-mean reward ``[N]`` of transitions that do not end an episode, in chunks."""
    out = []
    for s in range(0, len(obs), 512):
        sl = slice(s, s + 512)
        o, x, n = to_tensor(obs[sl]), to_tensor(acts[sl]), to_tensor(next_obs[sl])
        out.append(net.score(net.encode(o, x, n, torch.zeros(len(o)))).mean(0).cpu().numpy())
    return np.concatenate(out)


def without_coin(net: RewardNet, batch: TrajectoryBatch, colour: np.ndarray) -> float | None:
    """How much of its reward for the steps that took the coin ``net`` keeps when the coin is
    painted out of their frames (:func:`~prefrl.interpret.objects.erase_colour`):
    ``(r(erased) − r̄) / (r(frame) − r̄)``, means over those steps, ``r̄`` the mean over all steps.
    Near 0: the reward is the coin; near 1: it pays for something else in those frames."""
    assert batch.rews is not None
    rows = np.flatnonzero(batch.rews > 0)
    if not len(rows):
        return None
    every = batch.step_rows
    base = float(mean_reward(net, batch.obs[every], batch.acts[every], batch.obs[every + 1]).mean())
    acts, obs, nxt = batch.acts[rows], batch.obs[rows], batch.obs[rows + 1]
    with_coin = mean_reward(net, obs, acts, nxt).mean()
    erased = mean_reward(net, erase_colour(obs, colour), acts, erase_colour(nxt, colour)).mean()
    return float((erased - base) / (with_coin - base))


def evaluate(net: RewardNet, name: str, batch: TrajectoryBatch, a: argparse.Namespace, colour: np.ndarray,
             seed: int) -> dict[str, Any]:  # fmt: skip
    """Coin ranking accuracy and saliency on the coin of ``net`` on ``batch``'s clips and frames."""
    rng = np.random.default_rng(seed)
    clips, _ = sample_fragments(batch, a.test_clips, a.fragment_length, rng, replace=None)
    true = clips.returns()
    ended = clips.absorbing().any(1)  # the clip reaches a termination: the coin or a death
    ret = fragment_rewards(net, clips).mean(0).sum(-1).cpu().numpy()
    coin, death = true > 0, ended & (true <= 0)
    out: dict[str, Any] = {
        "clips": len(clips), "coin_clips": int(coin.sum()), "death_clips": int(death.sum()),
        "coin_accuracy": coin_accuracy(ret, coin, ~coin), "coin_vs_death": coin_accuracy(ret, coin, death),
    }  # fmt: skip
    s = saliency_frames(batch, colour, a.saliency_frames, rng)
    inputs = encode_images(net, batch.obs[s["rows"]], batch.acts[s["rows"]])
    chance = mass_near(np.ones((len(s["rows"]), *inputs.images.shape[-2:])), s["centres"], a.radius)
    maps = {
        "gradient": heatmap(gradient_saliency(net, inputs)[0]),
        "integrated_gradients": heatmap(integrated_gradients(net, inputs, "black", steps=a.ig_steps)[0]),
    }
    out["saliency_frames"] = len(s["rows"])
    out["coin_visible_share"] = s["visible_share"]
    out["saliency_on_coin"] = {k: float(mass_near(m, s["centres"], a.radius).mean()) for k, m in maps.items()}
    out["saliency_chance"] = float(chance.mean())
    out["without_coin"] = without_coin(net, batch, colour)
    print(json.dumps({"reward": name, **out}), flush=True)
    return out


def coin_endings(batch: TrajectoryBatch, steps: int = 8) -> TrajectoryBatch:
    """The last ``steps`` steps of every episode of ``batch`` that took the coin (as episodes that
    end there), for ``prefrl interpret saliency --episode N``."""
    ends = [
        Trajectory(obs=e.obs[-steps - 1 :], acts=e.acts[-steps:], rews=e.rews[-steps:], terminated=True,
                   truncated=False)
        for e in batch
        if e.rews is not None and e.rews.sum() > 0
    ]  # fmt: skip
    if not ends:
        raise SystemExit("no held-out episode took the coin: collect more steps (--hold-steps)")
    return TrajectoryBatch.from_trajectories(ends)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--labels", type=int, default=1000, help="oracle comparisons of random clip pairs")
    p.add_argument("--fragment-length", type=int, default=25, help="steps per clip")
    p.add_argument("--steps", type=int, default=1500, help="optimiser steps of the preference fit")
    p.add_argument("--batch-size", type=int, default=32, help="pairs per optimiser step")
    p.add_argument("--supervised-epochs", type=int, default=5, help="passes of the supervised fit")
    p.add_argument("--random-steps", type=int, default=10_000, help="random-action steps to train on")
    p.add_argument("--hold-steps", type=int, default=10_000, help="right+jump steps to train on")
    p.add_argument("--hold-noise", type=float, default=0.2, help="share of random actions of right+jump")
    p.add_argument("--test-scale", type=float, default=0.5, help="held-out steps, as a share of training's")
    p.add_argument("--test-clips", type=int, default=2000, help="held-out clips per set")
    p.add_argument(
        "--saliency-frames", type=int, default=256, help="held-out frames showing the coin per set"
    )
    p.add_argument("--radius", type=float, default=6.0, help="pixels around the coin that count as on it")
    p.add_argument("--ig-steps", type=int, default=16, help="integrated-gradients points")
    p.add_argument("--num-levels", type=int, default=200, help="CoinRun levels trained on (easy mode)")
    p.add_argument("--features", choices=["flat", "spatial"], default="flat",
                   help="CNN features: flat on a shared trunk, or keypoints (prefrl's default for 64x64 "
                        "frames, about 35x slower to fit)")  # fmt: skip
    p.add_argument("--channels", type=int, nargs="+", default=None, help="CNN channels (default: prefrl's)")
    p.add_argument("--kernels", type=int, nargs="+", default=None, help="CNN kernel sizes")
    p.add_argument("--strides", type=int, nargs="+", default=None, help="CNN strides")
    p.add_argument("--hidden", type=int, nargs="+", default=None, help="CNN head hidden sizes")
    p.add_argument("--erase-share", type=float, default=0.0,
                   help="share of the labelled clips drawn from randomly erased copies of the training "
                        "frames (the supervised reward then fits the copies too; 0: none)")  # fmt: skip
    p.add_argument("--ensemble", type=int, default=3, help="ensemble members (one shared trunk)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the result to this JSON file")
    p.add_argument("--save", default=None, metavar="DIR", help="write both rewards and heldout.npz here")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    train_kw = {"num_levels": a.num_levels, "start_level": 0, "distribution_mode": "easy"}
    unseen_kw = {**train_kw, "start_level": UNSEEN_START}
    train = collect(a, train_kw, a.seed)
    sets = {
        "held_out": collect(a, train_kw, 10_000 + a.seed, a.test_scale),
        "unseen_levels": collect(a, unseen_kw, 20_000 + a.seed, a.test_scale),
    }
    collect_s = time.perf_counter() - t0
    colour = coin_colour(train)
    rng = np.random.default_rng(a.seed)
    if not 0.0 <= a.erase_share <= 1.0:
        raise SystemExit(f"--erase-share must lie in [0, 1], got {a.erase_share}")
    copies = erased(train, np.random.default_rng(a.seed + 1)) if a.erase_share else None
    n_erased = round(a.erase_share * 2 * a.labels)
    parts = [sample_fragments(train, 2 * a.labels - n_erased, a.fragment_length, rng)[0]]
    if copies is not None and n_erased:
        parts.append(sample_fragments(copies, n_erased, a.fragment_length, rng)[0])
    frags = Fragments.concat(parts)
    order = rng.permutation(2 * a.labels) if copies is not None else np.arange(2 * a.labels)
    pairs = order.reshape(-1, 2)  # erased clips are paired with clips of either kind
    labels = SyntheticTeacher("oracle").label(frags, pairs)
    data = PreferenceDataset()
    data.add(frags, pairs, labels)
    fits: dict[str, Any] = {}
    nets: dict[str, RewardNet] = {}
    t = time.perf_counter()
    nets["preference"] = build_net(a, train_kw, a.seed)
    cfg = RewardTrainerConfig(epochs=1e6, max_steps=a.steps, batch_size=a.batch_size, seed=a.seed)
    RewardTrainer(nets["preference"], cfg).train(data)
    fits["preference"] = {"fit_s": time.perf_counter() - t, "optimiser_steps": a.steps}
    t = time.perf_counter()
    nets["supervised"] = build_net(a, train_kw, a.seed)
    sup_data = train if copies is None else TrajectoryBatch.concat([train, copies])
    sup_cfg = SupervisedConfig(epochs=a.supervised_epochs, seed=a.seed)
    sup = fit_supervised(nets["supervised"], sup_data, sup_cfg)
    fits["supervised"] = {"fit_s": time.perf_counter() - t, "epochs": a.supervised_epochs, **sup}
    results: dict[str, Any] = {}
    for name, net in nets.items():
        net.eval()
        results[name] = {
            **fits[name],
            **{k: evaluate(net, name, b, a, colour, a.seed) for k, b in sets.items()},
        }
    assert train.rews is not None
    out = {
        "env": ENV, "env_kwargs": train_kw, "labels": a.labels, "fragment_length": a.fragment_length,
        "label_shares": {"coin_vs_other": float(np.mean(np.abs(labels - 0.5) == 0.5)),
                         "ties": float(np.mean(labels == 0.5))},
        "train": {"episodes": len(train), "steps": train.num_steps,
                  "coin_episodes": int((train.episode_returns() > 0).sum())},
        "coin_colour": colour.tolist(), "radius": a.radius, "rewards": results,
        "collect_s": collect_s, "total_s": time.perf_counter() - t0,
        "machine": {"cpu": platform.machine(), "cpus": os.cpu_count(),
                    "torch_threads": torch.get_num_threads(),
                    "load_average_1min": {"start": load0, "end": os.getloadavg()[0]}},
        "args": vars(a),
    }  # fmt: skip
    print(json.dumps(out))
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    if a.save:
        d = Path(a.save)
        d.mkdir(parents=True, exist_ok=True)
        for name, net in nets.items():
            save_reward_net(net, d / f"{name}.safetensors")
        sets["held_out"].save(d / "heldout.npz")
        coin_endings(sets["held_out"]).save(d / "coin_endings.npz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
