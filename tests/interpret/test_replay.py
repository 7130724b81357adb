"""Frames rendered afterwards by replaying recorded actions, and the check that refuses a bad replay."""

from __future__ import annotations

import numpy as np

from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import make_env
from prefrl.interpret.replay import Recorded, replay_frames


def _frames_and_batch(env_id: str, n_steps: int, seed: int):
    env = make_env(env_id, render=True)
    batch = collect_episodes(env, n_steps=n_steps, seed=seed, render=True)
    env.close()
    return batch


def test_replay_renders_the_asked_rows_as_collecting_did() -> None:
    # two parts, as a run page has them (policy, random): Pendulum (pygame) and a MuJoCo task
    a, b = _frames_and_batch("Pendulum-v1", 30, seed=3), _frames_and_batch("Pendulum-v1", 20, seed=4)
    parts = [Recorded(a, 3, 0), Recorded(b, 4, len(a.acts))]
    rows = np.array([0, 5, 29, len(a.acts) + 7])
    table = replay_frames(
        lambda: make_env("Pendulum-v1", render=True), parts, rows, len(a.acts) + len(b.acts)
    )
    assert table is not None and table.shape[0] == len(a.acts) + len(b.acts)
    want = np.concatenate([a.infos["frames"], b.infos["frames"]])  # each batch's frames by its rows
    np.testing.assert_array_equal(table[rows], want[rows])
    assert not table[1].any()  # rows not asked for are left unrendered
    hc = _frames_and_batch("HalfCheetah-v5", 12, seed=0)
    make = lambda: make_env("HalfCheetah-v5", render=True)  # noqa: E731
    table = replay_frames(make, [Recorded(hc, 0, 0)], np.array([11]), 13)
    assert table is not None
    np.testing.assert_array_equal(table[11], hc.infos["frames"][11])


def test_a_replay_that_does_not_reproduce_its_episode_is_refused() -> None:
    a = _frames_and_batch("Pendulum-v1", 10, seed=3)
    wrong_seed = [Recorded(a, 5, 0)]  # another start state: the observations differ at once
    assert replay_frames(lambda: make_env("Pendulum-v1", render=True), wrong_seed, np.array([4]), 11) is None
