"""Encode fragments into a reward network's feature table, and index it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from prefrl.data.arrays import obs_map
from prefrl.data.fragments import Fragments
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.rewards.nets import Features, RewardNet, to_tensor


def encode_fragments(net: RewardNet, fragments: Fragments, idx: np.ndarray | None = None) -> Features:
    """Features ``[N, L, ...]`` of fragments ``idx`` (all by default).

    When some fragment runs past its episode's end, the features carry the ``"absorbing"``
    mask ``[N, L]`` so the network scores those steps with its absorbing-state reward.
    """
    fa = fragments.arrays(idx)
    dev = net.device
    feats = net.encode(
        to_tensor(fa.obs, dev),
        to_tensor(fa.acts, dev),
        to_tensor(fa.next_obs, dev),
        to_tensor(fa.dones, dev),
    )
    if fa.absorbing.any():
        feats["absorbing"] = torch.as_tensor(fa.absorbing, device=dev)
    return feats


def gather(feats: Features, idx: torch.Tensor) -> Features:
    """Index the leading (fragment) dimension of every feature tensor: ``[N, ...] -> [*I, ...]``."""
    return {k: v[idx] for k, v in feats.items()}


CHUNK_BYTES = 256 * 2**20
"""Rough memory budget of one scoring pass (float inputs and activations of every member)."""


def fragments_per_chunk(net: RewardNet, fragments: Fragments, most: int = 4096) -> int:
    """Fragments scored per pass so that one pass stays near :data:`CHUNK_BYTES` (``>= 1``): as
    many as :func:`steps_per_chunk` steps hold.

    An MLP on small vectors takes ``most`` at a time; 50-step Atari clips (``4x84x84``
    frames, 3 members) about 7, where 4096 would need tens of gigabytes.
    """
    row = obs_map(lambda a: a[:1], fragments.table_obs)
    steps = steps_per_chunk(net, row, most=CHUNK_BYTES)  # uncapped: the cap is on fragments
    return int(max(1, min(most, steps // fragments.length)))


def steps_per_chunk(net: RewardNet, obs_row: object, most: int = 16_384) -> int:
    """Transitions scored per pass so that one pass stays near :data:`CHUNK_BYTES` (``>= 1``):
    ``obs_row`` is one observation (an array or a dict of them). Pong's ``4x84x84`` frames with 3
    members: about 400 at a time, where a 50,000-step iteration in one pass took 11 GB."""
    elems = sum(np.asarray(v).size for v in (obs_row.values() if isinstance(obs_row, dict) else [obs_row]))
    per = max(1, elems) * 4 * 2 * net.ensemble_size  # float obs and next obs for every member
    return int(max(1, min(most, CHUNK_BYTES // per)))


def batch_rewards(
    net: RewardNet, fn: Callable[..., np.ndarray], batch: TrajectoryBatch, rows: np.ndarray | None = None
) -> np.ndarray:
    """``fn(obs, acts, next_obs, dones)`` (rewards ``[n]`` of ``net``) on the transitions leaving
    ``rows`` of ``batch`` (default: every one), in passes of :func:`steps_per_chunk` transitions,
    concatenated: ``[len(rows)]`` float32. Only one pass's inputs are ever copied out of ``batch``."""
    rows = batch.step_rows if rows is None else np.asarray(rows)
    if len(rows) == 0:
        return np.zeros(0, np.float32)
    chunk = steps_per_chunk(net, obs_map(lambda a: a[0], batch.obs))
    parts = [np.asarray(fn(*batch.transitions(rows[s : s + chunk])), np.float32)
             for s in range(0, len(rows), chunk)]  # fmt: skip
    return np.concatenate(parts)


@torch.no_grad()
def fragment_rewards(net: RewardNet, fragments: Fragments, chunk: int = 4096) -> torch.Tensor:
    """Per-step rewards ``[E, N, L]`` of all fragments, in chunks (bounded in memory)."""
    chunk = fragments_per_chunk(net, fragments, chunk)
    out = [
        net.score(encode_fragments(net, fragments, np.arange(s, min(s + chunk, len(fragments)))))
        for s in range(0, len(fragments), chunk)
    ]
    return torch.cat(out, 1)
