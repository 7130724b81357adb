"""Fit a reward network to preferences: the Bradley–Terry model and its losses (pure functions)
and the reward fitter that minimises them (trainer, optimiser, trust gate). Nothing here knows
about agents or RL libraries."""

from prefrl.preference.model import (
    discount_weights,
    fragment_returns,
    log_probs,
    preference_logits,
    preference_loss,
    preference_metrics,
    preference_probs,
)
from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig, evaluate_preferences

__all__ = [
    "RewardTrainer",
    "RewardTrainerConfig",
    "discount_weights",
    "evaluate_preferences",
    "fragment_returns",
    "log_probs",
    "preference_logits",
    "preference_loss",
    "preference_metrics",
    "preference_probs",
]
