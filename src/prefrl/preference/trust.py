"""The trust gate: self-training (pseudo-labels, the noise filter) only while the reward model
predicts fresh real labels.

Before a reward update trains on the labels that arrived since the previous one, the model as
it stands guesses their sides; a :class:`TrustRecord` keeps the last ``window`` outcomes. Its
accuracy is an honest held-out figure (the model has not seen these labels yet), so a model
that learned a wrong reward is caught before it can pseudo-label or "correct" real labels.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from prefrl.data.dataset import PreferenceDataset

TIE_TOL = 1e-6
"""A label within this of 0.5 is a tie: it says nothing about a side and is not scored."""


class TrustRecord:
    """Whether the reward model predicted each of the newest real labels, across train() calls.

    Attributes:
        window: at most this many outcomes are kept (the newest).
        outcomes: ``True`` where the model predicted the label's side, oldest first.
        seen: the dataset's ``next_id`` when new labels were last taken: every pair with a
            smaller id was scored or trained on already. ``None``: not known (before the first
            call, or restored from a checkpoint that lacked it).
    """

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError(f"the trust window must hold at least one label, got {window}")
        self.window = window
        self.outcomes: deque[bool] = deque(maxlen=window)
        self.seen: int | None = None

    def take_new(self, dataset: PreferenceDataset) -> np.ndarray:
        """``[n]`` positions in ``dataset`` of the non-tied labels added since the last call
        (the newest ``window`` of them: older ones would leave the record at once), and
        remember that they were taken.

        New labels are told by pair id (ids only grow, so evicting old pairs changes nothing).
        With no mark yet, or a dataset whose ids restarted (``next_id`` below the mark: another
        dataset), nothing is new: labels the model may have trained on are never scored.
        """
        seen, self.seen = self.seen, int(dataset.next_id)
        if seen is None or dataset.next_id < seen:
            return np.zeros(0, dtype=np.int64)
        new = (dataset.pair_ids >= seen) & (np.abs(dataset.labels - 0.5) > TIE_TOL)
        return np.flatnonzero(new)[-self.window :]

    def record(self, correct: np.ndarray) -> None:
        """Append outcomes ``[n]`` bool (oldest first); the oldest beyond ``window`` drop out."""
        self.outcomes.extend(bool(x) for x in np.asarray(correct).reshape(-1))

    @property
    def accuracy(self) -> float | None:
        """Share of the recorded labels predicted right; ``None`` while there is none."""
        return sum(self.outcomes) / len(self.outcomes) if self.outcomes else None

    def trusts(self, min_accuracy: float) -> bool:
        """Whether the recorded accuracy reaches ``min_accuracy`` (never on an empty record)."""
        acc = self.accuracy
        return acc is not None and acc >= min_accuracy

    def state_dict(self) -> dict[str, Any]:
        """JSON values only: ``{"outcomes": [bool, ...], "seen": int | None}``."""
        return {"outcomes": list(self.outcomes), "seen": self.seen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.outcomes = deque((bool(x) for x in state.get("outcomes", [])), maxlen=self.window)
        seen = state.get("seen")
        self.seen = None if seen is None else int(seen)
