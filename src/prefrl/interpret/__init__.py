"""See what a learned reward rewards: evaluation, plots, attribution, shaping (docs/interpret.md).

Submodules: ``evaluation`` (EPIC, correlations, held-out accuracy), ``plots``, ``report``,
``attribution``, ``objects`` (an object found by colour, attribution near it), ``shaping``, ``supervised``,
``tabular``, ``sources``, ``rewardfn``.
"""

from prefrl.interpret.evaluation import (
    Coverage,
    RewardEvaluator,
    epic_distance,
    heldout_accuracy,
    heldout_preference_metrics,
    reward_correlations,
)

__all__ = [
    "Coverage",
    "RewardEvaluator",
    "epic_distance",
    "heldout_accuracy",
    "heldout_preference_metrics",
    "reward_correlations",
]
