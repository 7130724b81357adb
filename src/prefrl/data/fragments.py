"""Fragments: fixed-length clips of episodes, stored as windows into one step table.

A :class:`Fragments` holds ``N`` windows of ``L`` transitions. It does not copy frames:
it keeps the step table (rows laid out as in :class:`~prefrl.data.TrajectoryBatch`) and
the first row of each window. Overlapping fragments therefore share frames, and
:meth:`Fragments.compact` keeps only the rows that some fragment still uses.

Episode ends. A clip of an episode that *terminated* may run past its end: after the
terminal transition it continues in an absorbing state until step ``L``. Fragment ``i``
has ``real[i] <= L`` real transitions; steps ``t >= real[i]`` are absorbing. They read
the episode's final row of the table (its terminal observation, a zero action, true
reward 0 -- nothing more happens), so no row is ever copied or padded, and every clip
has the same length whatever the episode lengths were. Clips never run past a
*truncation* (a time limit is not an outcome), so only terminated episodes get them.
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
        rews: ``[*I, L]`` true rewards (0 in the absorbing state), or ``None`` when unknown.
        absorbing: ``[*I, L]`` bool, true for steps after the episode terminated.
    """

    obs: Any
    next_obs: Any
    acts: np.ndarray
    dones: np.ndarray
    rews: np.ndarray | None
    absorbing: np.ndarray


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
        real: ``[N]`` real transitions of each fragment (``L`` when it never reaches an
            episode's end); steps from ``real`` on are absorbing. ``None``: all are ``L``.
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
    real: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.length < 1:
            raise ValueError(f"fragment length must be >= 1, got {self.length}")
        if not (len(self.rows) == len(self.episode) == len(self.start)):
            raise ValueError("rows, episode and start must have the same length")
        if self.real is not None:
            real = np.asarray(self.real, dtype=np.int64)
            object.__setattr__(self, "real", real)
            if real.shape != self.rows.shape:
                raise ValueError(f"real has shape {real.shape}, expected {self.rows.shape}")
            if len(real) and (real.min() < 1 or real.max() > self.length):
                raise ValueError(f"real transitions per fragment must lie in [1, {self.length}]")
        n_rows = obs_len(self.table_obs)
        last = self.rows + self.reals
        if len(self.rows) and (self.rows.min() < 0 or last.max() >= n_rows):
            raise ValueError("fragment windows run past the end of their step table")

    def __len__(self) -> int:
        return len(self.rows)

    # ---------------------------------------------------------------- gather
    @property
    def reals(self) -> np.ndarray:
        """``[N]`` real transitions of each fragment (``L`` where none is absorbing)."""
        return np.full(len(self.rows), self.length, np.int64) if self.real is None else self.real

    def window(self, idx: np.ndarray | None = None, extra: int = 0) -> np.ndarray:
        """Table rows ``[*I, L + extra]`` of fragments ``idx`` (all when ``None``).

        Steps past a terminated episode's end repeat its final row (the absorbing state).
        """
        sel = slice(None) if idx is None else np.asarray(idx)
        steps = np.arange(self.length + extra)
        if self.real is None:
            return self.rows[sel][..., None] + steps
        return self.rows[sel][..., None] + np.minimum(steps, self.real[sel][..., None])

    def absorbing(self, idx: np.ndarray | None = None) -> np.ndarray:
        """``[*I, L]`` bool: steps of fragments ``idx`` spent in the absorbing state."""
        sel = slice(None) if idx is None else np.asarray(idx)
        return np.arange(self.length) >= self.reals[sel][..., None]

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
            absorbing=self.absorbing(idx),
        )

    def frames(self, idx: np.ndarray | None = None) -> np.ndarray:
        """Rendered frames ``[*I, L, H, W, 3]`` (one per step, before its action) of fragments ``idx``.

        Absorbing steps (after the episode terminated) show its last frame, dimmed.
        """
        if self.table_frames is None:
            raise ValueError("these fragments carry no rendered frames (collect with render=True)")
        if self.real is None:
            return self.table_frames[self.window(idx)]
        sel = slice(None) if idx is None else np.asarray(idx)
        real = self.real[sel][..., None]
        # frames are rendered before each action: the last one belongs to step real - 1
        rows = self.rows[sel][..., None] + np.minimum(np.arange(self.length), real - 1)
        out = self.table_frames[rows]
        ended = self.absorbing(idx)
        out[ended] //= 2
        return out

    @property
    def rews(self) -> np.ndarray | None:
        """``[N, L]`` true rewards (0 in the absorbing state), or ``None``."""
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
            self.table_obs,
            self.table_acts,
            self.table_rews,
            self.table_dones,
            self.rows[idx],
            self.length,
            self.episode[idx],
            self.start[idx],
            self.table_frames,
            None if self.real is None else self.real[idx],
        )

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
            None if self.real is None else self.real.copy(),
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
            np.concatenate([p.table_rews for p in parts]) if has_rews else None,
            np.concatenate([p.table_dones for p in parts]),
            np.concatenate([p.rows + o for p, o in zip(parts, offsets)]),
            parts[0].length,
            np.concatenate([p.episode for p in parts]),
            np.concatenate([p.start for p in parts]),
            np.concatenate([p.table_frames for p in parts]) if has_frames else None,
            None if all(p.real is None for p in parts) else np.concatenate([p.reals for p in parts]),
        )


