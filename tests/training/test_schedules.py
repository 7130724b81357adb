import numpy as np
import pytest

from prefrl.training import allocate_queries

SCHEDULE_NAMES = ["constant", "hyperbolic", "inverse_quadratic", "front"]


@pytest.mark.parametrize("schedule", [*SCHEDULE_NAMES, lambda t: 1 + t])
def test_counts_sum_exactly_to_the_total(schedule):
    for total in (0, 1, 7, 20, 199, 1000):
        for iters in (1, 3, 10, 57):
            c = allocate_queries(total, iters, schedule, initial_fraction=0.25)
            assert c.sum() == total and len(c) == iters + 1 and (c >= 0).all()


def test_shapes_of_the_schedules():
    c = allocate_queries(1000, 10, "constant")
    assert c[0] == 0 and (c[1:] == 100).all()
    h = allocate_queries(1000, 10, "hyperbolic")[1:]
    q = allocate_queries(1000, 10, "inverse_quadratic")[1:]
    assert (np.diff(h) <= 0).all() and (np.diff(q) <= 0).all() and q[0] > h[0]
    assert allocate_queries(100, 4, "constant", initial_fraction=0.2)[0] == 20


def test_front_schedule_asks_everything_in_the_first_third():
    # HalfCheetah-v5's 50 labels over 13 agent iterations: 15 first, 35 over iterations 1-5
    c = allocate_queries(50, 13, "front", initial_fraction=0.3)
    assert c[0] == 15 and c[1:6].tolist() == [7] * 5 and (c[6:] == 0).all()
    # a small budget still goes out early and whole
    p = allocate_queries(10, 13, "front", initial_fraction=0.3)
    assert p.sum() == 10 and (p[6:] == 0).all() and (p[1:6] >= 1).all()


def test_bad_schedules_raise():
    with pytest.raises(ValueError, match="unknown query schedule"):
        allocate_queries(10, 2, "cosine")
    with pytest.raises(ValueError, match="non-negative"):
        allocate_queries(10, 2, lambda t: -1.0)
    with pytest.raises(ValueError, match="initial_fraction"):
        allocate_queries(10, 2, initial_fraction=2.0)


def test_front_loaded_rounds_follow_the_published_protocol() -> None:
    from prefrl.training.schedules import allocate_rounds

    # 100 labels, 10 every 20,000 steps, iterations of 10,000 steps over 490,000 agent steps
    counts = allocate_rounds(100, 48, per_round=10, every=2)
    assert counts.sum() == 100 and len(counts) == 49
    assert list(np.flatnonzero(counts)) == list(range(0, 20, 2)) and set(counts[counts > 0]) == {10}
    assert allocate_rounds(25, 6, per_round=10, every=2).tolist() == [10, 0, 10, 0, 5, 0, 0]


def test_rounds_that_cannot_spend_the_budget_are_refused() -> None:
    from prefrl.training.schedules import allocate_rounds

    with pytest.raises(ValueError, match="cannot ask 100"):
        allocate_rounds(100, 8, per_round=10, every=2)
    with pytest.raises(ValueError, match="per_round"):
        allocate_rounds(10, 8, per_round=0)
