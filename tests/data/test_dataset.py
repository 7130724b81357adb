import numpy as np
import pytest

from prefrl.data import PreferenceDataset, sample_fragments
from tests.conftest import make_batch
from tests.narrow import present
from tests.storage.helpers import make_fragments


def _data(n_frag=40, seed=0):
    b = make_batch([50, 60], seed=seed)
    f, _ = sample_fragments(b, n_frag, 8, np.random.default_rng(seed))
    pairs = np.arange(n_frag).reshape(-1, 2)
    labels = (f.returns()[pairs[:, 0]] > f.returns()[pairs[:, 1]]).astype(np.float32)
    return f, pairs, labels


def test_add_keeps_content_and_skips_nan():
    f, pairs, labels = _data()
    labels[3] = np.nan
    ds = PreferenceDataset()
    rep = ds.add(f, pairs, labels)
    assert (rep.added, rep.skipped) == (19, 1) and len(ds) == 19
    kept = np.delete(pairs, 3, 0)
    np.testing.assert_array_equal(present(ds.fragments).arrays(ds.pairs).obs, f.arrays(kept).obs)
    assert len(present(ds.fragments).table_acts) <= len(np.unique(f.window(extra=1)))


def test_fifo_bound_evicts_oldest_and_drops_their_frames():
    ds = PreferenceDataset(max_size=15)
    f1, p1, l1 = _data(seed=1)
    f2, p2, l2 = _data(seed=2)
    assert ds.add(f1, p1, l1).evicted == 5
    rep = ds.add(f2, p2, l2)
    assert rep.evicted == 20 and len(ds) == 15
    np.testing.assert_array_equal(ds.pair_ids, np.arange(25, 40))
    np.testing.assert_array_equal(present(ds.fragments).arrays(ds.pairs).obs, f2.arrays(p2[5:]).obs)
    assert len(present(ds.fragments)) == 30


def test_save_load_round_trip_and_errors(tmp_path):
    f, pairs, labels = _data()
    labels[0] = 0.5
    ds = PreferenceDataset(max_size=100)
    ds.add(f, pairs, labels)
    ds2 = PreferenceDataset.load(ds.save(tmp_path / "p.npz"))
    np.testing.assert_array_equal(ds2.labels, ds.labels)
    np.testing.assert_array_equal(
        present(ds2.fragments).arrays(ds2.pairs).acts, present(ds.fragments).arrays(ds.pairs).acts
    )
    assert ds2.max_size == 100 and ds2.next_id == ds.next_id
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04garbage")
    with pytest.raises(ValueError, match="cannot read"):
        PreferenceDataset.load(bad)
    ds.save(tmp_path / "t.npz")
    data = dict(np.load(tmp_path / "t.npz"))
    data["labels"] = np.full_like(data["labels"], 3.0)
    np.savez(tmp_path / "t2.npz", **data)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        PreferenceDataset.load(tmp_path / "t2.npz")
    make_batch([5]).save(tmp_path / "traj.npz")
    with pytest.raises(ValueError, match=r"expected a 'prefrl\.preferences' file"):
        PreferenceDataset.load(tmp_path / "traj.npz")


def test_bad_labels_and_pairs():
    f, pairs, labels = _data()
    ds = PreferenceDataset()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ds.add(f, pairs, labels + 2)
    with pytest.raises(ValueError, match="inf"):
        ds.add(f, pairs, np.full(len(pairs), np.inf))
    with pytest.raises(ValueError, match="shape"):
        ds.add(f, pairs, labels[:-1])
    with pytest.raises(ValueError, match="pair indices"):
        ds.add(f, pairs + 100, labels)
    assert len(ds) == 0


def test_validation_split_is_stable_as_data_grows():
    ds = PreferenceDataset()
    f, p, lab = _data(n_frag=400)
    ds.add(f, p[:100], lab[:100])
    m1 = ds.validation_mask(0.2)
    ds.add(f, p[100:], lab[100:])
    m2 = ds.validation_mask(0.2)
    np.testing.assert_array_equal(m1, m2[:100])
    assert 0.1 < m2.mean() < 0.3


def test_answer_keys_add_each_answer_once_and_survive_save_and_eviction(tmp_path) -> None:
    frags = make_fragments(6)
    ds = PreferenceDataset(max_size=2)
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    rep = ds.add(frags, pairs, np.array([1.0, np.nan, 0.0]), keys=np.array([7, 8, 9]))
    assert rep.added == 2 and ds.answer_keys.tolist() == [7, 8, 9]  # the skipped answer counts as seen
    again = ds.add(frags, pairs, np.array([1.0, 1.0, 1.0]), keys=np.array([9, 10, 10]))
    assert again.added == 1 and ds.labels.tolist() == [0.0, 1.0]  # 9 seen, 10 once
    ds.add(frags, pairs[:1], np.array([0.5]), keys=np.array([11]))  # evicts the answer of key 9
    assert len(ds) == 2 and ds.has_keys(np.array([9, 11, 12])).tolist() == [True, True, False]
    loaded = PreferenceDataset.load(ds.save(tmp_path / "p.npz"))
    assert loaded.answer_keys.tolist() == [7, 8, 9, 10, 11]
    with pytest.raises(ValueError, match="keys must have shape"):
        ds.add(frags, pairs, np.ones(3), keys=np.array([1, 2]))


def test_image_clips_are_stored_compressed_and_come_back_the_same(tmp_path) -> None:
    """Atari-sized clip tables (frame stacks of uint8) must not take hundreds of MB per save."""
    import zipfile

    from prefrl.data import Fragments

    rng = np.random.default_rng(0)
    n, length = 8, 10
    rows = n * (length + 1)
    frames = np.zeros((rows, 4, 84, 84), dtype=np.uint8)  # a dark screen with a moving paddle
    for r in range(rows):
        frames[r, :, 10 + r % 60 : 18 + r % 60, 70:72] = 200
    frames[:, :, ::7, ::5] += rng.integers(0, 3, size=frames[:, :, ::7, ::5].shape, dtype=np.uint8)
    starts = np.arange(n, dtype=np.int64) * (length + 1)
    frags = Fragments(frames, np.zeros(rows, np.int64), np.zeros(rows, np.float32), np.zeros(rows, bool),
                      starts, length, np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64))  # fmt: skip
    ds = PreferenceDataset()
    ds.add(frags, np.array([[0, 1], [2, 3], [4, 5]]), np.array([1.0, 0.0, 0.5], np.float32))
    path = ds.save(tmp_path / "prefs.npz")
    assert path.stat().st_size < frames.nbytes / 10
    with zipfile.ZipFile(path) as z:
        assert z.getinfo("obs.npy").compress_type == zipfile.ZIP_DEFLATED
    back = PreferenceDataset.load(path)
    assert back.fragments is not None
    np.testing.assert_array_equal(back.fragments.table_obs, present(ds.fragments).table_obs)
    np.testing.assert_array_equal(back.labels, ds.labels)
    vec = PreferenceDataset()  # float vectors barely compress: stored as they are
    vec.add(make_fragments(), np.array([[0, 1]]), np.array([1.0], np.float32))
    with zipfile.ZipFile(vec.save(tmp_path / "vec.npz")) as z:
        assert z.getinfo("obs.npy").compress_type == zipfile.ZIP_STORED
