"""Fragments: fixed-length clips of episodes, stored as windows into one step table.

A :class:`Fragments` holds ``N`` windows of ``L`` transitions. It does not copy frames:
it keeps the step table (rows laid out as in :class:`~prefrl.data.TrajectoryBatch`) and
the first row of each window. Overlapping fragments therefore share frames, and
:meth:`Fragments.compact` keeps only the rows that some fragment still uses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from prefrl.data.arrays import obs_concat, obs_len, obs_map
from prefrl.data.trajectories import TrajectoryBatch


@dataclass(frozen=True)
class FragmentArrays:
    """Materialised fragment data for an index array of shape ``I`` (e.g. ``[B, 2]``).

    Attributes:
        obs: ``[*I, L, ...]`` (or dict of such).
        next_obs: ``[*I, L, ...]`` (or dict of such).
        acts: ``[*I, L, ...]``.
        dones: ``[*I, L]`` bool, true where the transition ended the episode.
        rews: ``[*I, L]`` true rewards, or ``None`` when unknown.
    """

    obs: Any
    next_obs: Any
    acts: np.ndarray
    dones: np.ndarray
    rews: np.ndarray | None


@dataclass(frozen=True)
class Fragments:
    """``N`` windows of ``length`` transitions into a step table.

    Attributes:
        table_obs: ``[S, ...]`` observations (or dict of such).
        table_acts: ``[S, ...]`` actions.
        table_rews: ``[S]`` true rewards or ``None``.
        table_dones: ``[S]`` bool terminal flags.
        rows: ``[N]`` first row of each fragment; it spans rows ``rows .. rows + L``.
        length: ``L``, transitions per fragment.
        episode: ``[N]`` provenance: episode id of each fragment.
        start: ``[N]`` provenance: step within its episode where it starts.
        table_frames: optional ``[S, H, W, 3]`` uint8 rendered frames (``env.render()``),
            aligned with ``table_obs``, for showing clips to people.
    """

    table_obs: Any
    table_acts: np.ndarray
    table_rews: np.ndarray | None
    table_dones: np.ndarray
    rows: np.ndarray
    length: int
    episode: np.ndarray
    start: np.ndarray
    table_frames: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.length < 1:
            raise ValueError(f"fragment length must be >= 1, got {self.length}")
        n_rows = obs_len(self.table_obs)
        if len(self.rows) and (self.rows.min() < 0 or self.rows.max() + self.length >= n_rows):
            raise ValueError("fragment windows run past the end of their step table")
        if not (len(self.rows) == len(self.episode) == len(self.start)):
            raise ValueError("rows, episode and start must have the same length")

    def __len__(self) -> int:
        return len(self.rows)

    # ---------------------------------------------------------------- gather
    def window(self, idx: np.ndarray | None = None, extra: int = 0) -> np.ndarray:
        """Table rows ``[*I, L + extra]`` of fragments ``idx`` (all when ``None``)."""
        rows = self.rows if idx is None else self.rows[np.asarray(idx)]
        return rows[..., None] + np.arange(self.length + extra)

    def arrays(self, idx: np.ndarray | None = None) -> FragmentArrays:
        """Materialise fragments ``idx`` (any shape ``I``) into ``[*I, L, ...]`` arrays."""
        w = self.window(idx, extra=1)  # [*I, L+1]
        head, tail = w[..., :-1], w[..., 1:]
        return FragmentArrays(
            obs=obs_map(lambda a: a[head], self.table_obs),
            next_obs=obs_map(lambda a: a[tail], self.table_obs),
            acts=self.table_acts[head],
            dones=self.table_dones[head],
            rews=None if self.table_rews is None else self.table_rews[head],
        )

    def frames(self, idx: np.ndarray | None = None) -> np.ndarray:
        """Rendered frames ``[*I, L, H, W, 3]`` (one per step, before its action) of fragments ``idx``."""
        if self.table_frames is None:
            raise ValueError("these fragments carry no rendered frames (collect with render=True)")
        return self.table_frames[self.window(idx)]

    @property
    def rews(self) -> np.ndarray | None:
        """``[N, L]`` true rewards, or ``None``."""
        return None if self.table_rews is None else self.table_rews[self.window()]

    def returns(self, discount: float = 1.0) -> np.ndarray:
        """``[N]`` (discounted) true returns; raises if rewards are unknown."""
        if self.table_rews is None:
            raise ValueError("these fragments have no true rewards")
        w = discount ** np.arange(self.length)
        return self.table_rews[self.window()] @ w

    # ------------------------------------------------------------- reshape
    def select(self, idx: np.ndarray) -> Fragments:
        """A subset (same table, no copy)."""
        idx = np.asarray(idx)
        return Fragments(
            self.table_obs, self.table_acts, self.table_rews, self.table_dones,
            self.rows[idx], self.length, self.episode[idx], self.start[idx], self.table_frames,
        )  # fmt: skip

    def without_frames(self) -> Fragments:
        """The same fragments without rendered frames (to save memory)."""
        return dataclasses.replace(self, table_frames=None)

    def compact(self) -> Fragments:
        """Copy out only the rows some fragment uses (each frame once)."""
        used = np.unique(self.window(extra=1))  # sorted rows
        new_rows = np.searchsorted(used, self.rows)
        return Fragments(
            obs_map(lambda a: a[used], self.table_obs),
            self.table_acts[used],
            None if self.table_rews is None else self.table_rews[used],
            self.table_dones[used],
            new_rows.astype(np.int64),
            self.length,
            self.episode.copy(),
            self.start.copy(),
            None if self.table_frames is None else self.table_frames[used],
        )

    @staticmethod
    def concat(parts: Sequence[Fragments]) -> Fragments:
        """Concatenate fragments of the same length (tables are appended, not merged)."""
        if not parts:
            raise ValueError("nothing to concatenate")
        lengths = {p.length for p in parts}
        if len(lengths) != 1:
            raise ValueError(f"cannot concatenate fragments of different lengths {lengths}")
        offsets = np.cumsum([0] + [obs_len(p.table_obs) for p in parts[:-1]])
        has_rews = all(p.table_rews is not None for p in parts)
        has_frames = all(p.table_frames is not None for p in parts)
        return Fragments(
            obs_concat([p.table_obs for p in parts]),
            np.concatenate([p.table_acts for p in parts]),
            np.concatenate([p.table_rews for p in parts]) if has_rews else None,  # type: ignore[misc]
            np.concatenate([p.table_dones for p in parts]),
            np.concatenate([p.rows + o for p, o in zip(parts, offsets)]),
            parts[0].length,
            np.concatenate([p.episode for p in parts]),
            np.concatenate([p.start for p in parts]),
            np.concatenate([p.table_frames for p in parts]) if has_frames else None,  # type: ignore[misc]
        )


@dataclass(frozen=True)
class SampleReport:
    """What :func:`sample_fragments` did with the episodes it was given."""

    episodes: int
    short_episodes: int
    """Episodes with fewer usable windows than needed; never sampled from."""
    windows: int
    """Number of distinct windows sampling drew from."""


def sample_fragments(
    batch: TrajectoryBatch,
    n: int,
    length: int,
    rng: np.random.Generator,
    *,
    include_ends: bool = True,
    short_episodes: Literal["drop", "error"] = "drop",
    replace: bool = True,
    episode_offset: int = 0,
) -> tuple[Fragments, SampleReport]:
    """Sample ``n`` fragments of ``length`` transitions uniformly over all windows.

    Every window of every episode is equally likely, so an episode is chosen in
    proportion to its number of windows (``T_i - L + 1``), i.e. its length.

    Args:
        batch: episodes to sample from.
        n: number of fragments.
        length: ``L``, transitions per fragment.
        rng: random generator.
        include_ends: if false, windows containing an episode's last transition are excluded.
        short_episodes: episodes too short for one window are dropped (counted in the
            report) with ``"drop"``, or make this raise with ``"error"``.
        replace: sample windows with replacement.
        episode_offset: added to episode indices in the provenance (global episode ids).

    Returns:
        ``(fragments, report)``; ``fragments`` view ``batch``'s arrays (no copy).

    Raises:
        ValueError: if no episode is long enough, or a short one with ``"error"``.
    """
    if length < 1:
        raise ValueError(f"fragment length must be >= 1, got {length}")
    counts = batch.lengths - length + (1 if include_ends else 0)
    counts = np.maximum(counts, 0)
    short = int(np.sum(counts == 0))
    if short and short_episodes == "error":
        raise ValueError(
            f"{short} of {len(batch)} episodes are shorter than fragment length {length} "
            f"(shortest: {int(batch.lengths.min())} steps)"
        )
    total = int(counts.sum())
    if total == 0:
        raise ValueError(
            f"fragment length {length} is longer than every episode "
            f"(longest: {int(batch.lengths.max())} steps"
            f"{'' if include_ends else ', episode ends excluded'}); use a shorter length"
        )
    if not replace and n > total:
        raise ValueError(f"asked for {n} distinct fragments, only {total} windows exist")
    flat = rng.choice(total, size=n, replace=replace) if not replace else rng.integers(0, total, n)
    cum = np.cumsum(counts)
    ep = np.searchsorted(cum, flat, side="right")
    start = flat - (cum[ep] - counts[ep])
    rows = batch.starts[ep] + start
    rews = batch.rews
    frags = Fragments(
        batch.obs, batch.acts, rews, batch.dones,
        rows.astype(np.int64), length, (ep + episode_offset).astype(np.int64),
        start.astype(np.int64), batch.infos.get("frames"),
    )  # fmt: skip
    return frags, SampleReport(episodes=len(batch), short_episodes=short, windows=total)


def random_pairs(n_fragments: int, n_pairs: int, rng: np.random.Generator) -> np.ndarray:
    """``[n_pairs, 2]`` random pairs of distinct fragment indices."""
    if n_fragments < 2:
        raise ValueError(f"need at least 2 fragments to make pairs, got {n_fragments}")
    a = rng.integers(0, n_fragments, n_pairs)
    b = (a + rng.integers(1, n_fragments, n_pairs)) % n_fragments
    return np.stack([a, b], axis=1).astype(np.int64)