@dataclass(frozen=True)
class SampleReport:
    """What :func:`sample_fragments` did with the episodes it was given."""

    episodes: int
    short_episodes: int
    """Truncated episodes shorter than a clip; never sampled from."""
    windows: int
    """Number of distinct windows sampling drew from."""


def window_counts(
    batch: TrajectoryBatch, length: int, include_ends: bool = True, only_ends: bool = False
) -> np.ndarray:
    """``[n]`` number of clips of ``length`` transitions each episode of ``batch`` offers.

    A terminated episode of ``T`` transitions offers ``T`` (a clip may start at any step and
    continue in the absorbing state after the end); any other episode ``T - L + 1`` (clips
    never cross a truncation), or none when it is shorter than ``L``. Without
    ``include_ends``, clips that contain an episode's last transition are not counted. With
    ``only_ends``, only clips that contain a terminated episode's last transition are (the
    last ``min(T, L)`` starts of each terminated episode).
    """
    lengths = batch.lengths
    if only_ends:
        return np.where(batch.terminated, np.minimum(lengths, length), 0)
    if include_ends:
        counts = np.where(batch.terminated, lengths, lengths - length + 1)
    else:
        counts = lengths - length
    return np.maximum(counts, 0)


def sample_fragments(
    batch: TrajectoryBatch,
    n: int,
    length: int,
    rng: np.random.Generator,
    *,
    include_ends: bool = True,
    short_episodes: Literal["drop", "error"] = "drop",
    replace: bool | None = True,
    episode_offset: int = 0,
    weights: np.ndarray | None = None,
    only_ends: bool = False,
) -> tuple[Fragments, SampleReport]:
    """Sample ``n`` fragments of ``length`` transitions uniformly over all windows.

    Every window of every episode is equally likely (see :func:`window_counts`), so an
    episode is chosen in proportion to its number of windows. Clips of terminated
    episodes may run past the end into the absorbing state (see the module docstring).

    Args:
        batch: episodes to sample from.
        n: number of fragments.
        length: ``L``, transitions per fragment.
        rng: random generator.
        include_ends: if false, windows containing an episode's last transition are excluded.
        short_episodes: truncated episodes too short for one window are dropped (counted in
            the report) with ``"drop"``, or make this raise with ``"error"``. Terminated
            episodes are never too short.
        replace: sample windows with replacement; ``None``: without, where there are at least
            ``n`` windows (no clip drawn twice), with replacement otherwise.
        episode_offset: added to episode indices in the provenance (global episode ids).
        weights: optional ``[n_episodes]`` non-negative weight per window of each episode
            (e.g. to favour episodes that ended); ``None`` = uniform.
        only_ends: draw only clips that contain a terminated episode's end (a fall, a goal).

    Returns:
        ``(fragments, report)``; ``fragments`` view ``batch``'s arrays (no copy).

    Raises:
        ValueError: if no episode offers a window, or a short one with ``"error"``.
    """
    if length < 1:
        raise ValueError(f"fragment length must be >= 1, got {length}")
    counts = window_counts(batch, length, include_ends, only_ends)
    if only_ends and counts.sum() == 0:
        raise ValueError("only_ends: no episode in the batch terminated")
    short = int(np.sum(counts == 0)) if not only_ends else 0
    if short and short_episodes == "error":
        raise ValueError(
            f"{short} of {len(batch)} episodes are shorter than fragment length {length} "
            f"(shortest: {int(batch.lengths.min())} steps)"
        )
    total = int(counts.sum())
    if total == 0:
        raise ValueError(
            f"fragment length {length} is longer than every episode "
            f"(longest: {int(batch.lengths.max())} steps, none terminated"
            f"{'' if include_ends else ', episode ends excluded'}); use a shorter length"
        )
    if replace is None:
        replace = total < n
    if weights is None:
        if not replace and n > total:
            raise ValueError(f"asked for {n} distinct fragments, only {total} windows exist")
        flat = rng.choice(total, size=n, replace=False) if not replace else rng.integers(0, total, n)
        cum = np.cumsum(counts)
        ep = np.searchsorted(cum, flat, side="right")
        start = flat - (cum[ep] - counts[ep])
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != counts.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"weights must be {counts.shape} finite non-negative numbers")
        mass = w * counts
        if mass.sum() <= 0:
            mass = counts.astype(np.float64)
        ep = rng.choice(len(counts), size=n, p=mass / mass.sum())
        start = np.floor(rng.random(n) * counts[ep]).astype(np.int64)
    if only_ends:  # the windows counted are the last ones of each episode
        start = start + batch.lengths[ep] - counts[ep]
    rows = batch.starts[ep] + start
    real = None
    if batch.terminated.any():
        left = batch.lengths[ep] - start  # transitions from the start to the episode's end
        real = np.minimum(length, left).astype(np.int64)
    frags = Fragments(
        batch.obs,
        batch.acts,
        batch.rews,
        batch.dones,
        rows.astype(np.int64),
        length,
        (ep + episode_offset).astype(np.int64),
        start.astype(np.int64),
        batch.infos.get("frames"),
        real,
    )
    return frags, SampleReport(episodes=len(batch), short_episodes=short, windows=total)


