"""Fit a run's own labels again, offline, with another reward output or learning rate.

    python benchmarks/refit_labels.py --checkpoint RUN/checkpoints/iter_000001 \
        --variants tanh:0.003 linear:0.003 tanh:0.0003 --steps 200 --every 20 --out refit.json

Reads a checkpoint of ``prefrl train``, or a run directory for its final labels (its
``preferences.npz``: the labelled clips, and its ``reward.safetensors``: the network), holds out
a share of the labelled pairs (``--held-out``), and records first the checkpoint's own reward as
the run left it (``steps`` 0), then fits a fresh network of the same architecture to the rest,
once per variant ``OUTPUT:LR`` (``linear`` or ``tanh``, and Adam's learning rate; none: the
saved reward alone), with the default trainer otherwise and the same seed, recording every
``--every`` optimiser steps. A record holds the fit's loss and accuracy on its pairs, the share
of held-out pairs (those that prefer a clip) ordered as labelled, each member's mean output
before the squash (the level a tanh squashes), the share of per-step rewards a tanh holds within
0.001 of +-1 (where its gradient is all but gone), and the spread of the network's per-step
outputs over the held-out clips, before the squash and without the absorbing state's fixed
reward after an episode's end (each member's standard deviation, their mean: 0 where the network
pays every step the same, as when every unit of a ReLU layer has died). Prints one JSON object per record;
``--out`` also writes them to a file.

``--extra-clips FILE --extra-labels N`` adds N pairs of clips of FILE (another policy's rollouts,
the run's clip length), labelled by the oracle teacher (the file's true reward), to the fitted
half: would labels of that play have taught the reward what the run's labels did not?
``--events FILE ...``: every record also profiles the reward around each file's sparse true-reward
events (``prefrl interpret events``: per event value the share of its value kept over 30 steps
either side, and the share of the reward's per-step variance the events explain).

The question it answers: did the run's reward stop learning because of the labels, or because
of how it was fitted? (Pong's first reward: every frame paid exactly +1 or -1; see
docs/benchmarks/pixels.md.) The held-out pairs come from the same episodes as the fitted ones,
so their accuracy says whether the fit learns, not how far the reward generalises.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import random_pairs, sample_fragments
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.events import event_profiles
from prefrl.interpret.policies import rank_policies
from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig
from prefrl.preference.trust import TIE_TOL
from prefrl.rewards.encode import encode_fragments, fragment_rewards
from prefrl.rewards.io import build_reward_net, load_reward_net
from prefrl.rewards.nets import RewardNet
from prefrl.teachers.synthetic import SyntheticTeacher


def variant(text: str) -> tuple[str, float]:
    """``OUTPUT:LR`` -> (output, learning rate)."""
    output, _, lr = text.partition(":")
    if output not in ("linear", "tanh") or not lr:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a variant is OUTPUT:LR, OUTPUT linear or tanh (tanh:0.003)"
        )
    return output, float(lr)


def load_split(ckpt: Path, held_out: float) -> tuple[PreferenceDataset, PreferenceDataset]:
    """The checkpoint's labelled pairs as (fitted, held out)."""
    data = PreferenceDataset.load(ckpt / "preferences.npz")
    train, test = data.split(held_out)
    if data.fragments is None or not len(train) or not len(test):
        raise SystemExit(
            f"{ckpt / 'preferences.npz'}: {len(data)} labelled pairs, too few to fit {1 - held_out:.0%} "
            f"and hold out {held_out:.0%} (a later checkpoint has more)"
        )
    return train, test


def measure(
    net: RewardNet,
    test: PreferenceDataset,
    policies: dict[str, TrajectoryBatch] | None = None,
    events: dict[str, TrajectoryBatch] | None = None,
) -> dict[str, Any]:
    """How ``net`` pays the held-out clips: pairs ordered as labelled, each member's level before
    the squash, the share of rewards a tanh holds at +-1, and the spread of per-step rewards;
    with ``policies``, how it ranks them (:func:`compare`); with ``events``, where it puts the
    value of each file's events (:func:`events_of`)."""
    assert test.fragments is not None
    labels, pairs = test.labels, test.pairs
    strict = np.abs(labels - 0.5) > 1e-6
    rews = fragment_rewards(net, test.fragments).cpu().numpy()  # [E, N, L]
    ret = rews.mean(0).sum(-1)  # [N]
    right = (ret[pairs[strict, 0]] > ret[pairs[strict, 1]]) == (labels[strict] > 0.5)
    with torch.no_grad():  # the level before the squash, per member
        raw = net._score(encode_fragments(net, test.fragments))  # [E, N, L]
    return {
        "held_out_accuracy": float(right.mean()) if strict.any() else None,  # None: all ties
        "held_out_pairs": int(strict.sum()),
        "level": [float(x) for x in raw.mean(dim=(1, 2))],
        "saturated": float((np.abs(rews) > 0.999).mean()) if net.output == "tanh" else 0.0,
        "spread": float(raw.reshape(raw.shape[0], -1).std(1).mean().item()),  # 0: the same for every step
        **compare(net, policies or {}),
        **events_of(net, events or {}),
    }


