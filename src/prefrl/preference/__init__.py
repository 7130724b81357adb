"""The Bradley–Terry preference model and its losses, as pure functions."""

from prefrl.preference.model import (
    discount_weights,
    fragment_returns,
    log_probs,
    preference_logits,
    preference_loss,
    preference_metrics,
    preference_probs,
)

__all__ = [
    "discount_weights",
    "fragment_returns",
    "log_probs",
    "preference_logits",
    "preference_loss",
    "preference_metrics",
    "preference_probs",
]
