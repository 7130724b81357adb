"""The main loop: collect behaviour, query a teacher, fit the reward, train the agent, repeat.

One iteration ``i`` (of ``config.iterations``):

1. sample fragments from the episodes played since the last query (plus random-action
   episodes when ``exploration_frac > 0``; a share ``end_clip_frac`` of clips that reach a
   termination) and ask the teacher the queries the schedule allots (sync teachers answer
   at once; async ones are polled). Clips of terminated episodes may run on into the
   absorbing state (see :mod:`prefrl.data.fragments`); once an episode has terminated the
   agent's reward is normalised by scale only, so the absorbing state stays worth 0;
2. fit the reward model (``initial_epoch_multiplier`` times longer the first time); a REED
   reward's encoder first trains on its self-predictive objective (:mod:`prefrl.training.representation`);
3. off-policy agents: relabel the whole replay buffer with the new reward (PEBBLE);
   reset the reward normaliser to the new reward's statistics;
4. train the agent for its share of environment steps on the learned reward;
5. log metrics, save labels, and checkpoint every ``checkpoint_interval`` iterations.

Before iteration 0, ``initial_steps`` of random behaviour (and optionally
``pretrain_steps`` of unsupervised, state-entropy-driven behaviour) are collected so the
first clips are varied. Without an agent (offline mode) clips come from a fixed
:class:`TrajectoryBatch` and steps 3--4 are skipped.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, cast

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from prefrl.agents.entropy import StateEntropyReward
from prefrl.agents.learned_reward import LearnedReward
from prefrl.agents.protocols import Agent, Env
from prefrl.agents.random_actions import varied_random_actions
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import (
    relabel_replay_buffer,
    write_buffer_rewards,
)
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments, sample_fragments, window_counts
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference.trainer import RewardTrainer, true_pair_accuracy
from prefrl.rewards.io import save_reward_net
from prefrl.rewards.nets import RewardNet
from prefrl.seeding import stream, stream_seed
from prefrl.storage.checkpoint import CheckpointDir
from prefrl.storage.logger import Logger, NullLogger, RowLogger
from prefrl.teachers import Answers, AsyncTeacher, Teacher
from prefrl.teachers.spec import is_async
from prefrl.training.callbacks import LoopCallback
from prefrl.training.checkpointing import LoopCheckpoint
from prefrl.training.closing import close_queries, queries_due, status_line
from prefrl.training.config import (
    AUTO_END_CLIP_FRAC,
    HELDOUT_PAIRS,
    TIE_HINT,
    TIE_WARN,
    UNLABELLED_CLIPS,
    LoopConfig,
    LoopState,
    decided_labels,
    query_allocation,
    resolve_selection,
    tie_fraction,
)
from prefrl.training.mixture import EpisodeArchive, archive_pairs, join_queries, older_share
from prefrl.training.queries import candidate_pairs, choose_pairs
from prefrl.training.representation import SelfPrediction


class PreferenceLoop:
    """Drives reward learning and agent training (see module docstring).

    Args:
        config: schedule of the loop.
        reward_net: the reward model being learned.
        trainer: fits ``reward_net`` (built on the same network).
        teacher: a sync :class:`~prefrl.teachers.Teacher` or an :class:`~prefrl.teachers.AsyncTeacher`.
        agent: an SB3 agent whose env is ``LearnedRewardVecEnv(TrajectoryRecorder(...))``;
            ``None`` for offline reward learning.
        recorder: the recorder inside the agent's env stack.
        reward: the :class:`LearnedReward` used by the agent's env wrapper.
        trajectories: offline mode: episodes to draw clips from.
        side_env: a plain env (true reward) for exploration mixing / fallback rollouts.
        run_dir: where labels, reward model and checkpoints go (``None``: nothing saved).
    """

    def __init__(
        self,
        config: LoopConfig,
        reward_net: RewardNet,
        trainer: RewardTrainer,
        teacher: Teacher | AsyncTeacher,
        agent: Agent | None = None,
        recorder: TrajectoryRecorder | None = None,
        reward: LearnedReward | None = None,
        trajectories: TrajectoryBatch | None = None,
        side_env: Env | None = None,
        run_dir: str | Path | None = None,
        logger: Logger | None = None,
        callbacks: Sequence[LoopCallback] = (),
        dataset: PreferenceDataset | None = None,
        config_hash: str = "",
    ) -> None:
        if agent is None and trajectories is None:
            raise ValueError("give an agent (online training) or trajectories (offline reward learning)")
        if agent is not None and (recorder is None or reward is None):
            raise ValueError("an agent needs the recorder and learned reward of its env stack")
        if config.agent_steps < 0:
            raise ValueError(
                f"total_steps {config.total_steps} is smaller than the random steps + pretrain_steps "
                f"({config.random_steps + config.pretrain_steps})"
            )
        config = resolve_selection(config, reward_net.ensemble_size)  # the same object once resolved
        self.config, self.net, self.trainer, self.teacher = config, reward_net, trainer, teacher
        self.representation = SelfPrediction.for_loop(reward_net, trainer.config)  # REED's encoder, else None
        self.agent, self.recorder, self.reward = agent, recorder, reward
        self.trajectories, self.side_env = trajectories, side_env
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.logger = logger or NullLogger()
        self.callbacks = list(callbacks)
        self.dataset = dataset if dataset is not None else PreferenceDataset(config.max_labels_kept)
        self.rng = np.random.default_rng(config.seed)
        self.state = LoopState(fragment_length=config.fragment_length)
        self.config_hash = config_hash
        later = is_async(teacher)  # TypeError for anything else
        self.sync_teacher: Teacher | None = None if later else cast(Teacher, teacher)
        self.async_teacher: AsyncTeacher | None = cast(AsyncTeacher, teacher) if later else None
        self.alloc = query_allocation(config)
        self.ckpt = CheckpointDir(self.run_dir) if self.run_dir is not None else None
        self.off_policy = isinstance(agent, OffPolicyAlgorithm)
        if reward is not None:
            # per-step rewards in NumPy (refreshed after every weight change); an off-policy
            # loop resets the statistics after each reward update instead of folding batches in
            reward.configure(normalize=config.normalize_reward, fast=True, update_stats=not self.off_policy)
        self._episodes: list[TrajectoryBatch] = []
        self.archive = EpisodeArchive(config.archive_steps)  # mixture queries' older episodes
        self._labels_since_train = 0
        self._tie_warned = False
        self._tie_explorer: StateEntropyReward | None = None  # see _explore_on_ties
        # label counts of the current iteration's queries, kept with the labels (not the checkpoint)
        # so that an iteration re-run after a crash still reports the queries it had asked
        self._iteration_labels: dict[str, float] = {}

    # ------------------------------------------------------------------ views
    @property
    def iteration(self) -> int:
        return self.state.iteration

    @property
    def env_steps(self) -> int:
        return self.state.env_steps

    def steps_for(self, i: int) -> int:
        """Agent training steps after reward update ``i``."""
        n, total = self.config.iterations, self.config.agent_steps
        return total // n + (1 if i < total % n else 0)

    # ------------------------------------------------------------------ run
    def run(self) -> dict[str, float]:
        """Run (or continue) until all iterations are done; returns the last metrics."""
        t_start = time.perf_counter() - self.state.wall_s
        for cb in self.callbacks:
            cb.on_start(self)
        if not self.state.started and self.agent is not None:
            self._initial_collection()
        metrics: dict[str, float] = {}
        while self.state.iteration < self.config.iterations:
            t0 = time.perf_counter()
            metrics = self._iteration(self.state.iteration)
            self.state.iteration += 1
            self.state.wall_s = time.perf_counter() - t_start
            metrics["time/iteration_s"] = time.perf_counter() - t0
            metrics["time/wall_s"] = self.state.wall_s
            self.state.history.append({"step": self.state.env_steps, **metrics})
            self.logger.log(metrics, self.state.env_steps)
            if isinstance(self.logger, RowLogger):  # one row per iteration, written now
                self.logger.flush_row()
            last = self.state.iteration == self.config.iterations
            k = self.config.checkpoint_interval
            if self.ckpt is not None and (last or (k > 0 and self.state.iteration % k == 0)):
                self.save_checkpoint()
            answers = [cb.on_iteration_end(self, metrics) for cb in self.callbacks]  # all are called
            if any(a is False for a in answers):
                break
        if self.async_teacher is not None:
            self._last_answers()
        for cb in self.callbacks:
            cb.on_end(self)
        return metrics

    def _last_answers(self) -> None:
        """Training is done: wait for the open queries, take their answers and close the rest
        (:func:`~prefrl.training.closing.close_queries`); fit the reward on new answers."""
        close_queries(self)
        if not len(self.dataset) or not self._labels_since_train:
            return
        if self.representation is not None:  # REED: no new episodes here, the replay buffer only
            self.representation.update(None, self.agent)
        self.trainer.train(self.dataset)
        self._labels_since_train = 0
        if self.reward is not None:
            self.reward.refresh()
        if self.run_dir is not None:
            save_reward_net(self.net, self.run_dir / "reward.safetensors")
        if self.ckpt is not None:
            self.save_checkpoint()

    # ------------------------------------------------------------------ stages
    def _learn(self, steps: int) -> None:
        if steps <= 0:
            return
        assert self.agent is not None
        hook = _StepHook(self, self.state.env_steps)
        self.agent.learn(steps, callback=hook, reset_num_timesteps=not self.state.started, progress_bar=False)
        self.state.started = True
        self.state.env_steps += steps

    def _initial_collection(self) -> None:
        c = self.config
        if isinstance(self.agent, OffPolicyAlgorithm):  # self.off_policy
            # the first learn() call restarts the agent's step counter (also for a warm start)
            self.agent.learning_starts = c.random_steps
            with self._random_action_size(self.agent):
                self._learn(c.random_steps)
        elif c.random_steps > 0:
            self._random_steps(c.random_steps)
        if c.pretrain_steps > 0:
            self._pretrain(c.pretrain_steps)
        self.state.started = True

    def _random_steps(self, steps: int) -> None:
        """Step the agent's env stack with random actions (on-policy initial collection)."""
        venv = self.agent.get_env() if self.agent is not None else None
        assert venv is not None
        venv.reset()
        with self._random_action_size(venv):
            for _ in range(math.ceil(steps / venv.num_envs)):
                venv.step(np.stack([venv.action_space.sample() for _ in range(venv.num_envs)]))
        self.state.env_steps += steps  # the agent has never learned, so its first learn() resets the env

    def _random_action_size(self, owner: Any) -> AbstractContextManager[None]:
        """Varied-size random actions on ``owner`` (agent or env stack) where the config asks."""
        if self.config.random_action_size == "full":
            return nullcontext()
        venv = self.agent.get_env() if self.agent is not None else None
        num_envs = venv.num_envs if venv is not None else 1
        return varied_random_actions(
            owner,
            num_envs,
            self.state.fragment_length,
            seed=stream_seed(self.config.seed, "random_actions"),
            full_share=0.5 if self.config.random_action_size == "mixed" else 0.0,
        )

    def _pretrain(self, steps: int) -> None:
        """PEBBLE's unsupervised phase: the agent maximises a k-NN state-entropy reward."""
        assert self.reward is not None and self.recorder is not None
        self.reward.use_intrinsic(StateEntropyReward())
        try:
            self._learn(steps)
        finally:
            self.reward.use_intrinsic(None)

    def _gather_episodes(self) -> TrajectoryBatch:
        if self.trajectories is not None:
            return self.trajectories
        assert self.recorder is not None
        batch = self.recorder.pop_episodes()
        if batch is None:  # e.g. right after a resume, or episodes longer than an iteration
            batch = self.recorder.pop_episodes(include_partial=True)
        if batch is None or window_counts(batch, self.state.fragment_length).sum() == 0:
            batch = self._policy_rollouts(max(self.state.fragment_length * 4, 1000))
        self._see_terminations(batch)
        return batch

    def _end_clip_frac(self) -> float:
        """The share of query clips drawn at episode ends (``end_clip_frac``, or its auto rule)."""
        if self.config.end_clip_frac is not None:
            return self.config.end_clip_frac
        ties = tie_fraction(self.dataset.labels)
        return AUTO_END_CLIP_FRAC if ties is not None and ties >= TIE_WARN else 0.0

    def _fit_fragment_length(self, batch: TrajectoryBatch) -> None:
        """Before the first label, shorten clips to the longest episode when none is long enough.

        Only episodes cut short by a time limit (or the environment's own truncation) can
        be shorter than a clip; terminated ones continue in the absorbing state.
        """
        length = self.state.fragment_length
        if window_counts(batch, length).sum() > 0:
            return
        longest = int(batch.lengths.max()) if len(batch) else 0
        if len(self.dataset) or self.state.queries_asked or longest < 1:
            raise ValueError(
                f"no episode is long enough for {length}-step clips (longest: {longest} "
                "steps, none terminated); restart with a shorter --loop.fragment-length"
            )
        print(
            f"prefrl: episodes end (by truncation) after at most {longest} steps; clips shortened "
            f"from {length} to {longest} transitions",
            file=sys.stderr,
        )
        self.state.fragment_length = longest

    def _see_terminations(self, batch: TrajectoryBatch) -> None:
        """Once an episode has terminated, normalise the agent's reward by scale only.

        The reward is measured from the absorbing state's (see :class:`LearnedReward`);
        shifting it would decide by accident whether the agent wants episodes to end.
        """
        if self.reward is not None and self.reward.normalizer.center and batch.terminated.any():
            self.reward.scale_only()

    def _policy_rollouts(self, steps: int, random: bool = False) -> TrajectoryBatch:
        if self.side_env is None:
            raise ValueError("no episodes to draw clips from and no side environment to collect some")
        agent = self.agent
        policy = None if random or agent is None else (lambda o: agent.predict(o)[0])
        seed = int(self.rng.integers(2**31))
        return collect_episodes(self.side_env, n_steps=steps, policy=policy, seed=seed, render=self._render)

    @property
    def _render(self) -> bool:
        return bool(self.recorder is not None and self.recorder.render_frames)

    def _query(self, n_queries: int, batch: TrajectoryBatch) -> dict[str, float]:
        """Sample clips from ``batch`` and ask ``n_queries`` comparisons."""
        c = self.config
        if c.exploration_frac > 0 and self.side_env is not None:
            n_rand = max(
                self.state.fragment_length,
                round(batch.num_steps * c.exploration_frac / (1 - c.exploration_frac)),
            )
            batch = TrajectoryBatch.concat([batch, self._policy_rollouts(n_rand, random=True)])
        active = (
            bool(c.active_selection)
            and len(self.dataset) > 0
            and decided_labels(self.dataset.labels) >= c.active_selection_from
        )
        older = self.archive.batch(self.state.fragment_length) if c.archive_share > 0 else None
        n_old = older_share(n_queries, c.archive_share) if older is not None else 0
        n_queries -= n_old  # the rest from the latest episodes
        n_cand = n_queries * (c.active_selection_oversampling if active else 1)
        n_frag = max(2, math.ceil(2 * n_cand * c.transition_oversampling))
        self._fit_fragment_length(batch)
        n_end = round(n_frag * self._end_clip_frac()) if batch.terminated.any() else 0
        frags, cand = candidate_pairs(batch, n_frag, n_end, n_cand, self.state.fragment_length, self.rng)
        if not len(cand):
            return {"labels/asked": 0.0}
        k = min(n_queries, len(cand))
        chosen, picked = choose_pairs(self.net, frags, cand, k, c, active, self.rng)
        pairs = cand[chosen]
        if n_old and older is not None:  # mixture queries: the older half where the ensemble is least sure
            length, over = self.state.fragment_length, c.active_selection_oversampling
            old = archive_pairs(self.net, older, n_old, length, over, c.uncertainty_measure, self.rng)
            frags, pairs = join_queries((frags, pairs), old)
            picked["labels/archive_pairs"] = float(len(old[1]))
            k = len(pairs)
        self.state.queries_asked += k
        # the iteration's label metrics are saved with the labels themselves, so that a run killed
        # right after still writes them in this iteration's row when it resumes
        if self.async_teacher is not None:
            self.async_teacher.submit(frags, pairs)
            asked = {"labels/asked": float(k), **picked}
            self._iteration_labels = {"iteration": float(self.state.iteration), **asked}
            self._save_labels()
            return asked
        assert self.sync_teacher is not None
        labels = self.sync_teacher.label(frags, pairs)
        rep = self.dataset.add(frags, pairs, labels)
        asked = {"labels/asked": float(k), "labels/answered": float(rep.added),
                 "labels/skipped": float(rep.skipped), **picked}  # fmt: skip
        self._iteration_labels = {"iteration": float(self.state.iteration), **asked}
        self._after_labels(rep.added)
        return asked

    def _poll(self, all: bool = False) -> int:
        """Add the answers an async teacher has ready (every answer so far with ``all``, those
        already in the dataset skipped by their keys); returns how many were added."""
        added = 0
        assert self.async_teacher is not None
        for batch in self.async_teacher.poll(all=all):
            ans = Answers(*batch)
            added += self.dataset.add(ans.fragments, ans.pairs, ans.labels, ans.keys).added
        if added:
            self._after_labels(added)
        return added

    def _after_labels(self, n_new: int) -> None:
        self._labels_since_train += n_new
        ties = tie_fraction(self.dataset.labels)
        if ties is not None and ties >= TIE_WARN and len(self.dataset) >= 10 and not self._tie_warned:
            self._tie_warned = True
            print(
                f"\nprefrl: warning: {ties:.0%} of the {len(self.dataset)} labels so far are ties. "
                + TIE_HINT,
                file=sys.stderr,
            )
        self._save_labels()
        for cb in self.callbacks:
            cb.on_labels(self, n_new)

    def _save_labels(self) -> None:
        if self.run_dir is None or self.ckpt is None:
            return
        self.dataset.save(self.run_dir / "preferences.npz")
        self._write_labels_state()

    def _write_labels_state(self) -> None:
        if self.ckpt is None:
            return
        self.ckpt.write_labels_state(
            {
                "queries_asked": self.state.queries_asked,
                "labels": len(self.dataset),
                "iteration_labels": self._iteration_labels,
            }
        )

    def _wait_for_labels(self) -> None:
        """Block (with a status line) until an async teacher gives the first answer."""
        t0 = time.perf_counter()
        status = status_line(self)  # in place on a terminal showing progress, else a line every 30 s
        while len(self.dataset) == 0:
            if self._poll():
                break
            pending = self.async_teacher.pending() if self.async_teacher is not None else 0
            waited = time.perf_counter() - t0
            status.show(f"waiting for labels: {pending} queries pending, {waited:.0f}s")
            time.sleep(1.0)
        status.close()

    def _iteration(self, i: int) -> dict[str, float]:
        c = self.config
        m: dict[str, float] = {"iteration": float(i)}
        if self.reward is not None:  # RUNE's bonus or the penalty (also in a relabelled buffer)
            self.reward.set_bonus(self.bonus_weight())
        batch = self._gather_episodes()
        if self.trajectories is None and batch.rews is not None and batch.num_steps:
            m["rollout/true_return"] = float(np.mean(batch.episode_returns()))
            m.update(self._correlation(batch))
        due = queries_due(self.alloc, i, self.state.queries_asked)  # lost submits: spread, not in a lump
        if due:
            m.update(self._query(due, batch))  # saved its metrics with the labels
        elif self._iteration_labels.get("iteration") == i:  # asked before a crash, this iteration
            m.update({k: v for k, v in self._iteration_labels.items() if k.startswith("labels/")})
        if self.config.archive_share > 0 and self.trajectories is None:  # older clips for mixture queries
            self.archive.add(batch)
        if self.async_teacher is not None:
            self._poll()
            if len(self.dataset) == 0:
                self._wait_for_labels()
        m["labels/total"] = float(len(self.dataset))
        ties = tie_fraction(self.dataset.labels)
        if ties is not None:
            m["labels/tie_fraction"] = ties
        m["labels/queries_asked"] = float(self.state.queries_asked)
        t0 = time.perf_counter()
        if len(self.dataset) and (self._labels_since_train or self.trainer.calls == 0):
            mult = c.initial_epoch_multiplier if self.trainer.calls == 0 else 1.0
            if self.representation is not None:  # REED: the encoder learns the dynamics first
                m.update(self.representation.update(batch, self.agent, mult))
            rm = self.trainer.train(self.dataset, epoch_multiplier=mult, unlabelled=self._unlabelled(batch))
            m.update({f"reward/{k}": v for k, v in rm.items()})
            self._labels_since_train = 0
            self._reward_changed(batch)
        m["time/reward_s"] = time.perf_counter() - t0
        if self.run_dir is not None:
            save_reward_net(self.net, self.run_dir / "reward.safetensors")
        if self.agent is not None:
            m["agent/tie_exploration"] = float(self._explore_on_ties())
            t0 = time.perf_counter()
            try:
                self._learn(self.steps_for(i))
            finally:  # whoever uses the reward after this iteration gets the learned one
                if self.reward is not None:
                    self.reward.use_intrinsic(None)
            m["time/agent_s"] = time.perf_counter() - t0
        m["env_steps"] = float(self.state.env_steps)
        return m

    def _explore_on_ties(self) -> bool:
        """Give the agent the state-entropy reward while every label is a tie (``tie_exploration``),
        the learned reward otherwise; whether it explores now."""
        if self.reward is None:
            return False
        explore = (
            self.config.tie_exploration and len(self.dataset) > 0 and decided_labels(self.dataset.labels) == 0
        )
        if explore and self._tie_explorer is None:
            self._tie_explorer = StateEntropyReward()  # one memory of visited states for the run
        self.reward.use_intrinsic(self._tie_explorer if explore else None)
        return explore

    def bonus_weight(self) -> float:
        """The weight of the ensemble's std in the agent's reward now: the exploration bonus
        ``exploration_bonus (1 - decay)^env_steps`` minus ``uncertainty_penalty``."""
        c = self.config
        bonus = 0.0
        if c.exploration_bonus > 0:
            bonus = c.exploration_bonus * (1.0 - c.exploration_bonus_decay) ** self.state.env_steps
        return bonus - c.uncertainty_penalty

    def _unlabelled(self, batch: TrajectoryBatch) -> Fragments | None:
        """Unlabelled clips of this iteration's episodes for the trainer's pseudo-labels (SURF),
        when it uses them: up to :data:`UNLABELLED_CLIPS`, drawn on a stream of their own."""
        frags = self.dataset.fragments
        if self.trainer.config.pseudo_label_ratio <= 0 or frags is None or not batch.num_steps:
            return None
        rng = stream(self.config.seed, "pseudo_labels", self.state.iteration)
        clips, _ = sample_fragments(batch, UNLABELLED_CLIPS, frags.length, rng, replace=None)
        return clips if len(clips) >= 2 else None

    def _reward_changed(self, batch: TrajectoryBatch) -> None:
        """New reward weights: relabel the replay buffer and reset the normaliser."""
        if self.reward is None or self.agent is None:
            return
        self.reward.refresh()
        if isinstance(self.agent, OffPolicyAlgorithm):  # self.off_policy
            raw = relabel_replay_buffer(self.agent, self.reward.raw, self.config.relabel_batch)
            self.reward.normalizer.reset_to(raw)
            write_buffer_rewards(self.agent, self.reward.normalizer(raw) if self.reward.normalize else raw)
        else:
            rows = batch.step_rows
            nxt = rows + 1
            obs = _take(batch.obs, rows)
            raw = self.reward.raw(obs, batch.acts[rows], _take(batch.obs, nxt), batch.dones[rows])
            self.reward.normalizer.reset_to(raw)

    def _correlation(self, batch: TrajectoryBatch) -> dict[str, float]:
        """How well the current reward explains ``batch``'s true reward, before it trains on it.

        ``reward/pearson_true``: Pearson correlation of learned vs true per-step reward.
        ``reward/heldout_accuracy``: accuracy on :data:`HELDOUT_PAIRS` fresh clip pairs of
        ``batch`` ranked by their true return (strict preferences only); none of these clips
        has been labelled yet, so this is the held-out figure the progress bar shows.
        """
        if self.trainer.calls == 0 or batch.rews is None:
            return {}
        out = self._heldout_accuracy(batch)
        rows = batch.step_rows
        learned, _ = self.net.predict(
            _take(batch.obs, rows), batch.acts[rows], _take(batch.obs, rows + 1), batch.dones[rows]
        )
        true = batch.rews[rows]
        if len(rows) < 2 or np.std(learned) == 0 or np.std(true) == 0:
            return out
        return {**out, "reward/pearson_true": float(np.corrcoef(learned, true)[0, 1])}

    def _heldout_accuracy(self, batch: TrajectoryBatch) -> dict[str, float]:
        rng = stream(self.config.seed, "heldout", self.state.iteration)  # not the loop's stream
        acc = true_pair_accuracy(self.net, batch, HELDOUT_PAIRS, self.state.fragment_length, rng)
        return {} if acc is None else {"reward/heldout_accuracy": acc}

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        """Write a complete resumable checkpoint (:class:`~prefrl.training.checkpointing.LoopCheckpoint`)."""
        return LoopCheckpoint(self).save()

    def load_checkpoint(self, agent_loader: Callable[[Path], Agent] | None = None) -> bool:
        """Restore the latest checkpoint of ``run_dir`` (returns False when there is none).

        ``agent_loader(path) -> agent`` rebuilds the SB3 agent from ``policy.zip`` on the
        same env stack. Labels saved after the checkpoint (``RUN/preferences.npz``) are kept.
        """
        return LoopCheckpoint(self).load(agent_loader)


class _StepHook(BaseCallback):
    """Tells loop callbacks about environment steps while the agent trains (every 100 steps)."""

    def __init__(self, loop: PreferenceLoop, base: int) -> None:
        super().__init__()
        self.loop, self.base, self.start = loop, base, -1

    def _on_step(self) -> bool:
        if self.start < 0:
            self.start = self.num_timesteps - self.training_env.num_envs
        done = self.num_timesteps - self.start
        if done % 100 < self.training_env.num_envs:
            for cb in self.loop.callbacks:
                cb.on_env_steps(self.loop, self.base + done)
        return True


def _take(obs: Any, rows: np.ndarray) -> Any:
    return {k: v[rows] for k, v in obs.items()} if isinstance(obs, dict) else obs[rows]
