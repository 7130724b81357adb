"""The label budget in one place: how many queries each iteration asks, and how many are asked.

:func:`query_allocation` splits ``total_labels`` over the iterations (front-loaded rounds or a
query schedule of :mod:`prefrl.training.schedules`); :func:`queries_due` says how many to ask
now, handing the queries a killed process never got into the store back over the remaining
iterations rather than in one lump; :class:`LabelBudget` keeps the count of queries asked
(checkpointed by the labels stage, :class:`~prefrl.training.labels.Labels`).
"""

from __future__ import annotations

import math

import numpy as np

from prefrl.training.config import LoopConfig
from prefrl.training.schedules import allocate_queries, allocate_rounds


def query_allocation(config: LoopConfig) -> np.ndarray:
    """``[iterations]`` queries to ask at each iteration (entry 0: before any agent training),
    by front-loaded rounds (``labels_per_round``) or by ``query_schedule``.

    Example:
        >>> query_allocation(LoopConfig(total_labels=20, iterations=4)).tolist()
        [6, 6, 4, 4]
    """
    if config.labels_per_round is not None:
        return allocate_rounds(
            config.total_labels, config.iterations - 1, config.labels_per_round, config.round_interval
        )
    return allocate_queries(
        config.total_labels, config.iterations - 1, config.query_schedule, config.initial_label_frac
    )


def queries_due(alloc: np.ndarray, i: int, asked: int) -> int:
    """Queries to ask at iteration ``i`` of ``len(alloc)``: its share ``alloc[i]`` plus an even
    part of those earlier iterations should have asked but did not (after a crash), so the
    budget is reached by the last iteration without one lump of catching up.

    Example:
        >>> queries_due(np.array([10, 5, 5, 5, 5]), 1, 4)  # 6 lost in a kill, 4 iterations left
        7
        >>> queries_due(np.array([10, 5, 5, 5, 5]), 4, 22)  # the last iteration asks the rest
        8
    """
    n = len(alloc)
    behind = int(alloc[:i].sum()) - asked
    if behind <= 0:  # on schedule (or ahead: ask only what is still owed up to now)
        return max(0, int(alloc[: i + 1].sum()) - asked)
    return int(alloc[i]) + math.ceil(behind / max(1, n - i))


class LabelBudget:
    """The queries of a run: the allocation over its iterations and the count ``asked`` so far."""

    def __init__(self, config: LoopConfig) -> None:
        self.alloc = query_allocation(config)
        self.asked = 0

    def due(self, i: int) -> int:
        """Queries to ask at iteration ``i`` (see :func:`queries_due`)."""
        return queries_due(self.alloc, i, self.asked)

    def ahead(self, due: int) -> int:
        """Queries that may be asked on top of ``due`` now, taken from later iterations' share:
        as many again as ``due``, at most what the budget has left after it (later iterations
        then ask fewer, :func:`queries_due`)."""
        return max(0, min(due, self.remaining - due))

    @property
    def remaining(self) -> int:
        """Queries the budget has left to ask (0 once the last one is asked)."""
        return max(0, int(self.alloc.sum()) - self.asked)
