"""The reward signal stage of :class:`~prefrl.training.loop.PreferenceLoop`: what the agent is paid.

:class:`AgentReward` holds the :class:`~prefrl.agents.reward_signal.LearnedReward` the agent's env
wrapper calls, and decides what it gives: the learned reward, normalised (by scale only once an
episode has terminated, so the absorbing state stays worth 0), with RUNE's decaying bonus or the
uncertainty penalty on the ensemble's spread; PEBBLE's state entropy while pre-training, and
while every label is a tie (``tie_exploration``). After each reward update it refreshes the
per-step path, relabels an off-policy agent's replay buffer (PEBBLE) and resets the normaliser
to the new reward's statistics.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypedDict

import numpy as np
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from typing_extensions import NotRequired  # Python 3.10

from prefrl.agents.entropy import StateEntropyReward
from prefrl.agents.protocols import Agent
from prefrl.agents.reward_signal import LearnedReward
from prefrl.agents.sb3 import relabel_replay_buffer, write_buffer_rewards
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.rewards.encode import batch_rewards
from prefrl.training.config import LoopConfig


class AgentRewardState(TypedDict):
    """The reward signal's part of a checkpoint (``state.json``)."""

    normalizer: dict[str, float | bool | str] | None
    """The normaliser's statistics (``None``: a loop without a learned reward, offline)."""
    bonus_center: NotRequired[float]
    """The ensemble std the bonus is measured from (absent in older checkpoints: 0)."""


def bonus_weight(
    config: LoopConfig, env_steps: int, labels_left: float = 1.0, fresh_accuracy: float | None = None
) -> float:
    """The weight of the ensemble's std in the agent's reward after ``env_steps`` steps, with
    ``labels_left`` of the label budget still to ask (0 to 1) and the reward's accuracy on its
    fresh labels ``fresh_accuracy`` (``None``: none scored yet): the exploration bonus
    ``exploration_bonus (1 - decay)^env_steps`` (schedule ``steps``) or ``exploration_bonus x
    labels_left`` (schedule ``labels``), scaled by :func:`bonus_gate`, minus
    ``uncertainty_penalty``.

    Example:
        >>> bonus_weight(LoopConfig(exploration_bonus=0.5, exploration_bonus_decay=0.5), 2)
        0.125
        >>> bonus_weight(LoopConfig(exploration_bonus=0.5, exploration_bonus_schedule="labels"), 2, 0.5)
        0.25
        >>> gated = LoopConfig(exploration_bonus=0.5, exploration_bonus_decay=0, exploration_bonus_gate=0.75)
        >>> bonus_weight(gated, 2, fresh_accuracy=0.625), bonus_weight(gated, 2, fresh_accuracy=0.9)
        (0.25, 0.0)
    """
    bonus, weight = 0.0, config.exploration_weight
    if weight > 0 and config.exploration_bonus_schedule == "labels":
        bonus = weight * min(1.0, max(0.0, labels_left))
    elif weight > 0:
        bonus = weight * (1.0 - config.exploration_bonus_decay) ** env_steps
    return bonus * bonus_gate(config.exploration_bonus_gate, fresh_accuracy) - config.uncertainty_penalty


def bonus_gate(level: float | None, fresh_accuracy: float | None) -> float:
    """How much of the exploration bonus is paid (0 to 1) when the reward guesses its fresh
    labels with ``fresh_accuracy``: ``(level - a) / (level - 0.5)`` clipped to [0, 1]; 1 with no
    gate (``level`` None or 0) or no accuracy yet.

    Example:
        >>> bonus_gate(0.75, 0.5), bonus_gate(0.75, 0.625), bonus_gate(0.75, 0.8), bonus_gate(None, 0.9)
        (1.0, 0.5, 0.0, 1.0)
    """
    if not level or fresh_accuracy is None:
        return 1.0
    return min(1.0, max(0.0, (level - fresh_accuracy) / (level - 0.5)))