def distinct_pairs(fragments: Fragments, pairs: np.ndarray) -> np.ndarray:
    """``pairs [P, 2]`` without self-pairs and repeats, judged by the windows the clips show.

    Two fragments are the same clip when they start at the same step of the same episode
    (windows sampled with replacement can repeat); a pair of a clip with itself teaches
    nothing, and a pair asked twice in one batch wastes a label. Order is kept; ``(a, b)``
    and ``(b, a)`` count as one pair.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not len(pairs):
        return pairs
    window = fragments.episode.astype(np.int64) * (int(fragments.start.max()) + 1) + fragments.start
    a, b = window[pairs[:, 0]], window[pairs[:, 1]]
    keys = np.stack([np.minimum(a, b), np.maximum(a, b)], 1)
    _, first = np.unique(keys, axis=0, return_index=True)
    keep = np.zeros(len(pairs), bool)
    keep[first] = True
    return pairs[keep & (a != b)]


def random_pairs(n_fragments: int, n_pairs: int, rng: np.random.Generator) -> np.ndarray:
    """``[n_pairs, 2]`` random pairs of distinct fragment indices."""
    if n_fragments < 2:
        raise ValueError(f"need at least 2 fragments to make pairs, got {n_fragments}")
    a = rng.integers(0, n_fragments, n_pairs)
    b = (a + rng.integers(1, n_fragments, n_pairs)) % n_fragments
    return np.stack([a, b], axis=1).astype(np.int64)
