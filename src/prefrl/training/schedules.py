"""Query schedules: how a total label budget is spread over training iterations."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

SCHEDULES: dict[str, Callable[[float], float]] = {
    "constant": lambda t: 1.0,
    "hyperbolic": lambda t: 1.0 / (1.0 + t),
    "inverse_quadratic": lambda t: 1.0 / (1.0 + t) ** 2,
}


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
            (1/(1+t)^2), or any callable ``f(t) -> weight >= 0``.
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
