"""Reward training, query schedules, and (with an agent) the main loop."""

from prefrl.training.logger import Logger, NullLogger, PrefixLogger
from prefrl.training.schedules import SCHEDULES, allocate_queries
from prefrl.training.trainer import RewardTrainer, RewardTrainerConfig, evaluate_preferences

__all__ = [
    "SCHEDULES",
    "Logger",
    "NullLogger",
    "PrefixLogger",
    "RewardTrainer",
    "RewardTrainerConfig",
    "allocate_queries",
    "evaluate_preferences",
]
