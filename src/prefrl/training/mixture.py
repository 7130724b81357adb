"""Mixture queries (PPE, NeurIPS 2025): part of each round's pairs from the agent's latest
episodes, part from the older experience where the reward ensemble is least sure.

Queries drawn only from the latest episodes (QPA's rule, and the loop's default) compare clips
so alike that a teacher can hardly tell them apart, and leave the reward unconstrained just
outside the policy's current behaviour, where an agent that moves on goes next. PPE found
that neither half alone helped and both together did (its kappa = 0.5).

:class:`EpisodeArchive` keeps the episodes of earlier iterations (bounded by steps);
:func:`archive_pairs` cuts candidate clips from them and picks the pairs the ensemble
disagrees on most (uniformly while the ensemble has fewer than two members);
:func:`join_queries` puts both halves into one set of clips and pairs for the teacher.

The run watch's ``watch_against_older`` uses the same archive another way:
:func:`newer_older_pairs` pairs clips of the newest episodes with clips of earlier ones, so the
teacher's answers say whether the agent's progress, as the reward sees it, is real.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from prefrl.data.fragments import Fragments, sample_fragments, window_counts
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.rewards.nets import RewardNet
from prefrl.selection import DisagreementSelector, UniformSelector
from prefrl.selection.selectors import Measure, ensemble_logits
from prefrl.training.config import LoopConfig
from prefrl.training.queries import candidate_pairs

ARCHIVE_PREFIX = "archive_"
"""Checkpoint files of the archive's batches (``archive_000.npz``, ...)."""


class EpisodeArchive:
    """Episodes of earlier iterations, newest last, at most ``max_steps`` steps in all (oldest
    dropped first; the newest batch is always kept whole).

    Example:
        >>> import numpy as np
        >>> from prefrl.data.trajectories import Trajectory, TrajectoryBatch
        >>> ep = Trajectory(np.zeros((11, 2), np.float32), np.zeros((10, 1), np.float32), np.zeros(10))
        >>> archive = EpisodeArchive(max_steps=25)
        >>> for _ in range(4):
        ...     archive.add(TrajectoryBatch.from_trajectories([ep]))
        >>> archive.steps
        20
    """

    def __init__(self, max_steps: int) -> None:
        if max_steps < 1:
            raise ValueError(f"the archive must hold at least one step, got max_steps={max_steps}")
        self.max_steps = max_steps
        self.batches: list[TrajectoryBatch] = []

    @property
    def steps(self) -> int:
        """Environment steps held."""
        return sum(b.num_steps for b in self.batches)

    def add(self, batch: TrajectoryBatch) -> None:
        """Keep ``batch`` (the episodes an iteration used), dropping the oldest beyond ``max_steps``."""
        if not batch.num_steps:
            return
        self.batches.append(batch)
        while len(self.batches) > 1 and self.steps > self.max_steps:
            self.batches.pop(0)

    def save_files(self, path: Path) -> None:
        """Write the held batches into checkpoint folder ``path`` (``archive_000.npz``, oldest
        first), so that a resumed run asks the queries the uninterrupted one would have."""
        for k, b in enumerate(self.batches):
            b.save(path / f"{ARCHIVE_PREFIX}{k:03d}.npz")

    def load_files(self, path: Path) -> None:
        """Hold the batches of checkpoint folder ``path`` (none in checkpoints written before
        the archive was saved: the archive starts empty again)."""
        self.batches = [TrajectoryBatch.load(f) for f in sorted(path.glob(f"{ARCHIVE_PREFIX}*.npz"))]

    def batch(self, length: int) -> TrajectoryBatch | None:
        """Every episode held as one batch, or ``None`` when no ``length``-step clip fits in it."""
        if not self.batches:
            return None
        whole = TrajectoryBatch.concat(self.batches)
        return whole if window_counts(whole, length).sum() > 0 else None


def archive_pairs(
    net: RewardNet,
    archive: TrajectoryBatch,
    k: int,
    length: int,
    oversampling: int,
    measure: Measure,
    rng: np.random.Generator,
) -> tuple[Fragments, np.ndarray]:
    """``k`` pairs ``[k', 2]`` (``k' <= k``) of clips cut from ``archive``, the ones of
    ``oversampling * k`` candidates the ensemble disagrees on most by ``measure`` (uniformly
    for a single network), and their clips."""
    n_cand = max(1, k * max(1, oversampling))
    frags, cand = candidate_pairs(archive, max(2, 2 * n_cand), 0, n_cand, length, rng)
    if not len(cand):
        return frags, cand
    return frags, cand[most_disputed(net, frags, cand, k, measure, rng)]


def most_disputed(
    net: RewardNet, frags: Fragments, cand: np.ndarray, k: int, measure: Measure, rng: np.random.Generator
) -> np.ndarray:
    """Indices ``[min(k, m)]`` of the candidate pairs ``cand [m, 2]`` the ensemble disagrees on
    most by ``measure`` (uniformly drawn for a single network)."""
    k = min(k, len(cand))
    if net.ensemble_size >= 2 or measure == "entropy":
        return DisagreementSelector(net, measure, rng=rng).select(frags, cand, k)
    return UniformSelector(rng).select(frags, cand, k)


def join_queries(
    recent: tuple[Fragments, np.ndarray], older: tuple[Fragments, np.ndarray]
) -> tuple[Fragments, np.ndarray]:
    """One set of clips and pairs ``[B1 + B2, 2]`` from the recent and the older half (the older
    half's clip indices shifted past the recent clips)."""
    (f1, p1), (f2, p2) = recent, older
    if not len(p2):
        return f1, p1
    return Fragments.concat([f1, f2]), np.concatenate([p1, p2 + len(f1)])


def older_share(n_queries: int, share: float) -> int:
    """How many of ``n_queries`` come from the archive: ``share`` of them, rounded up once
    there are at least two (so a round of 10 at share 0.5 asks 5 and 5)."""
    if share <= 0 or n_queries < 2:
        return 0
    return min(n_queries - 1, math.ceil(n_queries * share - 1e-9))


def newer_older_pairs(
    net: RewardNet,
    newest: TrajectoryBatch,
    archive: TrajectoryBatch,
    k: int,
    length: int,
    config: LoopConfig,
    rng: np.random.Generator,
) -> tuple[Fragments, np.ndarray, float]:
    """``k`` pairs ``[k', 2]`` (``k' <= k``) of ``length``-step clips, each a clip of the
    agent's ``newest`` episodes (first) against a clip of its earlier ones in ``archive``
    (second): the ones of ``config.active_selection_oversampling * k`` candidates the ensemble
    disagrees on most by ``config.uncertainty_measure``. Also returns how likely the reward as it
    stands finds the newer clip better, on average over the pairs chosen (NaN without pairs):
    against the teacher's answers, whether the agent's progress is real."""
    n = max(1, k * max(1, config.active_selection_oversampling))
    a, _ = sample_fragments(newest, n, length, rng, replace=None)
    b, _ = sample_fragments(archive, n, length, rng, replace=None)
    m = min(len(a), len(b))
    frags = Fragments.concat([a, b])
    cand = np.stack([np.arange(m), len(a) + np.arange(m)], 1)
    if not m:
        return frags, cand, float("nan")
    pairs = cand[most_disputed(net, frags, cand, k, config.uncertainty_measure, rng)]
    newer = float(torch.sigmoid(ensemble_logits(net, frags, pairs)).mean())
    return frags, pairs, newer
