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

The loop composes five stages, each a typed object that owns its state and checkpoints it
(``state_dict()`` / ``load_state_dict()``): :class:`~prefrl.training.labels.Labels` (asking,
collecting, the budget), :class:`~prefrl.training.clips.Clips` (episodes, clips, the pairs to
ask), :class:`~prefrl.training.reward_fit.RewardFit` (the reward fitted to the labels),
:class:`~prefrl.training.agent_reward.AgentReward` (the reward signal the agent is paid) and
:class:`~prefrl.training.agent_step.AgentStep` (the agent's environment steps). A stage gets
what it needs of another as an argument of the loop's call; a checkpoint
(:class:`~prefrl.training.checkpointing.LoopCheckpoint`) composes their states.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np

from prefrl.agents.protocols import Agent, Env
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.reward_signal import LearnedReward
from prefrl.agents.sb3 import restarts_on_images
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference.trainer import RewardTrainer
from prefrl.rewards.nets import RewardNet
from prefrl.seeding import stream_seed
from prefrl.storage.logger import Logger, NullLogger, RowLogger
from prefrl.teachers import AsyncTeacher, Teacher
from prefrl.training.agent_reward import AgentReward, bonus_weight
from prefrl.training.agent_step import AgentLoader, AgentStep
from prefrl.training.callbacks import LoopCallback
from prefrl.training.checkpointing import LoopCheckpoint, LoopProgress
from prefrl.training.clips import Clips
from prefrl.training.closing import close_queries, shows_progress, status_line
from prefrl.training.config import LoopConfig, LoopState, resolve_agent_reset, resolve_selection
from prefrl.training.labels import Labels
from prefrl.training.restore import AgentRestore
from prefrl.training.reward_fit import RewardFit
from prefrl.training.watch import RunWatch

STUCK_LABELS = 3
"""How many of the newest labels must be ties for ``tie_exploration_stuck`` to explore."""

__all__ = ["LoopConfig", "PreferenceLoop"]  # the config, importable with the loop as the tutorial does


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
        config = resolve_agent_reset(config, agent is not None and restarts_on_images(agent))
        self.config, self.config_hash = config, config_hash
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.logger = logger or NullLogger()
        self.callbacks = list(callbacks)
        self.progress = LoopProgress()
        self.fit = RewardFit(reward_net, trainer, config, self.run_dir)
        self.watch = RunWatch(reward_net, config.seed)
        on = (config.watch_restore > 0 or config.agent_reset_trial is not None) and agent is not None
        self.restore = AgentRestore(reward_net, config.watch_restore) if on else None
        self.labels = Labels(config, teacher, dataset, self.run_dir, on_new=self._labels_added)
        self.clips = Clips(config, reward_net, recorder, trajectories, side_env)
        self.agent_step = AgentStep(agent, config, on_steps=self._env_steps_done)
        self.signal = None if reward is None else AgentReward(reward, config, self.agent_step.off_policy)
        self.checkpoint = None
        if self.run_dir is not None:
            parts = (self.progress, self.labels, self.clips, self.fit, self.agent_step, self.signal)
            self.checkpoint = LoopCheckpoint(self.run_dir, config_hash, *parts, self.restore)

    # ------------------------------------------------------------------ views
    @property
    def agent(self) -> Agent | None:
        return self.agent_step.agent

    @agent.setter
    def agent(self, agent: Agent | None) -> None:  # e.g. a warm start's policy
        self.agent_step.agent = agent

    @property
    def side_env(self) -> Env | None:
        return self.clips.side_env

    @side_env.setter
    def side_env(self, env: Env | None) -> None:
        self.clips.side_env = env

    @property
    def net(self) -> RewardNet:
        return self.fit.net

    @property
    def trainer(self) -> RewardTrainer:
        return self.fit.trainer

    @property
    def reward(self) -> LearnedReward | None:
        return None if self.signal is None else self.signal.reward

    @property
    def dataset(self) -> PreferenceDataset:
        return self.labels.dataset

    @property
    def async_teacher(self) -> AsyncTeacher | None:
        return self.labels.async_teacher

    @property
    def off_policy(self) -> bool:
        return self.agent_step.off_policy

    @property
    def iteration(self) -> int:
        return self.progress.iteration

    @property
    def env_steps(self) -> int:
        return self.agent_step.env_steps

    @property
    def state(self) -> LoopState:
        """Where the loop is (read from its stages)."""
        p, a = self.progress, self.agent_step
        return LoopState(p.iteration, a.env_steps, self.labels.asked, a.started, p.wall_s, p.history,
                         p.evaluations, self.clips.length)  # fmt: skip

    def bonus_weight(self) -> float:
        """The weight of the ensemble's std in the agent's reward now
        (:func:`~prefrl.training.agent_reward.bonus_weight`)."""
        return bonus_weight(self.config, self.env_steps, self._labels_left(), self._fresh_accuracy())

    # ------------------------------------------------------------------ run
    def run(self) -> dict[str, float]:
        """Run (or continue) until all iterations are done; returns the last metrics."""
        p = self.progress
        t_start = time.perf_counter() - p.wall_s
        for cb in self.callbacks:
            cb.on_start(self)
        if not self.agent_step.started and self.agent is not None:
            self.agent_step.initial_collection(self._entropy)
        metrics: dict[str, float] = {}
        while p.iteration < self.config.iterations:
            t0 = time.perf_counter()
            metrics = self._iteration(p.iteration)
            if p.iteration + 1 == self.config.iterations:
                metrics.update(self._last_restore())
            p.iteration += 1
            p.wall_s = time.perf_counter() - t_start
            metrics["time/iteration_s"] = time.perf_counter() - t0
            metrics["time/wall_s"] = p.wall_s
            p.history.append({"step": self.env_steps, **metrics})
            self.logger.log(metrics, self.env_steps)
            if isinstance(self.logger, RowLogger):  # one row per iteration, written now
                self.logger.flush_row()
            last = p.iteration == self.config.iterations
            k = self.config.checkpoint_interval
            if self.checkpoint is not None and (last or (k > 0 and p.iteration % k == 0)):
                self.checkpoint.save()
            answers = [cb.on_iteration_end(self, metrics) for cb in self.callbacks]  # all are called
            if any(a is False for a in answers):
                break
        if self.async_teacher is not None:
            self._last_answers()
        for cb in self.callbacks:
            cb.on_end(self)
        return metrics

    def _iteration(self, i: int) -> dict[str, float]:
        m: dict[str, float] = {"iteration": float(i)}
        if self.signal is not None:  # RUNE's bonus or the penalty (also in a relabelled buffer)
            self.signal.set_bonus(self.env_steps, labels_left=self._labels_left(),
                                  fresh_accuracy=self._fresh_accuracy())  # fmt: skip
            if self.config.exploration_weight > 0:
                m["agent/bonus"] = self.signal.reward.bonus
        batch = self.clips.gather(self.agent_step.policy())
        if self.restore is not None and i > 0:  # the policy that played the newest episodes
            self.restore.remember(self.agent, batch, self.env_steps)
        if self.clips.trajectories is None and self.signal is not None:
            self.signal.see(batch)
        if self.clips.trajectories is None and self.config.watch_against_older_early:
            m["rollout/terminated"] = float(np.sum(batch.terminated))  # kept for _early_older
        if self.clips.trajectories is None and batch.rews is not None and batch.num_steps:
            m["rollout/true_return"] = float(np.mean(batch.episode_returns()))
            m.update(self.fit.measure(batch, i, self.clips.length))
        alarm = False
        if self.clips.trajectories is None and self.fit.trainer.calls > 0:
            m.update(self.watch.measure(batch, self.dataset, i))  # needs no true reward
            alarm = self.watch.alarm(m, self.config.watch_agreement)
            m["watch/alarm"] = float(alarm)
        if alarm and self.signal is not None and self.config.watch_penalty > 0:
            self.signal.set_bonus(self.env_steps, self.config.watch_penalty, self._labels_left(),
                                  self._fresh_accuracy())  # fmt: skip
        due = self.labels.budget.due(i)  # lost submits: spread, not in a lump
        probed = self.labels.probed(due)  # people, every answer a tie: a few
        if probed < due:
            m["labels/deferred"] = float(due - probed)
        due = probed
        requery = alarm and self.config.watch_requery and due > 0
        if requery:
            m["watch/labels_ahead"] = float(ahead := self.labels.budget.ahead(due))
            due += ahead
        ends = self.config.watch_end_clips and m.get("watch/stay_margin", 0.0) < 0  # ending pays
        if ends:
            m["watch/end_clips"] = 1.0
        if due:
            m.update(self._query(due, batch, requery, ends))  # saved its metrics with the labels
        else:  # asked before a crash, this iteration
            m.update(self.labels.asked_before(i))
        self.clips.keep(batch)  # older clips for mixture queries
        if self.async_teacher is not None:
            self._poll()
            if len(self.dataset) == 0:
                self.labels.wait_for_first(status_line(shows_progress(self.callbacks)))
        m.update(self.labels.metrics())
        t0 = time.perf_counter()
        if self.fit.due(len(self.dataset), self.labels.fresh):
            m.update(self.fit.fit(self.dataset, batch, self.agent, i))
            self.labels.fitted()
            if self.signal is not None:
                self.signal.changed(batch, self.agent)
        if self.restore is not None:
            m.update(self.restore.check())
        m["time/reward_s"] = time.perf_counter() - t0
        self.fit.save()
        if self.agent is not None:
            all_ties = len(self.dataset) > 0 and self.labels.decided == 0
            stuck = not all_ties and self._stuck(m)
            if self.config.tie_exploration_stuck:
                m["agent/stuck_exploration"] = float(stuck)
            m["agent/tie_exploration"] = float(
                self.signal is not None and self.signal.explore_on_ties(all_ties or stuck)
            )
            if i == self.config.reset_iteration:  # agent_reset_at: the primacy bias
                if self._climbing(m):  # agent_reset_standing: it keeps its policy
                    m["agent/reset_spared"] = 1.0
                else:
                    m["agent/reset_from"] = float(self.env_steps)  # the replaced policy's copy
                    self.agent_step.reset(
                        stream_seed(self.config.seed, "agent_reset"), self.config.agent_reset_layers or "all"
                    )
                    m["agent/reset"] = 1.0
            m.update(self._reset_trial(i))
            t0 = time.perf_counter()
            floor_scale = self._floor_scale()
            try:
                self.agent_step.learn(self.agent_step.steps_for(i), floor_scale)
            finally:  # whoever uses the reward after this iteration gets the learned one
                if self.signal is not None:
                    self.signal.learned()
            m["time/agent_s"] = time.perf_counter() - t0
            m.update(self.agent_step.stats())
            if "agent/ent_coef" in m:  # an agent with an entropy floor: how much of it could act
                m["agent/floor"] = floor_scale
        m["env_steps"] = float(self.env_steps)
        return m

    def _climbing(self, m: dict[str, float]) -> bool:
        """Whether ``agent_reset_standing`` spares the agent its restart: this iteration's
        ``watch/standing`` in ``m`` is at or above the bar (never without a bar or a standing)."""
        bar = self.config.agent_reset_standing
        return bar is not None and m.get("watch/standing", -np.inf) >= bar

    def _floor_scale(self) -> float:
        """How much of the agent's entropy floor acts this iteration (``floor_schedule``,
        ``floor_after_queries``): 1 (all of it) or, with ``labels``, the share of the label
        budget still to be asked; 0 once the budget is spent, unless the floor is kept."""
        if self.labels.budget.remaining <= 0:
            return 1.0 if self.config.floor_after_queries else 0.0
        return self._labels_left() if self.config.floor_schedule == "labels" else 1.0

    def _labels_left(self) -> float:
        """The share of the label budget still to be asked (1 before the first query, 0 once
        the budget is spent)."""
        budget = self.labels.budget
        return max(0, budget.remaining) / max(1, int(budget.alloc.sum()))

    def _fresh_accuracy(self) -> float | None:
        """The reward's latest accuracy on its fresh labels (``reward/fresh_accuracy`` of the
        newest iteration that logged one; ``None`` before any was scored). Read from the
        history, so a resumed run gates its bonus as the crashed one did."""
        for row in reversed(self.progress.history):
            if "reward/fresh_accuracy" in row:
                return float(row["reward/fresh_accuracy"])
        return None

    def _reset_trial(self, i: int) -> dict[str, float]:
        """``agent_reset_trial``'s iteration: give the replaced policy back where the reward now
        pays the fresh agent's newest episodes less than that policy's last ones."""
        if i != self.config.reset_trial_iteration or self.restore is None:
            return {}
        replaced = [h["agent/reset_from"] for h in self.progress.history if "agent/reset_from" in h]
        if not replaced:  # spared (agent_reset_standing), or a run from before agent/reset_from was logged
            return {}
        lead = self.restore.newest_over(int(replaced[-1]))
        out = {"agent/reset_trial": lead}
        if lead < 0:  # NaN (the replaced policy was not kept, or kept otherwise than the newest): it stands
            self.restore.give_back(self.agent, int(replaced[-1]))
            out["agent/reset_undone"] = 1.0
        return out

    def _stuck(self, m: dict[str, float]) -> bool:
        """``tie_exploration_stuck``: the newest :data:`STUCK_LABELS` labels (some asked this
        iteration) were all ties, and the reward put the agent's newest steps nearer the lost
        clips than the won ones (``watch/standing`` below 0.5)."""
        n = STUCK_LABELS
        if not self.config.tie_exploration_stuck or m.get("labels/answered", 0) < 1 or len(self.dataset) < n:
            return False
        return bool(np.all(self.dataset.labels[-n:] == 0.5)) and m.get("watch/standing", 1.0) < 0.5

    def _query(
        self, n_queries: int, batch: TrajectoryBatch, split: bool = False, ends: bool = False
    ) -> dict[str, float]:
        """Sample clips from ``batch`` and ask ``n_queries`` comparisons (by disagreement once
        selection is ready, or at once where the run watch found the ensemble ``split``; with
        ``ends``, half the clips at episode ends)."""
        c, labels = self.config, self.labels
        ready = split or labels.selection_ready(c.active_selection_from)
        active = bool(c.active_selection) and ready
        labelled = bool(len(self.dataset) or labels.asked)  # clips keep their length once labels exist
        cross = c.watch_against_older or (not ends and self._early_older(batch))
        query = self.clips.pick(n_queries, batch, active, labelled, labels.ties(), ends, cross)
        if query is None:
            return {"labels/asked": 0.0}
        return labels.ask(
            query.fragments,
            query.pairs,
            query.k,
            self.iteration,
            query.picked,
            query.newer_older,
        )

    def _early_older(self, batch: TrajectoryBatch) -> bool:
        """``watch_against_older_early``: newest-vs-older queries in this round. Only while the
        first ``active_selection_from`` labels come in, where the budget holds labels past them
        (else half of every label would go to them), and where no episode of the run has
        terminated (where episodes end, the first labels are needed for what ends them)."""
        c = self.config
        if not c.watch_against_older_early or c.total_labels <= c.active_selection_from:
            return False
        if self.labels.selection_ready(c.active_selection_from):  # the warm-up is over
            return False
        if np.any(batch.terminated):
            return False
        return not any(h.get("rollout/terminated", 0.0) > 0 for h in self.progress.history)

    def _last_restore(self) -> dict[str, float]:
        """Training is done: end with the kept policy the reward now rates best
        (:meth:`~prefrl.training.restore.AgentRestore.choose`), the last iteration's included."""
        if self.restore is None or self.config.watch_restore <= 0 or self.clips.recorder is None:
            return {}
        batch = self.clips.recorder.pop_episodes()
        if batch is None:
            return {}
        self.restore.remember(self.agent, batch, self.env_steps)
        return {f"{k}_end": v for k, v in self.restore.choose(self.agent).items()}

    def _poll(self, all: bool = False) -> int:
        """Add the answers an async teacher has ready (:meth:`~prefrl.training.labels.Labels.poll`)."""
        return self.labels.poll(all=all)

    def _last_answers(self) -> None:
        """Training is done: wait for the open queries, take their answers and close the rest
        (:func:`~prefrl.training.closing.close_queries`); fit the reward on new answers."""
        close_queries(self.labels, self.config.answer_wait_s, shows_progress(self.callbacks))
        if not len(self.dataset) or not self.labels.fresh:
            return
        self.fit.refit(self.dataset, self.agent)
        self.labels.fitted()
        if self.signal is not None:
            self.signal.refresh()
        self.fit.save()
        if self.checkpoint is not None:
            self.checkpoint.save()

    # ------------------------------------------------------------------ what stages tell the loop
    def _entropy(self) -> AbstractContextManager[None]:
        """PEBBLE's pre-training reward while inside (:meth:`AgentReward.entropy`)."""
        assert self.signal is not None
        return self.signal.entropy()

    def _labels_added(self, n_new: int) -> None:
        for cb in self.callbacks:
            cb.on_labels(self, n_new)

    def _env_steps_done(self, env_steps: int) -> None:
        for cb in self.callbacks:
            cb.on_env_steps(self, env_steps)

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        """Write a complete resumable checkpoint (:class:`~prefrl.training.checkpointing.LoopCheckpoint`)."""
        assert self.checkpoint is not None, "a loop without a run_dir has no checkpoints"
        return self.checkpoint.save()

    def load_checkpoint(self, agent_loader: AgentLoader | None = None) -> bool:
        """Restore the latest checkpoint of ``run_dir`` (returns False when there is none).

        ``agent_loader(path) -> agent`` rebuilds the SB3 agent from ``policy.zip`` on the
        same env stack. Labels saved after the checkpoint (``RUN/preferences.npz``) are kept.
        """
        assert self.checkpoint is not None, "a loop without a run_dir has no checkpoints"
        return self.checkpoint.load(agent_loader)
