"""Hybrid experience replay (QPA): part of every off-policy batch from the newest transitions.

With a learned reward that keeps changing, the agent's value estimates matter most where
the current policy goes; QPA (Hu et al. 2024) draws a share of each batch from the most
recent transitions and the rest uniformly. These buffers are SB3's own replay buffers with
only ``sample`` changed, so relabelling, saving and loading work as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer

randint = np.random.randint


class _Hybrid:
    """``sample``: ``recent_frac`` of the batch from the newest ``recent_size`` rows."""

    buffer_size: int
    pos: int
    full: bool
    optimize_memory_usage: bool

    _get_samples: Any

    def __init__(
        self, *args: Any, recent_frac: float = 0.5, recent_size: int = 10_000, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._setup(recent_frac, recent_size)

    def sample(self, batch_size: int, env: Any = None) -> Any:
        return self._get_samples(self.hybrid_indices(batch_size), env=env)

    def _setup(self, recent_frac: float, recent_size: int) -> None:
        if not 0.0 <= recent_frac <= 1.0 or recent_size < 1:
            raise ValueError(
                f"need recent_frac in [0, 1] and recent_size >= 1, got {recent_frac}, {recent_size}"
            )
        self.recent_frac, self.recent_size = recent_frac, recent_size

    def hybrid_indices(self, batch_size: int) -> np.ndarray:
        """``[batch_size]`` row indices: the recent share first, then uniform over the buffer.

        Drawn from NumPy's global generator, as SB3's own buffers do (``set_random_seed``
        seeds it), so runs stay reproducible.
        """
        rows = self.buffer_size if self.full else self.pos
        skip = 1 if self.optimize_memory_usage and self.full else 0  # row ``pos`` is invalid then
        window = min(self.recent_size, rows - skip)
        n_recent = round(batch_size * self.recent_frac) if window > 0 else 0
        recent: np.ndarray | list[int] = []
        if n_recent:
            recent = (self.pos - 1 - randint(0, window, n_recent)) % self.buffer_size
        if self.full:
            rest = (randint(skip, self.buffer_size, batch_size - n_recent) + self.pos) % self.buffer_size
        else:
            rest = randint(0, self.pos, batch_size - n_recent)
        return np.concatenate([np.asarray(recent, dtype=np.int64), rest.astype(np.int64)])


class HybridReplayBuffer(_Hybrid, ReplayBuffer):
    """SB3's ``ReplayBuffer`` with hybrid sampling (``recent_frac``, ``recent_size`` rows)."""


class HybridDictReplayBuffer(_Hybrid, DictReplayBuffer):
    """SB3's ``DictReplayBuffer`` (Dict observations) with hybrid sampling."""
