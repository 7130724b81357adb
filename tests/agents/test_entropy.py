"""PEBBLE's state-entropy reward pays for novel states."""

from __future__ import annotations

import numpy as np

from prefrl.agents.entropy import PROJECTED_DIM, StateEntropyReward


def test_novel_states_earn_more_than_revisited_ones() -> None:
    r = StateEntropyReward(k=3)
    rng = np.random.default_rng(0)
    r(rng.normal(0, 0.1, (200, 3)))  # memory of states near the origin
    near = np.concatenate([r(rng.normal(0, 0.1, (1, 3))) for _ in range(5)])
    far = np.concatenate([r(rng.normal(5 * (i + 1), 0.1, (1, 3))) for i in range(5)])  # each one new
    assert far.min() > near.max()


def test_frames_are_compared_through_a_projection_that_keeps_their_distances() -> None:
    """64x64 frames: the memory holds 64 numbers per frame, not 12,288, and the k-NN distance
    through the projection is the raw pixels' within a few percent."""
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (150, 64, 64, 3), dtype=np.uint8)
    r = StateEntropyReward(k=3, memory=100)
    got = r(frames)[-100:]
    assert r.states is not None and r.states.shape == (100, PROJECTED_DIM)
    flat = frames[-100:].reshape(100, -1).astype(np.float64)  # what the memory holds: the newest 100
    sq = (flat**2).sum(1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * flat @ flat.T, 0.0))  # [100, 100]
    exact = np.log1p(np.sort(d, 1)[:, 3])
    assert np.allclose(got, exact, rtol=0.05), (got[:5], exact[:5])


def test_memory_keeps_the_newest_states_only() -> None:
    r = StateEntropyReward(k=1, memory=4)
    for v in range(6):  # states 0..5, one per call: the memory keeps 2, 3, 4, 5
        r(np.full((1, 2), float(v)))
    assert r.states is not None
    assert sorted(r.states[:, 0].tolist()) == [2.0, 3.0, 4.0, 5.0]
    near_old = r(np.full((1, 2), 0.0))  # 0 was forgotten (and 2 now too): its neighbour is 3
    assert np.isclose(near_old[0], np.log1p(3 * np.sqrt(2)))


def test_centred_reward_pays_novelty_not_one_more_step() -> None:
    """Raw, every step earns a positive reward, so an episode that goes on earns more; centred,
    the rewards average 0 with unit spread and a novel state still earns more than a familiar one."""
    rng = np.random.default_rng(0)
    raw, centred = StateEntropyReward(k=3), StateEntropyReward(k=3, center=True)
    batches = [rng.normal(0, 1, (16, 3)) for _ in range(30)]
    r_raw = np.concatenate([raw(b) for b in batches])
    r_cen = np.concatenate([centred(b) for b in batches])
    assert r_raw.min() > 0
    assert abs(r_cen[100:].mean()) < 0.2 and 0.6 < r_cen[100:].std() < 1.4
    near = centred(rng.normal(0, 0.1, (1, 3)))[0]
    far = centred(np.full((1, 3), 8.0))[0]
    assert far > 1.0 > near
