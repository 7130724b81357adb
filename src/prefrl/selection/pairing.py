"""Pairing of a stream of items: each new item is compared with a recent one.

The preference wrapper's labeller (:mod:`prefrl.preference_env.labeller`) receives finished
clips one batch at a time and has no candidate set to choose from; :class:`RecentPairs`
decides which comparisons to ask for them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")


class RecentPairs(Generic[T]):
    """Pairs each new item with a uniformly random member of a pool of recent items.

    Every new item earns ``pairs_per_item`` comparisons of credit; each whole unit of
    credit buys one pair ``(new item, random pool member)``, in random order within the
    pair. Credit left after an item is capped at 1 (a rate below 1 asks about every
    ``1 / pairs_per_item``-th item; a rate above 1 asks several pairs per item). The item
    joins the pool after its pairs are chosen, so it is never paired with itself; the pool
    keeps the newest ``pool_size`` items. Once ``budget`` pairs have been asked, no more are.

    Args:
        pool_size: recent items a new item may be paired with.
        pairs_per_item: comparisons asked per new item (``>= 0``, fractions allowed).
        budget: the most pairs ever asked (``None``: no limit).
        rng: random generator for the partner and the order within a pair.

    Example:
        >>> import numpy as np
        >>> pairing = RecentPairs[str](pool_size=4, rng=np.random.default_rng(0))
        >>> pairing.add(["a"])  # nothing to pair the first item with yet
        []
        >>> sorted(pairing.add(["b"])[0])
        ['a', 'b']
    """

    def __init__(
        self,
        pool_size: int = 64,
        pairs_per_item: float = 1.0,
        budget: int | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size must be >= 1, got {pool_size}")
        if not pairs_per_item >= 0:
            raise ValueError(f"pairs_per_item must be >= 0, got {pairs_per_item}")
        if budget is not None and budget < 0:
            raise ValueError(f"budget must be >= 0 or None, got {budget}")
        self.pairs_per_item = float(pairs_per_item)
        self.budget = budget
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.pool: deque[T] = deque(maxlen=pool_size)
        self.asked = 0
        """Pairs returned so far."""
        self.credit = 0.0
        """Comparisons earned but not yet asked (at most 1 between items)."""

    @property
    def exhausted(self) -> bool:
        """Whether the budget is spent (no pair will be returned any more)."""
        return self.budget is not None and self.asked >= self.budget

    def add(self, items: Iterable[T]) -> list[tuple[T, T]]:
        """Take new items (oldest first) into the pool; returns the pairs ``[(first, second), ...]`` to ask.

        The list has one entry per comparison (at most ``budget - asked`` in all); an item
        may appear in several pairs, as a new item or later as a pool member.
        """
        pairs: list[tuple[T, T]] = []
        for item in items:
            self.credit += self.pairs_per_item
            while self.pool and self.credit >= 1.0 and not self.exhausted:
                other = self.pool[int(self.rng.integers(len(self.pool)))]
                pairs.append((item, other) if self.rng.random() < 0.5 else (other, item))
                self.credit -= 1.0
                self.asked += 1
            self.credit = min(self.credit, 1.0)
            self.pool.append(item)
        return pairs
