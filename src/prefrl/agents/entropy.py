"""PEBBLE's unsupervised pre-training reward: particle-based state entropy.

The intrinsic reward of reaching ``s'`` is ``log(1 + ||s' - s'_k||)``, where ``s'_k`` is
the ``k``-th nearest neighbour of ``s'`` among recently visited states: the agent is paid
for going where it has not been, so the first clips shown to the teacher are diverse.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


class StateEntropyReward:
    """k-NN state-entropy reward over a FIFO memory of visited (flattened) states.

    Args:
        k: which neighbour's distance is used.
        memory: number of recent states kept.
    """

    def __init__(self, k: int = 5, memory: int = 10_000) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k, self.memory = k, memory
        self.states: torch.Tensor | None = None

    @torch.no_grad()
    def __call__(self, next_obs: Any) -> np.ndarray:
        """Rewards ``[B]`` for next observations ``[B, ...]`` (dict observations: concatenated)."""
        if isinstance(next_obs, dict):
            next_obs = np.concatenate([np.asarray(v).reshape(len(v), -1) for v in next_obs.values()], 1)
        x = torch.as_tensor(np.asarray(next_obs), dtype=torch.float32).reshape(len(next_obs), -1)  # [B, D]
        mem = x if self.states is None else torch.cat([self.states, x])[-self.memory :]
        self.states = mem
        k = min(self.k, len(mem) - 1)
        if k < 1:
            return np.zeros(len(x), dtype=np.float32)
        d = torch.cdist(x, mem)  # [B, M]; includes each state itself at distance 0
        kth = d.topk(k + 1, dim=1, largest=False).values[:, -1]
        return torch.log1p(kth).numpy().astype(np.float32)
