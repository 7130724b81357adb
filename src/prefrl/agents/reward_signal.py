"""The learned reward as an environment wrapper sees it: :class:`LearnedReward`, a reward network
with the normalisation, exploration bonus and fast per-step path the wrappers of
:mod:`prefrl.agents.learned_reward` share."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from prefrl.rewards.nets import Array, RawBatch, RewardNet
from prefrl.rewards.normalization import RewardNormalizer

FAST_MAX_BATCH = 256
"""Batches up to this size take the NumPy fast path (per-step rewards); larger ones (replay
buffer relabelling) the network itself, where its batched kernels win."""


class LearnedReward:
    """A reward network's ensemble-mean reward plus the normaliser the agent sees.

    Rewards are measured from the network's absorbing-state reward (``r - r_absorbing``),
    so ending an episode is worth exactly 0 to the agent, as it is to SB3's value targets.
    In environments that can terminate the loop switches the normaliser to scale-only
    (``normalizer.center = False``) so that this anchor survives normalisation.

    Args:
        net: the reward network (its weights may change between calls: it is read live).
        normalize: divide by a running std (and subtract the running mean).
        update_stats: fold every batch of rewards computed by the wrappers into the
            running statistics (on-policy agents); off-policy loops reset them instead.
    """

    def __init__(self, net: RewardNet, normalize: bool = True, update_stats: bool = True) -> None:
        self.net = net
        self.normalize = normalize
        self.update_stats = update_stats
        self.normalizer = RewardNormalizer()
        self.intrinsic: Callable[[RawBatch], np.ndarray] | None = None
        """When set (``f(next_obs) -> [B]``), it replaces the learned reward (unsupervised pre-training)."""
        self.bonus = 0.0
        """Weight of the ensemble's std in the reward: ``bonus x`` std is added to it, so with a
        positive weight the agent seeks what the reward model is unsure about (RUNE; the loop
        decays it) and with a negative one avoids it (the loop's ``uncertainty_penalty``)."""
        self.bonus_center = 0.0
        """The ensemble std the bonus is measured from: ``bonus x (std - bonus_center)`` is
        added. 0 unless the owner sets it; the loop sets the newest steps' mean std where the
        reward is normalised by scale only (episodes terminate), so the bonus pays disagreement
        above the usual, not surviving (and a penalty does not pay ending)."""
        self.fast = False
        """Compute small batches (an agent's per-step rewards) with the NumPy inference path of
        :class:`~prefrl.rewards.inference.FastReward`, compiled from the network's weights; the
        owner must call :meth:`refresh` whenever the weights change (the loop does)."""
        self._fast_fn: Any = None  # compiled lazily; False: the network has no fast path
        self._absorbing: float | None = None

    def configure(
        self, *, normalize: bool | None = None, fast: bool | None = None, update_stats: bool | None = None
    ) -> LearnedReward:
        """Set how rewards are computed (``None`` keeps a setting): ``normalize`` (running
        statistics), ``fast`` (the NumPy per-step path; the owner calls :meth:`refresh` after
        every weight change) and ``update_stats`` (fold each batch into the statistics; loops
        that reset them instead turn it off). Returns ``self``."""
        if normalize is not None:
            self.normalize = normalize
        if fast is not None:
            self.fast = fast
        if update_stats is not None:
            self.update_stats = update_stats
        return self

    def set_bonus(self, weight: float) -> None:
        """The weight of the ensemble's std in the reward from now on: above 0 an exploration
        bonus (RUNE), below 0 a penalty (pessimism); 0: none."""
        if not math.isfinite(weight):
            raise ValueError(f"the weight of the ensemble's std must be finite, got {weight}")
        self.bonus = float(weight)

    def use_intrinsic(self, fn: Callable[[RawBatch], np.ndarray] | None) -> None:
        """Give the agent ``fn(next_obs) -> [B]`` instead of the learned reward (unsupervised
        pre-training, exploration while every label is a tie); ``None``: the learned reward again."""
        self.intrinsic = fn

    def scale_only(self) -> None:
        """Normalise by scale only from now on, so that the absorbing state stays worth 0 (the
        loop calls it once an episode has terminated)."""
        self.normalizer.center = False

    def refresh(self) -> None:
        """The network's weights changed: recompile the fast path on next use."""
        self._fast_fn, self._absorbing = None, None

    @torch.no_grad()
    def raw(self, obs: RawBatch, acts: Array, next_obs: RawBatch, dones: Array | None = None) -> np.ndarray:
        """Ensemble-mean reward ``[*lead]`` for transitions ``[*lead, ...]``, minus the
        absorbing-state reward (unnormalised), plus ``bonus x`` the ensemble std less
        :attr:`bonus_center`."""
        if self.fast and not self.bonus and isinstance(acts, np.ndarray) and len(acts) <= FAST_MAX_BATCH:
            if self._fast_fn is None:
                from prefrl.rewards.inference import FastReward

                self._fast_fn = FastReward.of(self.net) or False
                self._absorbing = self.net.absorbing_value()
            if self._fast_fn:
                d = np.zeros(len(acts), dtype=np.float32) if dones is None else np.asarray(dones, np.float32)
                return (self._fast_fn(obs, acts, next_obs, d) - self._absorbing).astype(np.float32)
        mean, std = self.net.predict(obs, acts, next_obs, dones)
        out = mean - self.net.absorbing_value()
        if self.bonus:
            out = out + self.bonus * (std - self.bonus_center)
        return out.astype(np.float32)

    def __call__(
        self, obs: RawBatch, acts: Array, next_obs: RawBatch, dones: Array | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(rewards for the agent, raw learned rewards)``, both ``[*lead]``."""
        if self.intrinsic is not None:
            return self.intrinsic(next_obs), self.raw(obs, acts, next_obs, dones)
        raw = self.raw(obs, acts, next_obs, dones)
        if not self.normalize:
            return raw, raw
        if self.update_stats:
            self.normalizer.update(raw)
        return self.normalizer(raw), raw
