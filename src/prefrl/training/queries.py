"""The loop's query step without the loop: candidate clip pairs, and which of them to ask.

:func:`candidate_pairs` cuts clips from an iteration's episodes and pairs them;
:func:`choose_pairs` picks the ones to ask, uniformly or by ensemble disagreement.
"""

from __future__ import annotations

import numpy as np

from prefrl.data.fragments import Fragments, distinct_pairs, sample_fragments
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.rewards.nets import RewardNet
from prefrl.selection import DisagreementSelector, UniformSelector
from prefrl.training.config import LoopConfig


def candidate_pairs(
    batch: TrajectoryBatch, n_frag: int, n_end: int, n_cand: int, length: int, rng: np.random.Generator
) -> tuple[Fragments, np.ndarray]:
    """``n_frag`` clips of ``length`` steps from ``batch`` (``n_end`` of them containing a
    terminated episode's end) and up to ``n_cand`` pairs ``[m, 2]`` of distinct clips."""
    # distinct windows where the batch has enough (a clip paired with itself teaches nothing)
    frags, _ = sample_fragments(batch, n_frag - n_end, length, rng, replace=None)
    if n_end:
        ends, _ = sample_fragments(batch, n_end, length, rng, only_ends=True, replace=None)
        frags = Fragments.concat([frags, ends])
    perm = rng.permutation(n_frag)
    cand = perm[: 2 * n_cand].reshape(-1, 2) if n_frag >= 2 * n_cand else perm[:2].reshape(1, 2)
    return frags, distinct_pairs(frags, cand)  # no clip against itself, no pair twice


def choose_pairs(
    net: RewardNet,
    frags: Fragments,
    cand: np.ndarray,
    k: int,
    config: LoopConfig,
    active: bool,
    rng: np.random.Generator,
) -> tuple[np.ndarray, dict[str, float]]:
    """Indices ``[k]`` of ``cand`` to ask and the selection's metrics: by disagreement (its
    share of them, ``config.active_selection_share``) when ``active``, else uniformly."""
    if not active:
        return UniformSelector(rng).select(frags, cand, k), {}
    selector = DisagreementSelector(net, config.uncertainty_measure, rng=rng)
    scores = selector.scores(frags, cand)
    chosen = selector.mixed(scores, k, config.active_selection_share)
    ends = frags.reals[cand] < frags.length  # [m, 2]: clip runs into the absorbing state
    return chosen, {
        "labels/disagreement_chosen": float(scores[chosen].mean()),
        "labels/disagreement_candidates": float(scores.mean()),
        "labels/absorbing_share_chosen": float(ends[chosen].mean()),
        "labels/absorbing_share_candidates": float(ends.mean()),
    }