def events_of(net: RewardNet, files: dict[str, TrajectoryBatch]) -> dict[str, Any]:
    """Per file of ``files`` (``--events``): the share of each event value's true net kept by
    ``net`` over 30 steps either side, and the share of its per-step variance the events explain
    (``skipped`` and why, for a file whose true reward is dense or has no events)."""
    if not files:
        return {}
    out: dict[str, Any] = {}
    for name, batch in files.items():
        try:
            res = event_profiles(net, batch)
        except ValueError as e:  # a dense true reward, or no events: said in the record
            out[name] = {"skipped": str(e)}
            continue
        evs = res["events"]
        assert isinstance(evs, list)
        out[name] = {"explained": res["explained"], "kept": {f"{e['value']:+g}": e["kept"] for e in evs}}
    return {"events": out}


def add_extra(
    train: PreferenceDataset, clips: TrajectoryBatch, n: int, length: int, seed: int = 0
) -> dict[str, Any]:
    """``n`` oracle-labelled pairs of ``length``-step clips of ``clips`` added to ``train``."""
    rng = np.random.default_rng(seed)
    frags, _ = sample_fragments(clips, 2 * n, length, rng)
    pairs = random_pairs(len(frags), n, rng)
    labels = SyntheticTeacher("oracle").label(frags, pairs)
    train.add(frags, pairs, labels)
    return {"extra_labels": n, "extra_ties": float(np.mean(np.abs(labels - 0.5) <= TIE_TOL))}


def compare(net: RewardNet, policies: dict[str, TrajectoryBatch]) -> dict[str, Any]:
    """How ``net`` ranks the policies of ``policies`` (name -> rollouts, ``--compare``): each one's
    mean reward per step above the mean of all their steps, in units of those steps' spread (so
    that the gaps read alike from reward to reward, whatever level a linear output drifted to),
    and the order, best first (``prefrl interpret policies``, whose misrankings need true
    rewards in the files)."""
    if not policies:
        return {}
    ranked = rank_policies(net, policies)
    scores = ranked["policies"]
    assert isinstance(scores, list)
    n = np.array([p["steps"] for p in scores], float)
    mean = np.array([p["learned_per_step"] for p in scores])
    std = np.array([p["learned_per_step_std"] for p in scores])
    level = float(np.average(mean, weights=n))  # of all the files' steps, pooled
    spread = float(np.sqrt(np.average(std**2 + (mean - level) ** 2, weights=n))) or 1.0
    means = {p["name"]: (m - level) / spread for p, m in zip(scores, mean, strict=True)}
    return {"per_step_in_spreads": means, "order": ranked["order_learned"]}


def as_saved(
    ckpt: Path,
    saved: RewardNet,
    test: PreferenceDataset,
    policies: dict[str, TrajectoryBatch] | None = None,
    events: dict[str, TrajectoryBatch] | None = None,
) -> dict[str, Any]:
    """The checkpoint's own reward ``saved``, as the run left it (``steps`` 0, no fit)."""
    record = {"checkpoint": str(ckpt), "output": saved.output, "lr": None, "steps": 0, "train_loss": None,
              "train_accuracy": None, **measure(saved, test, policies, events), "wall_s": 0.0}  # fmt: skip
    print(json.dumps(record), flush=True)
    return record


