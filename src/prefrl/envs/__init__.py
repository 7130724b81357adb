"""Gymnasium wrappers: learned reward, async preference wrapper; the project's own
environments (``prefrl/GridWorld-v0``, ``prefrl/MovingDot-v0``; registered by ``import prefrl``)."""

from prefrl.envs import gridworld, moving_dot  # noqa: F401  (register the project's environments)
from prefrl.envs.learned_reward import (
    LearnedReward,
    LearnedRewardVecEnv,
    LearnedRewardWrapper,
    RewardNormalizer,
)

__all__ = ["LearnedReward", "LearnedRewardVecEnv", "LearnedRewardWrapper", "RewardNormalizer"]
