"""The clips stage of :class:`~prefrl.training.loop.PreferenceLoop`: episodes, clips, the pairs to ask.

:class:`Clips` gathers each iteration's episodes (from the agent's env stack, a fixed batch
offline, or rollouts in a side environment), keeps earlier ones for mixture queries, cuts clips
from them (a share where episodes end; shortened once before the first label when no episode
is long enough) and picks the pairs to ask, uniformly or by ensemble disagreement. Its random
generator is the loop's (seeded by ``LoopConfig.seed``): clips, pairs and selection draw from it
in one order, so a run is reproducible from its seed.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from prefrl.agents.protocols import Env
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.rollout import Policy, collect_episodes
from prefrl.data.fragments import Fragments, window_counts
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.rewards.nets import RewardNet
from prefrl.training.config import AUTO_END_CLIP_FRAC, LoopConfig
from prefrl.training.mixture import (
    EpisodeArchive,
    archive_pairs,
    join_queries,
    newer_older_pairs,
    older_share,
)
from prefrl.training.queries import candidate_pairs, choose_pairs
from prefrl.training.ties import TIE_WARN

AGAINST_OLDER_SHARE = 0.5
"""With ``watch_against_older``: the share of an iteration's queries (of those not taken by
mixture queries) that pair a newest clip with an older one."""


@dataclass(frozen=True)
class Query:
    """Pairs picked to ask: ``pairs [k, 2]`` of ``fragments``, and the selection's metrics."""

    fragments: Fragments
    pairs: np.ndarray
    k: int
    picked: dict[str, float]
    newer_older: int = 0
    """The last this many pairs put a clip of the newest episodes against an older one (first: newer)."""


class ClipsState(TypedDict):
    """The clips stage's part of a checkpoint (``state.json``)."""

    fragment_length: int  # (read with a default: older checkpoints lack it)
    rng: Mapping[str, Any]
    """The generator's state (NumPy's ``bit_generator.state``)."""


