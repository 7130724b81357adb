"""Query selection: uniform, ensemble disagreement (logit, probability, label), entropy; and
pairing of a stream of clips with recent ones (:class:`RecentPairs`)."""

from prefrl.selection.pairing import RecentPairs
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
    "RecentPairs",
    "UniformSelector",
    "disagreement",
    "ensemble_logits",
]
