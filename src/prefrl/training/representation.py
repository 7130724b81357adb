"""REED in the loop: before each reward update, a :class:`~prefrl.rewards.reed.ReedReward`'s state
encoder (or a self-predictive :class:`~prefrl.rewards.cnn.CNNReward`'s convolutions) trains on
the self-predictive objective over the transitions the loop has.

Those are the iteration's episodes (the states the agent reached last, as the reward sees
them) and, for off-policy agents, a uniform sample of the whole replay buffer (every transition
the agent has seen; :func:`~prefrl.agents.sb3.buffer_transitions` maps its actions back to the
environment's bounds, as the reward model reads them). With the preference trainer's
``update_normalization``, the iteration's episodes also go into the network's input statistics
first, so the encoder trains on the inputs the reward will see (the first update included,
before any label has been folded in).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

from prefrl.agents.protocols import Agent
from prefrl.agents.sb3 import buffer_rows, buffer_transitions
from prefrl.data.arrays import Obs, obs_map
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference.self_predictive import SelfPredictiveNet, SelfPredictiveTrainer, has_self_predictive
from prefrl.preference.trainer import RewardTrainerConfig
from prefrl.rewards.nets import RewardNet, to_tensor

CHUNK_ROWS = 16_384
"""Replay-buffer transitions copied out at a time while drawing a sample (bounds the memory)."""


Transitions = tuple[Obs, np.ndarray, Obs]
"""``(obs, acts, next_obs)`` ``[m, ...]``."""


def replay_sample(agent: OffPolicyAlgorithm, n: int, rng: np.random.Generator) -> Transitions | None:
    """``(obs, acts, next_obs)`` ``[m, ...]`` of ``m = min(n, stored)`` transitions drawn uniformly
    without replacement from ``agent``'s replay buffer (in buffer order); ``None`` when it is empty."""
    buf = agent.replay_buffer
    rows = buffer_rows(buf) if buf is not None else 0
    if buf is None or rows == 0 or n <= 0:
        return None
    k = buf.n_envs
    pick = np.sort(rng.choice(rows * k, size=min(n, rows * k), replace=False))  # flat (row, env) indices
    parts = []
    per = max(1, CHUNK_ROWS // k)
    for s in range(0, rows, per):
        e = min(s + per, rows)
        lo, hi = np.searchsorted(pick, [s * k, e * k])
        if lo < hi:
            obs, acts, nxt, _ = buffer_transitions(agent, slice(s, e))
            local = pick[lo:hi] - s * k
            parts.append((obs[local], acts[local], nxt[local]))
    obs, acts, nxt = (np.concatenate([p[i] for p in parts]) for i in range(3))
    return obs, acts, nxt


class SelfPrediction:
    """The loop's REED step: a :class:`SelfPredictiveTrainer` and what it trains on."""

    def __init__(self, net: SelfPredictiveNet, config: RewardTrainerConfig) -> None:
        self.net = net
        self.trainer = SelfPredictiveTrainer(net, config.self_predictive_config())
        self.update_normalization = config.update_normalization

    @classmethod
    def for_loop(cls, net: RewardNet, config: RewardTrainerConfig) -> SelfPrediction | None:
        """The step for a network with the self-predictive objective (REED) when
        ``config.self_predictive`` is on, else ``None``."""
        if not config.self_predictive or not has_self_predictive(net):
            return None
        return cls(net, config)

    def update(
        self, batch: TrajectoryBatch | None, agent: Agent | None, multiplier: float = 1.0
    ) -> dict[str, float]:
        """Train the encoder on ``batch``'s transitions plus, when ``agent`` is off-policy, a sample
        of its replay buffer (``steps x batch_size x multiplier`` transitions, drawn without
        replacement by the trainer's generator);
        returns the metrics as ``reward/spr_*`` (empty when there is no transition)."""
        parts: list[Transitions] = []
        if batch is not None and batch.num_steps:
            rows = batch.step_rows
            obs = obs_map(lambda a: a[rows], batch.obs)
            parts.append((obs, batch.acts[rows], obs_map(lambda a: a[rows + 1], batch.obs)))
            if self.update_normalization:
                self.net.update_stats(to_tensor(obs, self.net.device), None, None, None)
        if isinstance(agent, OffPolicyAlgorithm):
            c = self.trainer.config
            # drawn from the trainer's own generator (checkpointed): the loop's streams do not move
            rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=self.trainer.generator)))
            sample = replay_sample(agent, round(c.steps * c.batch_size * multiplier), rng)
            if sample is not None:
                parts.append(sample)
        if not parts:
            return {}
        obs, acts, nxt = (_concat([p[i] for p in parts]) for i in range(3))
        metrics = self.trainer.train(obs, acts, nxt, step_multiplier=multiplier)
        return {f"reward/{k}": v for k, v in metrics.items()}

    def state_dict(self) -> dict[str, Any]:
        return self.trainer.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.trainer.load_state_dict(state)


def _concat(arrays: list[Obs]) -> Obs:
    """Concatenate ``[n_i, ...]`` arrays (or dicts of them) along the first axis."""
    if isinstance(arrays[0], dict):
        return {k: np.concatenate([a[k] for a in arrays]) for k in arrays[0]}
    return np.concatenate([np.asarray(a) for a in arrays])
