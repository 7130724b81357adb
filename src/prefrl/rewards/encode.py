"""Encode fragments into a reward network's feature table, and index it."""

from __future__ import annotations

import numpy as np
import torch

from prefrl.data.fragments import Fragments
from prefrl.rewards.nets import Features, RewardNet, to_tensor


def encode_fragments(net: RewardNet, fragments: Fragments, idx: np.ndarray | None = None) -> Features:
    """Features ``[N, L, ...]`` of fragments ``idx`` (all by default)."""
    fa = fragments.arrays(idx)
    dev = net.device
    return net.encode(
        to_tensor(fa.obs, dev), to_tensor(fa.acts, dev), to_tensor(fa.next_obs, dev),
        to_tensor(fa.dones, dev),
    )  # fmt: skip


def gather(feats: Features, idx: torch.Tensor) -> Features:
    """Index the leading (fragment) dimension of every feature tensor: ``[N, ...] -> [*I, ...]``."""
    return {k: v[idx] for k, v in feats.items()}


@torch.no_grad()
def fragment_rewards(net: RewardNet, fragments: Fragments, chunk: int = 4096) -> torch.Tensor:
    """Per-step rewards ``[E, N, L]`` of all fragments, in chunks."""
    out = [
        net.score(encode_fragments(net, fragments, np.arange(s, min(s + chunk, len(fragments)))))
        for s in range(0, len(fragments), chunk)
    ]
    return torch.cat(out, 1)
