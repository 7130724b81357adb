"""Frames of recorded episodes, rendered afterwards by replaying their actions.

A run's page shows a video of one episode and filmstrips of a few clip pairs, but it cuts
its clips from several fresh episodes. Rendering every step of them all is most of the
page's time where frames are slow (MuJoCo tasks: 50-200 ms a frame on a CPU, 1,000-step
episodes). :func:`replay_frames` instead steps a new copy of the environment through the
recorded actions from the same reset seed and renders only the rows asked for. Stepping
costs well under a millisecond, so a page renders about a quarter of the frames it did.

The replay checks that every step reproduces the recorded observation. Where it does not
(an environment whose episodes depend on more than the reset seed and the actions), it says
so and the caller renders while collecting instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from prefrl.data.arrays import obs_map
from prefrl.data.trajectories import TrajectoryBatch


@dataclass
class Recorded:
    """Episodes collected by :func:`prefrl.agents.rollout.collect_episodes` with ``seed``."""

    batch: TrajectoryBatch
    seed: int
    offset: int  # the batch's first row in the table the frames are for


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return all(_same(a[k], b[k]) for k in a)
    x, y = np.asarray(a), np.asarray(b)
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(np.array_equal(x, y))


def _row(obs: Any, row: int) -> Any:
    return obs_map(lambda a: a[row], obs)


def replay_frames(
    make: Callable[[], gym.Env], parts: Sequence[Recorded], rows: np.ndarray, n_rows: int
) -> np.ndarray | None:
    """Frames ``[n_rows, H, W, 3]`` with the table ``rows`` filled (rendered before each row's
    action, as ``collect_episodes(render=True)`` does) and zeros elsewhere; the zeros are not
    written, so the pages of memory behind them are never used. ``None`` when a replayed step
    did not reproduce its recorded observation (the caller should render while collecting).

    ``make`` builds the environment (``render_mode="rgb_array"``); it is closed before return.
    ``parts`` are in the order they were collected, on one environment: the first frame of the
    first part is rendered whether asked for or not, so that a renderer that sets itself up on
    its first frame (MuJoCo's camera) starts where it started while collecting.
    """
    want = np.zeros(n_rows, bool)
    want[np.asarray(rows, dtype=np.int64)] = True
    env = make()
    table: np.ndarray | None = None
    try:
        for k, part in enumerate(parts):
            b = part.batch
            local = np.flatnonzero(want[part.offset : part.offset + len(b.acts)])
            if not len(local) and k > 0:
                continue
            last = int(local[-1]) if len(local) else 0
            obs, _ = env.reset(seed=part.seed)
            for e in range(len(b.lengths)):
                start = int(b.starts[e])
                if start > last:
                    break
                if e > 0:
                    obs, _ = env.reset()
                for t in range(int(b.lengths[e]) + 1):
                    row = start + t
                    if not _same(obs, _row(b.obs, row)):
                        return None
                    if row > last or t == int(b.lengths[e]):
                        break
                    # the first frame is always drawn: a renderer may set itself up then
                    # (MuJoCo's viewer places its camera), as it did while collecting
                    if want[part.offset + row] or (k == 0 and row == 0):
                        frame = np.asarray(env.render())
                        if table is None:
                            table = np.zeros((n_rows, *frame.shape), np.uint8)
                        if want[part.offset + row]:
                            table[part.offset + row] = frame
                    obs, *_ = env.step(b.acts[row])
    finally:
        env.close()
    return table