class AgentReward:
    """What the agent is paid (see the module docstring).

    Args:
        reward: the learned reward of the agent's env wrapper.
        config: the loop's schedule (normalisation, bonus, penalty, tie exploration).
        off_policy: the agent learns from a replay buffer (relabelled after each reward update;
            the normaliser is reset then, not fed every batch).

    State (:meth:`state_dict`): the normaliser.
    """

    def __init__(self, reward: LearnedReward, config: LoopConfig, off_policy: bool) -> None:
        self.reward, self.config = reward, config
        # per-step rewards in NumPy (refreshed after every weight change); an off-policy
        # loop resets the statistics after each reward update instead of folding batches in
        reward.configure(normalize=config.normalize_reward, fast=True, update_stats=not off_policy)
        if config.end_value == "median":
            reward.normalizer.shift = "median"
        self._tie_explorer: StateEntropyReward | None = None  # one memory of visited states for the run

    def set_bonus(
        self,
        env_steps: int,
        penalty: float = 0.0,
        labels_left: float = 1.0,
        fresh_accuracy: float | None = None,
    ) -> None:
        """RUNE's bonus or the penalty for the steps taken, the share of the label budget still
        to ask and the reward's accuracy on its fresh labels (also in a relabelled buffer), less
        ``penalty`` (the run watch's, while it fires)."""
        weight = bonus_weight(self.config, env_steps, labels_left, fresh_accuracy)
        self.reward.set_bonus(weight - penalty)

    def see(self, batch: TrajectoryBatch) -> None:
        """Once an episode has terminated, normalise the agent's reward by scale only.

        The reward is measured from the absorbing state's (see :class:`LearnedReward`);
        shifting it would decide by accident whether the agent wants episodes to end. Not with
        ``center_hidden_ends`` (the agent is told no end, so a shift decides nothing), nor with
        an ``end_value`` other than ``absorbing`` (the shift is what decides it, on purpose).
        """
        # center_hidden_ends is validated to come with hide_terminations, end_value without
        keep_center = self.config.center_hidden_ends or self.config.end_value != "absorbing"
        if self.reward.normalizer.center and batch.terminated.any() and not keep_center:
            self.reward.scale_only()

    @contextmanager
    def entropy(self) -> Iterator[None]:
        """PEBBLE's unsupervised phase: a fresh k-NN state-entropy reward, the learned one after."""
        self.reward.use_intrinsic(StateEntropyReward())
        try:
            yield
        finally:
            self.reward.use_intrinsic(None)

    def explore_on_ties(self, all_ties: bool) -> bool:
        """The state-entropy reward while every label is a tie (``all_ties``, with
        ``tie_exploration`` on), the learned reward otherwise; whether it explores now."""
        explore = self.config.tie_exploration and all_ties
        if explore and self._tie_explorer is None:
            self._tie_explorer = StateEntropyReward(center=True)  # novelty, not survival, pays
        self.reward.use_intrinsic(self._tie_explorer if explore else None)
        return explore

    def learned(self) -> None:
        """The learned reward from now on (whoever uses the reward after an iteration gets it)."""
        self.reward.use_intrinsic(None)

    def changed(self, batch: TrajectoryBatch, agent: Agent | None) -> None:
        """New reward weights: relabel ``agent``'s replay buffer and reset the normaliser (to
        the buffer's rewards off-policy, to ``batch``'s steps on-policy)."""
        if agent is None:
            return
        self.reward.refresh()
        self._center_bonus(batch)
        if isinstance(agent, OffPolicyAlgorithm):
            raw = relabel_replay_buffer(agent, self.reward.raw, self.config.relabel_batch)
            self.reward.normalizer.reset_to(raw)
            write_buffer_rewards(agent, self.reward.normalizer(raw) if self.reward.normalize else raw)
        else:
            raw = batch_rewards(self.reward.net, self.reward.raw, batch)  # in passes: Atari's are GBs
            self.reward.normalizer.reset_to(raw)

    def _center_bonus(self, batch: TrajectoryBatch) -> None:
        """Where the reward is normalised by scale only (episodes terminate, so the absorbing
        state stays worth 0), measure the bonus from the mean ensemble std of ``batch``'s steps:
        a bonus of the std itself, never negative, would pay every step alive (as an uncentred
        novelty reward would), a penalty every step towards an end. Elsewhere the normaliser
        centres the bonus with the rest of the reward."""
        config, reward = self.config, self.reward
        bonus = config.exploration_weight
        weighed = bonus > 0 or config.uncertainty_penalty > 0 or config.watch_penalty > 0
        if not (weighed and reward.normalize and not reward.normalizer.center and batch.num_steps):
            reward.bonus_center = 0.0
            return
        net = reward.net
        std = batch_rewards(net, lambda *t: net.predict(*t)[1], batch)
        reward.bonus_center = float(np.mean(std))

    def refresh(self) -> None:
        """The network's weights changed (a checkpoint loaded, a last fit): recompile the per-step path."""
        self.reward.refresh()

    def state_dict(self) -> AgentRewardState:
        """The checkpointed state: the normaliser's statistics."""
        return {"normalizer": self.reward.normalizer.state_dict(), "bonus_center": self.reward.bonus_center}

    def load_state_dict(self, state: AgentRewardState) -> None:
        if state.get("normalizer"):
            self.reward.normalizer.load_state_dict(dict(state["normalizer"] or {}))
        self.reward.bonus_center = float(state.get("bonus_center", 0.0))
