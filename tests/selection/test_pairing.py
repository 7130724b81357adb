"""RecentPairs: which comparisons the preference wrapper's labeller asks for a stream of clips."""

from __future__ import annotations

import numpy as np
import pytest

from prefrl.selection import RecentPairs


def feed(pairing: RecentPairs[int], n: int, batch: int = 7) -> list[tuple[int, int]]:
    """Items ``0 .. n-1`` in batches of ``batch``; all pairs returned."""
    out: list[tuple[int, int]] = []
    for start in range(0, n, batch):
        out += pairing.add(range(start, min(start + batch, n)))
    return out


def test_one_pair_per_item_with_an_earlier_item_in_random_order() -> None:
    pairing = RecentPairs[int](pool_size=10, rng=np.random.default_rng(0))
    pairs = feed(pairing, 200)
    # one pair per item: the first item has no partner yet, its credit is spent on the second
    assert len(pairs) == 200 == pairing.asked
    assert all(a != b for a, b in pairs)  # never an item with itself
    newer_first = np.mean([a > b for a, b in pairs])
    assert 0.35 < newer_first < 0.65  # the order within a pair is random
    # each item is paired with earlier ones when it arrives (the second one twice)
    assert sorted(max(p) for p in pairs) == [1, *range(1, 200)]


def test_credit_rate_below_one_asks_proportionally_fewer_pairs() -> None:
    half = feed(RecentPairs[int](pairs_per_item=0.5, rng=np.random.default_rng(1)), 200)
    assert len(half) == 100
    assert all(a != b for a, b in half)
    double = feed(RecentPairs[int](pairs_per_item=2.0, rng=np.random.default_rng(1)), 200)
    assert len(double) == 1 + 2 * 199  # the first item's credit, capped at 1, goes to the second
    assert all(a != b for a, b in double)
    assert feed(RecentPairs[int](pairs_per_item=0.0), 50) == []


def test_budget_stops_asking() -> None:
    pairing = RecentPairs[int](budget=25, rng=np.random.default_rng(2))
    assert not pairing.exhausted
    pairs = feed(pairing, 100, batch=10)
    assert len(pairs) == 25 and pairing.exhausted
    assert pairing.add([1000, 1001]) == []
    assert RecentPairs[int](budget=0).add(range(10)) == []


def test_pool_keeps_only_the_newest_items() -> None:
    pairing = RecentPairs[int](pool_size=5, rng=np.random.default_rng(3))
    feed(pairing, 40)
    assert list(pairing.pool) == [35, 36, 37, 38, 39]
    pairs = pairing.add(range(40, 140))
    for a, b in pairs:  # the partner is one of the 5 items before the new one
        new, old = max(a, b), min(a, b)
        assert new - 5 <= old < new


def test_same_seed_same_pairs() -> None:
    def run() -> list[tuple[int, int]]:
        return feed(RecentPairs[int](pool_size=8, pairs_per_item=0.7, rng=np.random.default_rng(4)), 100)

    assert run() == run()


@pytest.mark.parametrize(
    "kwargs", [{"pool_size": 0}, {"pairs_per_item": -1.0}, {"pairs_per_item": float("nan")}, {"budget": -1}]
)
def test_bad_settings_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        RecentPairs[int](**kwargs)
