"""Tied labels: how many a run has, and what a run whose labels are mostly ties is told."""

from __future__ import annotations

import numpy as np

TIE_WARN = 0.5
"""Share of tied labels from which a run warns that little can be learned."""
TIE_HINT = (
    "A tie teaches the reward model nothing about which behaviour is better. Clips tie when "
    "their returns are equal, e.g. under a reward that is the same at every step (CartPole's "
    "+1) unless a clip reaches an episode's end, or under a sparse reward that no clip "
    "reaches. While ties are the majority, half of each query's clips are drawn where episodes "
    "end (--loop.end-clip-frac), and while every label is a tie the agent explores (state "
    "entropy, --loop.tie-exploration). Also try longer clips (--loop.fragment-length), more exploration "
    "(--loop.pretrain-steps, --loop.exploration-frac), or active selection "
    "(--loop.active-selection) so that clips differ."
)


def _ties(labels: np.ndarray) -> np.ndarray:
    """``[A]`` bool per answered label of ``labels [B]`` (NaN: unanswered): is it a tie (0.5)?"""
    return np.abs(labels[~np.isnan(labels)] - 0.5) < 1e-6


def tie_fraction(labels: np.ndarray) -> float | None:
    """Share of answered labels ``[B]`` that are ties (0.5); ``None`` when none is answered."""
    ties = _ties(labels)
    return float(ties.mean()) if len(ties) else None


def decided_labels(labels: np.ndarray) -> int:
    """How many of ``labels [B]`` prefer one clip (neither unanswered nor a tie)."""
    return int((~_ties(labels)).sum())