class Clips:
    """Episodes, clips and the pairs to ask (see the module docstring).

    Args:
        config: the loop's schedule (clip length, selection, mixture, exploration mixing).
        net: the reward network whose ensemble disagreement picks pairs.
        recorder: the recorder in the agent's env stack (``None`` offline).
        trajectories: offline: the episodes to draw clips from.
        side_env: a plain env (true reward) for exploration mixing and fallback rollouts.

    State (:meth:`state_dict`): the clip length now and the random generator.
    """

    def __init__(
        self,
        config: LoopConfig,
        net: RewardNet,
        recorder: TrajectoryRecorder | None = None,
        trajectories: TrajectoryBatch | None = None,
        side_env: Env | None = None,
    ) -> None:
        self.config, self.net = config, net
        self.recorder, self.trajectories, self.side_env = recorder, trajectories, side_env
        self.rng = np.random.default_rng(config.seed)
        self.length = config.fragment_length
        """Transitions per clip now: ``config.fragment_length``, shortened before the first label
        when no episode is long enough (the config itself is never changed)."""
        self.archive = EpisodeArchive(config.archive_steps)  # mixture queries' older episodes

    @property
    def render(self) -> bool:
        """Whether episodes carry rendered frames (a person labels them)."""
        return bool(self.recorder is not None and self.recorder.render_frames)

    # ------------------------------------------------------------------ episodes
    def gather(self, policy: Policy | None) -> TrajectoryBatch:
        """This iteration's episodes: the fixed batch offline, else those the agent played since
        the last call, else (none long enough for a clip) rollouts of ``policy`` in the side env."""
        if self.trajectories is not None:
            return self.trajectories
        assert self.recorder is not None
        batch = self.recorder.pop_episodes()
        if batch is None:  # e.g. right after a resume, or episodes longer than an iteration
            batch = self.recorder.pop_episodes(include_partial=True)
        if batch is None or window_counts(batch, self.length).sum() == 0:
            batch = self.rollouts(max(self.length * 4, 1000), policy)
        return batch

    def rollouts(self, steps: int, policy: Policy | None) -> TrajectoryBatch:
        """``steps`` of ``policy`` (``None``: random actions) in the side env, seeded from the generator."""
        if self.side_env is None:
            raise ValueError("no episodes to draw clips from and no side environment to collect some")
        seed = int(self.rng.integers(2**31))
        return collect_episodes(self.side_env, n_steps=steps, policy=policy, seed=seed, render=self.render)

    def keep(self, batch: TrajectoryBatch) -> None:
        """Keep ``batch`` for the mixture queries of later iterations (when they are on)."""
        c = self.config
        older = c.archive_share > 0 or c.watch_against_older or c.watch_against_older_early
        if older and self.trajectories is None:
            self.archive.add(batch)

    # ------------------------------------------------------------------ queries
    def end_clip_frac(self, ties: float | None) -> float:
        """The share of query clips drawn at episode ends (``end_clip_frac``, or its auto rule
        for the share ``ties`` of tied labels so far)."""
        if self.config.end_clip_frac is not None:
            return self.config.end_clip_frac
        return AUTO_END_CLIP_FRAC if ties is not None and ties >= TIE_WARN else 0.0

    def pick(
        self,
        n_queries: int,
        batch: TrajectoryBatch,
        active: bool,
        labelled: bool,
        ties: float | None,
        ends: bool = False,
        cross: bool = False,
    ) -> Query | None:
        """Cut clips from ``batch`` and pick ``n_queries`` pairs (by disagreement when ``active``;
        ``labelled``: labels exist, so clips keep their length; ``ties``: the tie share so far;
        ``ends``: at least the auto share of clips at episode ends, whatever the ties;
        ``cross``: part of them newest against older clips, as the loop decides per round).
        ``None`` when no pair of distinct clips can be made."""
        c = self.config
        if c.exploration_frac > 0 and self.side_env is not None:
            n_rand = max(self.length, round(batch.num_steps * c.exploration_frac / (1 - c.exploration_frac)))
            batch = TrajectoryBatch.concat([batch, self.rollouts(n_rand, None)])
        older = self.archive.batch(self.length) if c.archive_share > 0 or cross else None
        n_old = older_share(n_queries, c.archive_share) if older is not None else 0
        against = older is not None and cross
        n_cross = older_share(n_queries - n_old, AGAINST_OLDER_SHARE) if against else 0
        n_queries -= n_old + n_cross  # the rest from the latest episodes
        n_cand = n_queries * (c.active_selection_oversampling if active else 1)
        n_frag = max(2, math.ceil(2 * n_cand * c.transition_oversampling))
        self._fit_length(batch, labelled)
        share = max(self.end_clip_frac(ties), AUTO_END_CLIP_FRAC if ends else 0.0)
        n_end = round(n_frag * share) if batch.terminated.any() else 0
        frags, cand = candidate_pairs(batch, n_frag, n_end, n_cand, self.length, self.rng)
        if not len(cand):
            return None
        k = min(n_queries, len(cand))
        chosen, picked = choose_pairs(self.net, frags, cand, k, c, active, self.rng)
        pairs = cand[chosen]
        if n_old and older is not None:  # mixture queries: the older half where the ensemble is least sure
            over, measure = c.active_selection_oversampling, c.uncertainty_measure
            old = archive_pairs(self.net, older, n_old, self.length, over, measure, self.rng)
            frags, pairs = join_queries((frags, pairs), old)
            picked["labels/archive_pairs"] = float(len(old[1]))
            k = len(pairs)
        n_asked = 0
        if n_cross and older is not None:  # the newest clips against older ones (the run watch)
            f_cross, p_cross, newer = newer_older_pairs(
                self.net, batch, older, n_cross, self.length, c, self.rng
            )
            frags, pairs = join_queries((frags, pairs), (f_cross, p_cross))
            n_asked, k = len(p_cross), len(pairs)
            if n_asked:
                picked["watch/reward_newer"] = newer
        return Query(frags, pairs, k, picked, n_asked)

    def _fit_length(self, batch: TrajectoryBatch, labelled: bool) -> None:
        """Before the first label, shorten clips to the longest episode when none is long enough.

        Only episodes cut short by a time limit (or the environment's own truncation) can
        be shorter than a clip; terminated ones continue in the absorbing state.
        """
        if window_counts(batch, self.length).sum() > 0:
            return
        longest = int(batch.lengths.max()) if len(batch) else 0
        if labelled or longest < 1:
            raise ValueError(
                f"no episode is long enough for {self.length}-step clips (longest: {longest} "
                "steps, none terminated); restart with a shorter --loop.fragment-length"
            )
        print(
            f"prefrl: episodes end (by truncation) after at most {longest} steps; clips shortened "
            f"from {self.length} to {longest} transitions",
            file=sys.stderr,
        )
        self.length = longest

    # ------------------------------------------------------------------ state
    def save_files(self, path: Path) -> None:
        """Write the archive of older episodes (mixture and newest-vs-older queries) into
        checkpoint folder ``path``."""
        self.archive.save_files(path)

    def load_files(self, path: Path) -> None:
        self.archive.load_files(path)

    def state_dict(self) -> ClipsState:
        """The checkpointed state: the clip length now and the generator's state."""
        return {"fragment_length": self.length, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: ClipsState) -> None:
        self.length = int(state.get("fragment_length") or self.config.fragment_length)  # older: none
        self.rng.bit_generator.state = state["rng"]
