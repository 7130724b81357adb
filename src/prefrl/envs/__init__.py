"""The project's own Gymnasium environments (``prefrl/GridWorld-v0``, ``prefrl/MovingDot-v0``;
registered by ``import prefrl``) and the Atari preprocessing they share with ALE ids.

The learned-reward wrappers moved to :mod:`prefrl.agents.learned_reward` and the
asynchronous preference wrapper to :mod:`prefrl.preference_env`; their old names here
still work for one release, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from prefrl.envs import gridworld, moving_dot  # noqa: F401  (register the project's environments)

_MOVED = {
    "LearnedReward": "prefrl.agents.learned_reward",
    "LearnedRewardVecEnv": "prefrl.agents.learned_reward",
    "LearnedRewardWrapper": "prefrl.agents.learned_reward",
    "RewardNormalizer": "prefrl.rewards.normalization",
}


def __getattr__(name: str) -> Any:
    """Old names (``prefrl.envs.LearnedReward`` ...) resolved from their new home, with a warning."""
    if name in _MOVED:
        warnings.warn(
            f"prefrl.envs.{name} moved to {_MOVED[name]}.{name}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module 'prefrl.envs' has no attribute {name!r}")
