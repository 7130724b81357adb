"""Fit a run's own labels again, offline, with another reward output or learning rate.

    python benchmarks/refit_labels.py --checkpoint RUN/checkpoints/iter_000001 \
        --variants tanh:0.003 linear:0.003 tanh:0.0003 --steps 200 --every 20 --out refit.json

Reads a checkpoint of ``prefrl train``, or a run directory for its final labels (its
``preferences.npz``: the labelled clips, and its ``reward.safetensors``: the network's
architecture), holds out a share of the labelled pairs
(``--held-out``), and fits a fresh network of the same architecture to the rest, once per
variant ``OUTPUT:LR`` (``linear`` or ``tanh``, and Adam's learning rate), with the default trainer
otherwise and the same seed. Every ``--every`` optimiser steps it records the fit's loss and
accuracy on its pairs, the share of held-out pairs (those that prefer a clip) ordered as labelled,
each member's mean pre-squash output (the level a tanh squashes) and the share of per-step rewards
a tanh holds within 0.001 of +-1, where its gradient is all but gone. Prints one JSON object per
record; ``--out`` also writes them to a file.

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
from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig
from prefrl.rewards.encode import encode_fragments, fragment_rewards
from prefrl.rewards.io import build_reward_net, load_reward_net


def variant(text: str) -> tuple[str, float]:
    """``OUTPUT:LR`` -> (output, learning rate)."""
    output, _, lr = text.partition(":")
    if output not in ("linear", "tanh") or not lr:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a variant is OUTPUT:LR, OUTPUT linear or tanh (tanh:0.003)"
        )
    return output, float(lr)


def refit(
    ckpt: Path, output: str, lr: float, steps: int, every: int, held_out: float
) -> list[dict[str, Any]]:
    """One variant's fit of the checkpoint's labels: a record every ``every`` steps."""
    data = PreferenceDataset.load(ckpt / "preferences.npz")
    train, test = data.split(held_out)
    if data.fragments is None or not len(train) or not len(test):
        raise SystemExit(
            f"{ckpt / 'preferences.npz'}: {len(data)} labelled pairs, too few to fit {1 - held_out:.0%} "
            f"and hold out {held_out:.0%} (a later checkpoint has more)"
        )
    config = {**load_reward_net(ckpt / "reward.safetensors").config, "output": output}
    torch.manual_seed(0)
    net = build_reward_net(config)
    fit = RewardTrainer(
        net, RewardTrainerConfig(lr=lr, max_steps=every, epochs=1e6, seed=0, val_fraction=0.0)
    )
    labels, pairs = test.labels, test.pairs
    strict = np.abs(labels - 0.5) > 1e-6
    records, done, t0 = [], 0, time.perf_counter()
    while done < steps:
        metrics = fit.train(train)
        done += every
        assert test.fragments is not None
        rews = fragment_rewards(net, test.fragments).cpu().numpy()  # [E, N, L]
        ret = rews.mean(0).sum(-1)  # [N]
        right = (ret[pairs[strict, 0]] > ret[pairs[strict, 1]]) == (labels[strict] > 0.5)
        with torch.no_grad():  # the level before the squash, per member
            raw = net._score(encode_fragments(net, test.fragments))  # [E, N, L]
        records.append({
            "checkpoint": str(ckpt), "output": output, "lr": lr, "steps": done,
            "train_loss": metrics["train_loss"], "train_accuracy": metrics["train_accuracy"],
            "held_out_accuracy": float(right.mean()) if strict.any() else None,  # None: all ties
            "held_out_pairs": int(strict.sum()),
            "level": [float(x) for x in raw.mean(dim=(1, 2))],
            "saturated": float((np.abs(rews) > 0.999).mean()) if output == "tanh" else 0.0,
            "wall_s": time.perf_counter() - t0,
        })  # fmt: skip
        print(json.dumps(records[-1]), flush=True)
    return records


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--checkpoint", type=Path, required=True, help="a checkpoint (or run) directory of prefrl train"
    )
    p.add_argument("--variants", nargs="+", type=variant, default=[("tanh", 3e-3), ("linear", 3e-3)],
                   help="OUTPUT:LR pairs (default: tanh:0.003 linear:0.003)")  # fmt: skip
    p.add_argument("--steps", type=int, default=200, help="optimiser steps of each fit")
    p.add_argument("--every", type=int, default=20, help="optimiser steps between records")
    p.add_argument("--held-out", type=float, default=0.2, help="share of the labelled pairs held out")
    p.add_argument("--out", type=Path, default=None, help="also write the records to this JSON file")
    a = p.parse_args(argv)
    if a.steps < 1 or a.every < 1 or not 0 < a.held_out < 1:
        p.error("need --steps >= 1, --every >= 1 and --held-out in (0, 1)")
    for name in ("preferences.npz", "reward.safetensors"):
        if not (a.checkpoint / name).is_file():
            p.error(
                f"{a.checkpoint} has no {name}: give a checkpoint directory (RUN/checkpoints/iter_NNNNNN)"
            )
    torch.set_num_threads(1)
    records = [
        r for out, lr in a.variants for r in refit(a.checkpoint, out, lr, a.steps, a.every, a.held_out)
    ]
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"records": records, "args": {**vars(a), "checkpoint": str(a.checkpoint),
                                                                  "out": str(a.out)}}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
