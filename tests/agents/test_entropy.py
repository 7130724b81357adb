"""PEBBLE's state-entropy reward pays for novel states."""

from __future__ import annotations

import numpy as np

from prefrl.agents.entropy import StateEntropyReward


def test_novel_states_earn_more_than_revisited_ones() -> None:
    r = StateEntropyReward(k=3)
    rng = np.random.default_rng(0)
    r(rng.normal(0, 0.1, (200, 3)))  # memory of states near the origin
    near = np.concatenate([r(rng.normal(0, 0.1, (1, 3))) for _ in range(5)])
    far = np.concatenate([r(rng.normal(5 * (i + 1), 0.1, (1, 3))) for i in range(5)])  # each one new
    assert far.min() > near.max()
