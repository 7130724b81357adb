"""Query schedules: how a total label budget is spread over training iterations."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

FRONT_SHARE = 1.0 / 3.0
"""The ``front`` schedule asks every label after the initial batch in this first share of the
iterations, evenly, so that the reward is fitted on the whole budget while the agent is still
young (the agent's early iterations are where a reward fitted on a handful of labels sends it
the wrong way, docs/benchmarks/first-reward.md)."""

SCHEDULES: dict[str, Callable[[float], float]] = {
    "constant": lambda t: 1.0,
    "hyperbolic": lambda t: 1.0 / (1.0 + t),
    "inverse_quadratic": lambda t: 1.0 / (1.0 + t) ** 2,
    "front": lambda t: 1.0 if t < FRONT_SHARE else 0.0,
}
"""Weight of an iteration at progress ``t`` in [0, 1) of the run's iterations."""


def allocate_queries(
    total: int,
    iterations: int,
    schedule: str | Callable[[float], float] = "hyperbolic",
    initial_fraction: float = 0.0,
    rate: float = 1.0,
) -> np.ndarray:
    """Split ``total`` queries into ``[iterations + 1]`` integer counts summing exactly to ``total``.

    Entry 0 is the share gathered before any agent training (``initial_fraction`` of the
    total); entries ``1..iterations`` follow ``schedule(rate * progress)``, where progress runs
    from 0 to 1 over the iterations. Rounding uses the largest-remainder method.

    Args:
        total: label budget.
        iterations: number of training iterations after the initial batch.
        schedule: ``"constant"``, ``"hyperbolic"`` (1/(1+t)), ``"inverse_quadratic"``
            (1/(1+t)^2), ``"front"`` (evenly over the first third of the iterations,
            none after), or any callable ``f(t) -> weight >= 0``.
        initial_fraction: share of ``total`` asked before the first iteration.
        rate: scales the schedule's time axis (larger = faster decay).
    """
    if total < 0 or iterations < 0:
        raise ValueError(f"total and iterations must be >= 0, got {total}, {iterations}")
    if not 0.0 <= initial_fraction <= 1.0:
        raise ValueError(f"initial_fraction must lie in [0, 1], got {initial_fraction}")
    if iterations == 0:
        return np.array([total], dtype=np.int64)
    if isinstance(schedule, str):
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown query schedule {schedule!r}; choose from {list(SCHEDULES)}")
        fn = SCHEDULES[schedule]
    else:
        fn = schedule
    t = rate * np.arange(iterations) / iterations
    w = np.array([fn(float(x)) for x in t], dtype=np.float64)
    if np.any(~np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError("a query schedule must give finite, non-negative weights, not all zero")
    initial = round(total * initial_fraction)
    ideal = np.concatenate([[initial], (total - initial) * w / w.sum()])
    counts = np.floor(ideal).astype(np.int64)
    short = total - counts.sum()
    order = np.argsort(-(ideal - counts), kind="stable")
    counts[order[:short]] += 1
    return counts


def allocate_rounds(total: int, iterations: int, per_round: int, every: int = 1) -> np.ndarray:
    """Front-loaded rounds: ``[iterations + 1]`` counts, ``per_round`` queries at entry 0 (before
    any agent training) and at every ``every``-th entry after it, until ``total`` is spent.

    The published protocol of PEBBLE, SURF, QPA and PPE on DeepMind Control (10 labels every
    20,000 steps until the budget is in) is ``per_round=10`` with iterations of 10,000 steps and
    ``every=2``. Counts sum to ``total`` when the rounds reach it; a budget the rounds cannot
    spend is refused, so no label silently goes unasked.

    Example:
        >>> allocate_rounds(25, 6, per_round=10, every=2).tolist()
        [10, 0, 10, 0, 5, 0, 0]
    """
    if total < 0 or iterations < 0 or per_round < 1 or every < 1:
        raise ValueError(
            f"need total, iterations >= 0 and per_round, every >= 1, "
            f"got {total}, {iterations}, {per_round}, {every}"
        )
    counts = np.zeros(iterations + 1, dtype=np.int64)
    left = total
    for i in range(0, iterations + 1, every):
        counts[i] = min(per_round, left)
        left -= counts[i]
    if left:
        rounds = iterations // every + 1
        raise ValueError(
            f"{rounds} rounds of {per_round} labels (one every {every} iterations of {iterations + 1}) "
            f"cannot ask {total}; raise labels_per_round or iterations, or lower the budget"
        )
    return counts
