"""PEBBLE's unsupervised pre-training reward: particle-based state entropy.

The intrinsic reward of reaching ``s'`` is ``log(1 + ||s' - s'_k||)``, where ``s'_k`` is
the ``k``-th nearest neighbour of ``s'`` among recently visited states: the agent is paid
for going where it has not been, so the first clips shown to the teacher are diverse.

Observations of more than :data:`PROJECT_ABOVE` numbers (frames) are compared through a fixed
random projection to :data:`PROJECTED_DIM` numbers (Johnson–Lindenstrauss: distances are kept in
expectation, as RE3 keeps states in a fixed random encoder's space). Comparing raw 64x64 frames
against a memory of 10,000 of them cost ~0.5 GB per step and held PPO on CoinRun to ~15 steps
per second; projected, the k-NN search costs less than the environment step.

With ``center`` the reward is standardised by the mean and standard deviation of the same
reward of states drawn from the memory. The raw reward is positive at every step, so an agent
paid by it is paid for staying alive, and avoids whatever ends an episode. Where the events
that tell clips apart end episodes (CoinRun's coin, MountainCar's goal, a fall), that is the
opposite of what exploring while every label is a tie is for: standardised, only being
somewhere new pays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

PROJECT_ABOVE = 1024
"""Observations with more numbers than this (flattened) are projected; state vectors are not."""
PROJECTED_DIM = 64
"""Numbers per projected observation."""
REFERENCE = 128
"""Remembered states whose rewards ``center`` measures a new state's against."""
REFERENCE_EVERY = 100
"""Calls between fresh draws of those states."""


class StateEntropyReward:
    """k-NN state-entropy reward over a FIFO memory of visited (flattened) states.

    Args:
        k: which neighbour's distance is used.
        memory: number of recent states kept.
        seed: seed of the random projection of large observations.
        center: standardise the rewards by those of remembered states (so
            that a step is paid for its novelty, not for being one more step of an episode).
    """

    def __init__(self, k: int = 5, memory: int = 10_000, seed: int = 0, center: bool = False) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if memory < 1:
            raise ValueError(f"memory must be >= 1 state, got {memory}")
        self.k, self.memory, self.seed = k, memory, seed
        self.projection: torch.Tensor | None = None  # [D, PROJECTED_DIM] for large observations
        self.states: torch.Tensor | None = None  # [memory, d] ring buffer, the first `filled` rows valid
        self.filled = 0
        self.next = 0  # the row the next state overwrites
        self.center = center
        self.reference: tuple[float, float] | None = None  # (mean, std) of remembered states' rewards
        self.calls = 0
        self.ref_size = 0  # memory size when the reference states were drawn
        self.generator = torch.Generator().manual_seed(seed)

    def embed(self, next_obs: Any) -> torch.Tensor:
        """Flattened observations ``[B, D]``, projected to ``[B, PROJECTED_DIM]`` when ``D`` is large."""
        if isinstance(next_obs, dict):
            next_obs = np.concatenate([np.asarray(v).reshape(len(v), -1) for v in next_obs.values()], 1)
        x = torch.as_tensor(np.asarray(next_obs), dtype=torch.float32).reshape(len(next_obs), -1)  # [B, D]
        d = x.shape[1]
        if d <= PROJECT_ABOVE:
            return x
        if self.projection is None or self.projection.shape[0] != d:
            gen = torch.Generator().manual_seed(self.seed)
            self.projection = torch.randn(d, PROJECTED_DIM, generator=gen) / PROJECTED_DIM**0.5
        return x @ self.projection

    def remember(self, x: torch.Tensor) -> torch.Tensor:
        """Add ``x [B, d]`` to the memory, dropping the oldest states; the memory's valid rows."""
        if self.states is None or self.states.shape[1] != x.shape[1]:
            self.states = torch.empty(self.memory, x.shape[1])
            self.filled = self.next = 0
        x = x[-self.memory :]
        idx = (self.next + torch.arange(len(x))) % self.memory
        self.states[idx] = x
        self.next = int((self.next + len(x)) % self.memory)
        self.filled = min(self.memory, self.filled + len(x))
        return self.states[: self.filled]

    @torch.no_grad()
    def __call__(self, next_obs: Any) -> np.ndarray:
        """Rewards ``[B]`` for next observations ``[B, ...]`` (dict observations: concatenated)."""
        x = self.embed(next_obs)  # [B, d]
        mem = self.remember(x)  # [M, d]
        k = min(self.k, len(mem) - 1)
        if k < 1:
            return np.zeros(len(x), dtype=np.float32)
        d = torch.cdist(x, mem)  # [B, M]; includes each state itself at distance 0
        kth = d.topk(k + 1, dim=1, largest=False).values[:, -1]
        r = torch.log1p(kth).numpy().astype(np.float64)
        if self.center:
            r = self.standardise(r, mem, k)
        return r.astype(np.float32)

    def standardise(self, r: np.ndarray, mem: torch.Tensor, k: int) -> np.ndarray:
        """``r [B]`` less the mean, over the std, of the same reward of :data:`REFERENCE` states of
        the memory ``mem [M, d]`` (drawn afresh every :data:`REFERENCE_EVERY` calls, and whenever
        the memory has grown by a tenth): how much rarer a state is than the ones remembered.
        Not a running mean of past rewards: the k-NN distances shrink as the memory fills, so
        past rewards sit above the newest ones and would pay for ending episodes instead."""
        if self.reference is None or self.calls % REFERENCE_EVERY == 0 or len(mem) > 1.1 * self.ref_size:
            self.ref_size = len(mem)
            pick = torch.randperm(len(mem), generator=self.generator)[:REFERENCE]
            ref = torch.cdist(mem[pick], mem).topk(k + 1, dim=1, largest=False).values[:, -1]  # [R]
            ref_r = torch.log1p(ref).double()
            self.reference = (float(ref_r.mean()), max(float(ref_r.std()) if len(ref_r) > 1 else 0.0, 1e-6))
        self.calls += 1
        mean, std = self.reference
        return (r - mean) / std
