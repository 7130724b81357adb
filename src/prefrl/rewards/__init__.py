"""Reward networks: MLP, CNN, REED, ensembles (stacked weights), normalisation, shaping."""

from prefrl.rewards.cnn import CNNOptions, CNNReward
from prefrl.rewards.io import build_reward_net, load_reward_net, save_reward_net
from prefrl.rewards.layers import EnsembleLinear, EnsembleMLP
from prefrl.rewards.mlp import MLPReward
from prefrl.rewards.nets import RewardNet, to_tensor
from prefrl.rewards.normalization import RunningNorm
from prefrl.rewards.reed import ReedReward
from prefrl.rewards.shaped import ShapedReward

__all__ = [
    "CNNOptions",
    "CNNReward",
    "EnsembleLinear",
    "EnsembleMLP",
    "MLPReward",
    "ReedReward",
    "RewardNet",
    "RunningNorm",
    "ShapedReward",
    "build_reward_net",
    "load_reward_net",
    "save_reward_net",
    "to_tensor",
]
