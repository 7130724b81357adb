"""Encode fragments into a reward network's feature table, and index it."""

from __future__ import annotations

import numpy as np
import torch

from prefrl.data.arrays import obs_map
from prefrl.data.fragments import Fragments
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
    """Fragments scored per pass so that one pass stays near :data:`CHUNK_BYTES` (``>= 1``).

    An MLP on small vectors takes ``most`` at a time; 50-step Atari clips (``4x84x84``
    frames, 3 members) about 7, where 4096 would need tens of gigabytes.
    """
    row = obs_map(lambda a: a[:1], fragments.table_obs)
    elems = sum(np.asarray(v).size for v in (row.values() if isinstance(row, dict) else [row]))
    per = fragments.length * max(1, elems) * 4 * 2 * net.ensemble_size  # bytes per fragment
    return int(max(1, min(most, CHUNK_BYTES // per)))


@torch.no_grad()
def fragment_rewards(net: RewardNet, fragments: Fragments, chunk: int = 4096) -> torch.Tensor:
    """Per-step rewards ``[E, N, L]`` of all fragments, in chunks (bounded in memory)."""
    chunk = fragments_per_chunk(net, fragments, chunk)
    out = [
        net.score(encode_fragments(net, fragments, np.arange(s, min(s + chunk, len(fragments)))))
        for s in range(0, len(fragments), chunk)
    ]
    return torch.cat(out, 1)
