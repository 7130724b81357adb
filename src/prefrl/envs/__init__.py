"""Gymnasium wrappers: learned reward, async preference wrapper."""

from prefrl.envs.learned_reward import (
    LearnedReward,
    LearnedRewardVecEnv,
    LearnedRewardWrapper,
    RewardNormalizer,
)

__all__ = ["LearnedReward", "LearnedRewardVecEnv", "LearnedRewardWrapper", "RewardNormalizer"]