def refit(
    ckpt: Path,
    saved: RewardNet,
    split: tuple[PreferenceDataset, PreferenceDataset],
    variant: tuple[str, float],
    steps: int,
    every: int,
    policies: dict[str, TrajectoryBatch] | None = None,
    events: dict[str, TrajectoryBatch] | None = None,
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One variant's fit of the fitted half of ``split`` by a fresh network of ``saved``'s
    architecture: a record every ``every`` steps."""
    (train, test), (output, lr) = split, variant
    torch.manual_seed(0)
    net = build_reward_net({**saved.config, "output": output})
    fit = RewardTrainer(
        net, RewardTrainerConfig(lr=lr, max_steps=every, epochs=1e6, seed=0, val_fraction=0.0)
    )
    records, done, t0 = [], 0, time.perf_counter()
    while done < steps:
        metrics = fit.train(train)
        done += every
        records.append({
            "checkpoint": str(ckpt), "output": output, "lr": lr, "steps": done,
            "train_loss": metrics["train_loss"], "train_accuracy": metrics["train_accuracy"],
            **(extra or {}), **measure(net, test, policies, events), "wall_s": time.perf_counter() - t0,
        })  # fmt: skip
        print(json.dumps(records[-1]), flush=True)
    return records


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--checkpoint", type=Path, required=True, help="a checkpoint (or run) directory of prefrl train"
    )
    p.add_argument("--variants", nargs="*", type=variant, default=[("tanh", 3e-3), ("linear", 3e-3)],
                   help="OUTPUT:LR pairs (default: tanh:0.003 linear:0.003; none: the saved reward "
                   "alone)")  # fmt: skip
    p.add_argument("--steps", type=int, default=200, help="optimiser steps of each fit")
    p.add_argument("--every", type=int, default=20, help="optimiser steps between records")
    p.add_argument("--held-out", type=float, default=0.2, help="share of the labelled pairs held out")
    p.add_argument("--compare", type=Path, nargs="*", default=[], metavar="FILE",
                   help="trajectory files of policies (prefrl rollouts), each named by its file name: "
                   "every record says how that reward ranks them")  # fmt: skip
    p.add_argument("--extra-clips", type=Path, default=None, metavar="FILE",
                   help="trajectory file (true rewards) of the --extra-labels clips")  # fmt: skip
    p.add_argument("--extra-labels", type=int, default=0,
                   help="oracle-labelled pairs of --extra-clips' clips added to the fitted half")  # fmt: skip
    p.add_argument("--events", type=Path, nargs="*", default=[], metavar="FILE",
                   help="trajectory files with sparse true rewards: every record says where that reward "
                   "puts their events' value (prefrl interpret events)")  # fmt: skip
    p.add_argument("--out", type=Path, default=None, help="also write the records to this JSON file")
    a = p.parse_args(argv)
    if a.steps < 1 or a.every < 1 or not 0 < a.held_out < 1:
        p.error("need --steps >= 1, --every >= 1 and --held-out in (0, 1)")
    if (a.extra_labels > 0) != (a.extra_clips is not None) or a.extra_labels < 0:
        p.error("--extra-labels N (N >= 1) and --extra-clips FILE go together")
    for name in ("preferences.npz", "reward.safetensors"):
        if not (a.checkpoint / name).is_file():
            p.error(
                f"{a.checkpoint} has no {name}: give a checkpoint directory (RUN/checkpoints/iter_NNNNNN)"
            )
    torch.set_num_threads(1)
    split = load_split(a.checkpoint, a.held_out)  # read once for every variant
    saved = load_reward_net(a.checkpoint / "reward.safetensors")
    policies = {f.stem: TrajectoryBatch.load(f) for f in a.compare}
    events = {f.stem: TrajectoryBatch.load(f) for f in a.events}
    extra = None
    if a.extra_clips is not None:
        fitted, test = split
        assert test.fragments is not None
        length = test.fragments.length  # the run's clip length
        extra = add_extra(fitted, TrajectoryBatch.load(a.extra_clips), a.extra_labels, length)
    records = [as_saved(a.checkpoint, saved, split[1], policies, events)]
    records += [
        r
        for v in a.variants
        for r in refit(a.checkpoint, saved, split, v, a.steps, a.every, policies, events, extra)
    ]
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        args = {**vars(a), "checkpoint": str(a.checkpoint), "out": str(a.out),
                "compare": [str(f) for f in a.compare], "events": [str(f) for f in a.events],
                "extra_clips": None if a.extra_clips is None else str(a.extra_clips)}  # fmt: skip
        a.out.write_text(json.dumps({"records": records, "args": args}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
