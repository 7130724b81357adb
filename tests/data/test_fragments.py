import numpy as np
import pytest

from prefrl.data import Fragments, Trajectory, TrajectoryBatch, random_pairs, sample_fragments
from tests.conftest import make_batch
from tests.narrow import present


def test_fragments_hold_the_right_windows_and_provenance():
    b = make_batch([20, 30, 10])
    f, rep = sample_fragments(b, 200, 5, np.random.default_rng(0))
    a = f.arrays()
    assert a.obs.shape == (200, 5, 3) and a.acts.shape == (200, 5, 1) and present(a.rews).shape == (200, 5)
    np.testing.assert_array_equal(a.obs[:, :, 0], np.repeat(f.episode[:, None], 5, 1))
    np.testing.assert_array_equal(a.obs[:, :, 1], f.start[:, None] + np.arange(5))
    np.testing.assert_array_equal(a.next_obs[:, :, 1], f.start[:, None] + np.arange(1, 6))
    np.testing.assert_array_equal(a.rews, f.episode[:, None] * 1000 + f.start[:, None] + np.arange(5))
    assert (f.start + 5 <= b.lengths[f.episode]).all()
    assert rep.short_episodes == 0 and rep.windows == 16 + 26 + 6


def test_sampling_is_uniform_over_windows_so_long_episodes_are_weighted():
    b = make_batch([10, 100])
    f, _ = sample_fragments(b, 20000, 10, np.random.default_rng(1))
    share = np.mean(f.episode == 1)
    assert abs(share - 91 / 92) < 0.01


def test_exclude_episode_ends():
    b = make_batch([12], terminated=True)
    f, _ = sample_fragments(b, 500, 4, np.random.default_rng(0), include_ends=False)
    assert f.start.max() == 12 - 4 - 1
    assert not f.arrays().dones.any()
    f2, _ = sample_fragments(b, 500, 4, np.random.default_rng(0), include_ends=True)
    assert f2.arrays().dones.any()


def test_short_episodes_are_counted_or_refused():
    b = make_batch([3, 50, 2])
    f, rep = sample_fragments(b, 50, 10, np.random.default_rng(0))
    assert rep.short_episodes == 2 and set(f.episode.tolist()) == {1}
    with pytest.raises(ValueError, match="2 of 3 episodes are shorter"):
        sample_fragments(b, 5, 10, np.random.default_rng(0), short_episodes="error")
    with pytest.raises(ValueError, match="longer than every episode"):
        sample_fragments(b, 5, 60, np.random.default_rng(0))


def test_compact_stores_each_frame_once_and_keeps_content():
    b = make_batch([100])
    f, _ = sample_fragments(b, 50, 10, np.random.default_rng(0))
    c = f.compact()
    assert len(c.table_acts) == len(np.unique(f.window(extra=1)))
    np.testing.assert_array_equal(c.arrays().obs, f.arrays().obs)
    np.testing.assert_array_equal(c.arrays().next_obs, f.arrays().next_obs)
    both = Fragments.concat([c, f.select(np.arange(5))])
    np.testing.assert_array_equal(both.arrays(np.arange(50, 55)).obs, f.arrays(np.arange(5)).obs)


def test_discrete_multidiscrete_and_dict_observations():
    trajs = [
        Trajectory(
            obs={"cell": np.arange(t + 1), "md": np.ones((t + 1, 2), np.int64)},
            acts=np.zeros(t, np.int64),
            rews=np.ones(t, np.float32),
        )
        for t in (8, 9)
    ]
    b = TrajectoryBatch.from_trajectories(trajs)
    f, _ = sample_fragments(b, 10, 4, np.random.default_rng(0))
    a = f.arrays(np.array([[0, 1], [2, 3]]))
    assert a.obs["cell"].shape == (2, 2, 4) and a.obs["md"].shape == (2, 2, 4, 2)
    np.testing.assert_array_equal(a.next_obs["cell"] - a.obs["cell"], 1)


def test_random_pairs_are_distinct():
    p = random_pairs(5, 1000, np.random.default_rng(0))
    assert p.shape == (1000, 2) and (p[:, 0] != p[:, 1]).all() and p.max() < 5
    with pytest.raises(ValueError):
        random_pairs(1, 3, np.random.default_rng(0))


def test_distinct_pairs_drop_self_pairs_and_repeats_by_window() -> None:
    from prefrl.data import distinct_pairs

    b = make_batch([6, 6])
    rng = np.random.default_rng(0)
    frags, _ = sample_fragments(b, 200, 3, rng)  # 8 windows, 200 draws: many repeats
    pairs = np.arange(200).reshape(100, 2)
    kept = distinct_pairs(frags, pairs)
    win = list(zip(frags.episode.tolist(), frags.start.tolist()))
    keys = [frozenset((win[a], win[c])) for a, c in kept]
    assert all(win[a] != win[c] for a, c in kept)  # no clip against itself
    assert len(keys) == len(set(keys))  # no pair twice, in either order
    all_keys = {frozenset((win[a], win[c])) for a, c in pairs if win[a] != win[c]}
    assert set(keys) == all_keys  # and nothing else is dropped
    assert 0 < len(kept) < 100
