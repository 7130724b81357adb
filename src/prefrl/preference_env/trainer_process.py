"""The trainer process of the preference wrapper.

It keeps the growing :class:`~prefrl.data.PreferenceDataset` (the labeller's answers, and a
saved set to start from), fits the reward network on it in rounds of
``RewardTrainerConfig.epochs`` epochs, publishes the weights on the shared board after every
round, writes checkpoints and answers the environment process's commands (saving the
preference set). Started by :mod:`prefrl.preference_env.runtime` through
:func:`~prefrl.preference_env.workers.run_worker`.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prefrl.data.dataset import PreferenceDataset
from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig
from prefrl.preference_env import shared_memory as sh
from prefrl.preference_env.shared_memory import SharedBoard
from prefrl.preference_env.workers import Guard, merge_messages
from prefrl.rewards.encode import fragment_rewards
from prefrl.rewards.io import build_reward_net, save_reward_net
from prefrl.rewards.nets import RewardNet


@dataclass
class TrainerSettings:
    """What the trainer needs of :class:`~prefrl.preference_env.config.PreferenceEnvConfig`."""

    net_config: dict[str, Any]
    train: bool
    trainer: RewardTrainerConfig
    preferences_path: str | None
    max_labels_kept: int | None
    min_labels: int
    checkpoint_dir: str | None
    checkpoint_every: int
    train_pause_s: float
    max_train_steps: int | None


@torch.no_grad()
def reward_stats(
    net: RewardNet, ds: PreferenceDataset, rng: np.random.Generator, n: int = 256
) -> tuple[float, float]:
    """Mean and std of the ensemble-mean reward ``[N, L]`` of the dataset's ``N`` fragments
    (a random ``n`` of them when there are more)."""
    assert ds.fragments is not None
    f = ds.fragments
    if len(f) > n:
        f = f.select(rng.choice(len(f), n, replace=False))
    r = fragment_rewards(net, f).mean(0)  # [N, L]
    return float(r.mean()), float(max(r.std().item(), 1e-6))


def trainer(
    board: SharedBoard, guard: Guard, s: TrainerSettings, prefs: Any, commands: Any, replies: Any
) -> None:
    """Grow the preference set, train on it, publish weights, write checkpoints, answer commands.

    ``prefs`` carries the labeller's ``(message, pairs [p, 2], labels [p])`` (see
    :func:`~prefrl.preference_env.workers.merge_messages`); ``commands`` / ``replies`` the
    environment process's numbered ``(number, "save", path, val_fraction)`` and
    ``(number, "ok", [path, ...])`` (or ``(number, "error", message)``).
    """
    replies.cancel_join_thread()
    net = build_reward_net(s.net_config)
    got = board.read()
    while got is None:
        time.sleep(0.001)
        got = board.read()
    net.load_state_dict(got[1])
    ds = PreferenceDataset(max_size=s.max_labels_kept)
    if s.preferences_path is not None:
        loaded = PreferenceDataset.load(s.preferences_path)
        if loaded.fragments is not None:
            ds.add(loaded.fragments, loaded.pairs, loaded.labels)
    board.ints[sh.PAIRS] = len(ds)
    fit = RewardTrainer(net, s.trainer)
    rng = np.random.default_rng(s.trainer.seed)
    last_ckpt = 0
    while True:
        guard.check()
        waiting = not s.train or len(ds) < s.min_labels
        msgs = []
        try:
            msgs.append(prefs.get(timeout=0.1) if waiting else prefs.get_nowait())
            while len(msgs) < 4096:
                msgs.append(prefs.get_nowait())
        except queue.Empty:
            pass
        if msgs:  # one add per pass: each add copies the dataset's whole table once
            ds.add(*merge_messages(msgs))
        board.ints[sh.PAIRS] = len(ds)
        while True:
            try:
                cmd = commands.get_nowait()
            except queue.Empty:
                break
            number, name, *args = cmd
            if name == "save":
                try:
                    replies.put((number, "ok", [str(p) for p in ds.save_split(args[0], args[1])]))
                except Exception as e:
                    replies.put((number, "error", f"{type(e).__name__}: {e}"))
        done = s.max_train_steps is not None and fit.global_step >= s.max_train_steps
        if not s.train or len(ds) < s.min_labels or done:
            continue
        fit.train(ds)  # one round: trainer.epochs passes over the set
        mean, std = reward_stats(net, ds, rng)
        board.publish(net.state_dict(), fit.global_step, mean, std)
        if s.checkpoint_dir is not None and s.checkpoint_every > 0:
            if fit.global_step // s.checkpoint_every > last_ckpt:
                last_ckpt = fit.global_step // s.checkpoint_every
                d = Path(s.checkpoint_dir)
                save_reward_net(net, d / f"reward_{fit.global_step:08d}.safetensors")
                save_reward_net(net, d / "reward_latest.safetensors")
                board.ints[sh.CHECKPOINTS] += 1
        time.sleep(s.train_pause_s)
