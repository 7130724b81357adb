"""Small fragments with rendered frames, for store and web tests."""

from __future__ import annotations

import numpy as np

from prefrl.data.fragments import Fragments


def make_fragments(n: int = 6, length: int = 5, seed: int = 0, side: int = 16) -> Fragments:
    """``n`` non-overlapping fragments of ``length`` steps; true reward = obs[0]; frames show it."""
    rng = np.random.default_rng(seed)
    rows = n * (length + 1)
    obs = rng.normal(size=(rows, 3)).astype(np.float32)
    acts = rng.normal(size=(rows, 1)).astype(np.float32)
    rews = obs[:, 0].copy()
    dones = np.zeros(rows, dtype=bool)
    frames = np.zeros((rows, side, side, 3), dtype=np.uint8)
    frames[..., 0] = (np.clip(obs[:, 0] * 60 + 128, 0, 255)).astype(np.uint8)[:, None, None]
    return Fragments(
        obs, acts, rews, dones, np.arange(n, dtype=np.int64) * (length + 1), length,
        np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64), frames,
    )  # fmt: skip
