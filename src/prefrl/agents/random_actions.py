"""Random actions of varied size for the steps before the first query.

Uniform random actions all act about equally hard: over a 50-step clip, the mean of
``|a|^2`` hardly differs from one clip to the next. A teacher comparing such clips never
sees one clip act gently and the other violently, so its labels say nothing about a control
cost, and the first reward learns none; the agent then goes to full force wherever the
reward's other terms point (Pusher-v5's learned agents scored below random actions). Here each
environment of the stack draws a size ``s ~ U(0, 1)`` every ``period`` steps and acts
uniformly within ``s`` of its action range around the range's centre, so clips differ in how
hard they act while still covering the whole range over many draws. With ``full_share``, that
share of the draws acts at full size (uniform over the whole range) instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from gymnasium import spaces


class VariedSizeBox(spaces.Box):
    """A :class:`~gymnasium.spaces.Box` whose :meth:`sample` acts with a size that changes per
    environment every ``period`` steps.

    Calls to :meth:`sample` are taken to come ``num_envs`` at a time, one per environment in
    order (as SB3's off-policy warm-up and the loop's on-policy random steps call it,
    :class:`~prefrl.training.agent_step.AgentStep`).
    """

    def __init__(
        self, box: spaces.Box, num_envs: int, period: int, seed: int | None = None, full_share: float = 0.0
    ) -> None:
        if not np.all(box.is_bounded()):
            raise ValueError("varied-size random actions need a bounded action space")
        if num_envs < 1 or period < 1:
            raise ValueError(f"num_envs and period must be positive, got {num_envs} and {period}")
        if not 0.0 <= full_share <= 1.0:
            raise ValueError(f"full_share must be in [0, 1], got {full_share}")
        super().__init__(box.low, box.high, box.shape, box.dtype, seed=seed)
        self.num_envs, self.period, self.full_share = num_envs, period, full_share
        self.calls = 0
        self.sizes = np.ones(num_envs)
        """``[num_envs]`` the size each environment acts with now."""
        self._centre, self._half = (self.high + self.low) / 2, (self.high - self.low) / 2

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        """One action ``[*shape]`` for the next environment in turn."""
        env, step = self.calls % self.num_envs, self.calls // self.num_envs
        self.calls += 1
        if step % self.period == 0:  # a share full_share of the periods act at full size
            full = self.np_random.uniform() < self.full_share
            self.sizes[env] = 1.0 if full else self.np_random.uniform(0.0, 1.0)
        u = self.np_random.uniform(-1.0, 1.0, size=self.shape)
        return (self._centre + self.sizes[env] * self._half * u).astype(self.dtype)


@contextmanager
def varied_random_actions(
    owner: Any, num_envs: int, period: int, seed: int | None = None, full_share: float = 0.0
) -> Iterator[None]:
    """While inside, ``owner.action_space`` (an SB3 agent or a vector env) samples varied-size
    actions (:class:`VariedSizeBox`); restored on exit. Does nothing unless the space is a
    bounded Box."""
    box = owner.action_space
    bounded = isinstance(box, spaces.Box) and bool(np.all(box.is_bounded()))
    if not bounded:
        yield
        return
    owner.action_space = VariedSizeBox(box, num_envs, period, seed=seed, full_share=full_share)
    try:
        yield
    finally:
        owner.action_space = box
