"""Scoring a whole iteration's steps in bounded passes: Atari's frames must not all become floats at once."""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces

from prefrl.data import TrajectoryBatch
from prefrl.rewards import MLPReward
from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.encode import CHUNK_BYTES, batch_rewards, steps_per_chunk


def _frames(n_episodes: int, length: int, rng: np.random.Generator) -> TrajectoryBatch:
    rows = n_episodes * (length + 1)
    obs = rng.integers(0, 256, (rows, 4, 84, 84), dtype=np.uint8)
    acts = rng.integers(0, 6, rows)
    return TrajectoryBatch(obs, acts, rng.normal(size=rows).astype(np.float32), np.full(n_episodes, length),
                           np.zeros(n_episodes, bool), np.ones(n_episodes, bool))  # fmt: skip


def test_atari_frames_are_scored_a_few_hundred_at_a_time_with_the_same_rewards() -> None:
    torch.manual_seed(0)
    box, act = spaces.Box(0, 255, (4, 84, 84), np.uint8), spaces.Discrete(6)
    net = CNNReward(box, act, ensemble_size=3, shared_trunk=True, use_act=False).eval()
    chunk = steps_per_chunk(net, np.zeros((4, 84, 84), np.uint8))
    assert 100 < chunk < 1000 and chunk * 4 * 84 * 84 * 4 * 2 * 3 <= CHUNK_BYTES  # Pong: ~400 per pass
    batch = _frames(3, 400, np.random.default_rng(0))  # 1,200 steps: 4 passes
    sizes: list[int] = []

    def mean(*t: np.ndarray) -> np.ndarray:
        sizes.append(len(t[1]))
        return net.predict(*t)[0]

    got = batch_rewards(net, mean, batch)
    assert got.shape == (1200,) and got.dtype == np.float32 and max(sizes) == chunk and sum(sizes) == 1200
    whole = net.predict(*batch.transitions())[0]  # the same steps in one pass
    np.testing.assert_allclose(got, whole, rtol=1e-4, atol=1e-5)
    rows = batch.step_rows[::7]
    np.testing.assert_allclose(batch_rewards(net, mean, batch, rows), whole[::7], rtol=1e-4, atol=1e-5)


def test_small_vectors_go_in_one_pass() -> None:
    box = spaces.Box(-1, 1, (3,))
    net = MLPReward(box, box, ensemble_size=3)
    assert steps_per_chunk(net, np.zeros(3, np.float32)) == 16_384
