"""Query selection: uniform, ensemble disagreement (logit, probability, label), entropy."""

from prefrl.selection.selectors import (
    MEASURES,
    DisagreementSelector,
    QuerySelector,
    UniformSelector,
    disagreement,
    ensemble_logits,
)

__all__ = [
    "MEASURES",
    "DisagreementSelector",
    "QuerySelector",
    "UniformSelector",
    "disagreement",
    "ensemble_logits",
]
