"""Offline probe: is HalfCheetah's first reward right on the behaviour SAC goes on to find?

    python benchmarks/first_reward_agents.py RUN/checkpoints/iter_000013/replay_buffer.npz ... \\
        --draws 6 --trainer l2_init=0.01 --initial-steps 5000

``first_reward.py`` scores the loop's first reward (15 oracle labels of random clips, the first
update's longer fit) on one good policy's clips against random ones. The seeds that fail go
elsewhere first: backwards, or flipped, where no random clip went. This probe scores each draw
of the first reward on the 50-step clips of agents' replay buffers (any learned HalfCheetah-v5
run's ``replay_buffer.npz``: its whole history, from random steps through running backwards to
running forwards), whose true returns it computes as HalfCheetah-v5's reward does from the
stored steps: forward velocity (the next observation's entry 8) minus 0.1 x the squared action.

Per draw and on average over draws it prints ``accuracy`` (share of clip pairs whose true
returns differ by more than 5 that the reward orders as the true reward does), ``spearman``
(rank correlation of clip returns), ``stand_over_back`` (share of (standing clip, backward clip)
pairs where the standing one is preferred: |return| < 10 against < -20) and
``forward_over_stand`` (return > 50 against standing). ``--trainer`` and ``--reward`` override
fields of ``RewardTrainerConfig`` and ``RewardNetConfig`` (``KEY=VALUE``, VALUE read as JSON).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

ENV = "HalfCheetah-v5"
CTRL_COST = 0.1
"""HalfCheetah-v5's control cost weight."""
VELOCITY = 8
"""Index of the forward velocity in HalfCheetah-v5's observation."""
KEYS = ("observations", "actions", "next_observations")
"""The replay buffer's arrays the probe reads, each ``[S, n_envs, d]``."""
MIN_GAP = 5.0
"""Clip pairs whose true returns differ by less than this are not scored."""


def _first_reward() -> Any:
    spec = importlib.util.spec_from_file_location("first_reward", Path(__file__).with_name("first_reward.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_clips(paths: list[str], length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(obs [S, 17], acts [S, 6], next_obs [S, 17], returns [S // length])`` from replay buffers,
    cut into consecutive clips of ``length`` steps (an SB3 buffer stores steps in order)."""
    parts: list[tuple[np.ndarray, ...]] = []
    for path in paths:
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = [np.asarray(z[k], np.float32) for k in KEYS]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
            raise SystemExit(f"{path}: not a replay buffer saved by a run ({e})") from None
        obs, acts, nxt = (x.reshape(len(x), -1) for x in arrays)  # [S, n_envs=1, d] -> [S, d]
        if obs.shape[1] != 17 or acts.shape[1] != 6:
            raise SystemExit(
                f"{path}: not a {ENV} replay buffer (observation {obs.shape[1]}, action {acts.shape[1]})"
            )
        rows = len(obs) // length * length
        parts.append((obs[:rows], acts[:rows], nxt[:rows]))
    obs, acts, nxt = (np.concatenate([p[i] for p in parts]) for i in range(3))
    true = nxt[:, VELOCITY] - CTRL_COST * (acts**2).sum(-1)
    return obs, acts, nxt, true.reshape(-1, length).sum(1)


def score(
    net: torch.nn.Module, clips: tuple[np.ndarray, ...], pairs: np.ndarray, length: int
) -> dict[str, float]:
    """The four figures of one reward on the buffer clips (``pairs [P, 2]`` clip indices)."""
    obs, acts, nxt, ret = clips
    with torch.no_grad():
        mean, _ = net.predict(obs, acts, nxt)  # type: ignore[operator]
    pred = np.asarray(mean).reshape(-1, length).sum(1)
    agree = np.sign(pred[pairs[:, 0]] - pred[pairs[:, 1]]) == np.sign(ret[pairs[:, 0]] - ret[pairs[:, 1]])
    rank = [np.argsort(np.argsort(x)) for x in (pred, ret)]
    back, stand, fwd = np.where(ret < -20)[0], np.where(np.abs(ret) < 10)[0][:500], np.where(ret > 50)[0]

    def share(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.mean(pred[a][:, None] > pred[b][None, :])) if len(a) and len(b) else float("nan")

    return {"accuracy": float(agree.mean()), "spearman": float(np.corrcoef(rank[0], rank[1])[0, 1]),
            "stand_over_back": share(stand, back), "forward_over_stand": share(fwd, stand)}  # fmt: skip


def _mean(values: list[float]) -> float:
    """Mean over the draws that have the figure (NaN where none has: e.g. no backward clip)."""
    kept = [v for v in values if not np.isnan(v)]
    return float(np.mean(kept)) if kept else float("nan")


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["l2_init=0.01", "hidden=[256,256]"]`` -> ``{"l2_init": 0.01, "hidden": [256, 256]}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"expected KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("buffers", nargs="+", help=f"replay_buffer.npz files of learned {ENV} runs")
    p.add_argument("--labels", type=int, default=15, help="labels of the first update (30%% of 50)")
    p.add_argument("--initial-steps", type=int, default=1000, help="random steps before the first query")
    p.add_argument("--fragment-length", type=int, default=50, help="transitions per clip")
    p.add_argument("--draws", type=int, default=6, help="independent first rewards (seeds 0..N-1)")
    p.add_argument("--trainer", nargs="*", default=[], help="RewardTrainerConfig overrides, KEY=VALUE")
    p.add_argument("--reward", nargs="*", default=[], help="RewardNetConfig overrides, KEY=VALUE")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    clips = load_clips(a.buffers, a.fragment_length)
    ret = clips[3]
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, len(ret), (4000, 2))
    pairs = pairs[np.abs(ret[pairs[:, 0]] - ret[pairs[:, 1]]) > MIN_GAP]  # [P, 2]
    fr, env = _first_reward(), gym.make(ENV)
    trainer, reward = parse_overrides(a.trainer), parse_overrides(a.reward)
    rows = []
    for seed in range(a.draws):
        net = fr.draw(env, seed, a.labels, a.initial_steps, a.fragment_length, reward=reward, trainer=trainer)
        rows.append({"draw": seed, **score(net, clips, pairs, a.fragment_length)})
        print(json.dumps(rows[-1]), flush=True)
    summary = {k: _mean([r[k] for r in rows]) for k in rows[0] if k != "draw"}
    print(json.dumps({"clips": len(ret), "pairs": len(pairs), "draws": a.draws, **summary,
                      "worst_accuracy": min(r["accuracy"] for r in rows), "initial_steps": a.initial_steps,
                      "trainer": trainer, "reward": reward}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
