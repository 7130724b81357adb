"""An entropy floor for on-policy agents trained on a learned reward (``--agent.min-entropy``).

In preference learning the agent is also the one who collects the clips people compare. An
on-policy agent (PPO with normalised advantages) that meets a dense reward which consistently
pays one action stops sampling within a few updates: on Pong, PPO's action entropy fell from
1.79 (uniform over 6 actions) to below 0.001 within 50k steps of its first learned reward, and
its paddle held one button for the remaining 900k steps. Every clip after that showed the same
behaviour, so no label could teach the reward what returning the ball is worth, and a later,
better reward could not be followed either: a policy that never samples another action gets no
gradient towards it. (The original work's A2C agent was not exposed to this: it scaled the
learned reward to a standard deviation of 0.05 without normalising advantages, so its entropy
bonus weighed far more against a learned reward than against the game's.)

:class:`EntropyFloor` keeps the policy's mean action entropy at or above a share of its maximum
(``ln n`` for ``n`` discrete actions) by raising the entropy bonus while the entropy is below that
floor, multiplicatively after every update, as SAC tunes its temperature, and lowering it back
to the configured bonus once the policy samples enough again. Above the floor nothing changes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

GAIN = 3.0
"""How fast the bonus moves: ``log(bonus)`` changes by ``GAIN * (floor - entropy) / max entropy``
per update (an entropy of 0 under a floor of half the maximum: the bonus x4.5 per update)."""
MIN_COEF, MAX_COEF = 1e-3, 1.0
"""Bounds of the raised bonus. Against advantages normalised to unit spread, 1.0 weighs the
entropy as much as the reward; on Pong the bonus reached it at the floor's first firing, with the
entropy at 0.56 nats under a floor of 0.9, and the floor held from the next iteration on. A
larger bonus would crowd the value loss out of the gradient of a shared CNN trunk, which SB3
clips to norm 0.5."""


def max_entropy(space: spaces.Space[Any]) -> float:
    """The largest mean action entropy a policy over ``space`` can have, in nats: ``ln n`` for
    ``Discrete(n)``, the sum over the parts of a ``MultiDiscrete`` or ``MultiBinary``.
    Raises ``ValueError`` for other spaces (a Gaussian's entropy has no maximum)."""
    if isinstance(space, spaces.Discrete):
        return math.log(int(space.n))
    if isinstance(space, spaces.MultiDiscrete):
        return float(np.log(np.asarray(space.nvec, dtype=np.float64)).sum())
    if isinstance(space, spaces.MultiBinary):
        return float(np.prod(space.shape)) * math.log(2)
    raise ValueError(f"an entropy floor needs discrete actions, not {space}")


def logged_entropy(agent: object) -> float | None:
    """The mean action entropy of an on-policy agent's last update, as SB3 logs it
    (``train/entropy_loss``, negated); ``None`` before an update or for agents that log none."""
    values = getattr(getattr(agent, "logger", None), "name_to_value", None)
    loss = values.get("train/entropy_loss") if isinstance(values, dict) else None
    return None if loss is None or not math.isfinite(float(loss)) else -float(loss)


class EntropyFloor(BaseCallback):
    """Raise an on-policy agent's entropy bonus while its policy's entropy is under a floor.

    Before each rollout (so after each update) it reads the mean entropy of the last update's
    minibatches, as SB3 logs it (``train/entropy_loss``), and sets ``model.ent_coef``::

        coef <- clip(coef * exp(GAIN * (floor - entropy) / max_entropy), MIN_COEF, MAX_COEF)

    used as ``max(base, coef)``: never less than the configured bonus ``base``, and ``base`` itself
    while ``coef`` is at ``MIN_COEF``.

    Args:
        share: the floor as a share of the maximum entropy, in (0, 1).
        base: the configured entropy bonus (``--agent.ent-coef``).
        coef: the raised bonus to start from (a resumed run's :attr:`coef`).
    """

    def __init__(self, share: float, base: float, coef: float | None = None) -> None:
        super().__init__()
        if not 0.0 < share < 1.0:
            raise ValueError(f"min_entropy is a share of the maximum entropy in (0, 1), got {share}")
        self.share, self.base = share, float(base)
        self.coef = max(MIN_COEF, self.base) if coef is None else float(coef)

    def _init_callback(self) -> None:
        if not isinstance(self.model, OnPolicyAlgorithm):
            raise TypeError(f"an entropy floor needs an on-policy agent, not {type(self.model).__name__}")
        self.agent: OnPolicyAlgorithm = self.model
        self.top = max_entropy(self.agent.action_space)
        self._apply()

    def _on_rollout_start(self) -> None:
        entropy = logged_entropy(self.agent)
        if entropy is None:
            return  # no update yet
        step = GAIN * (self.share * self.top - entropy) / self.top
        self.coef = float(np.clip(self.coef * math.exp(step), MIN_COEF, MAX_COEF))
        self._apply()

    def _apply(self) -> None:
        """The agent's bonus: the configured one, or the raised one above it. At its lower bound
        the raised bonus is not applied: an agent that never fell below the floor trains exactly
        as without one."""
        self.agent.ent_coef = self.base if self.coef <= MIN_COEF else max(self.base, self.coef)

    def _on_step(self) -> bool:
        return True
