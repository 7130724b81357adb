import numpy as np
import pytest

from prefrl.data import PreferenceDataset, sample_fragments
from tests.conftest import make_batch


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
    np.testing.assert_array_equal(ds.fragments.arrays(ds.pairs).obs, f.arrays(kept).obs)
    assert len(ds.fragments.table_acts) <= len(np.unique(f.window(extra=1)))


def test_fifo_bound_evicts_oldest_and_drops_their_frames():
    ds = PreferenceDataset(max_size=15)
    f1, p1, l1 = _data(seed=1)
    f2, p2, l2 = _data(seed=2)
    assert ds.add(f1, p1, l1).evicted == 5
    rep = ds.add(f2, p2, l2)
    assert rep.evicted == 20 and len(ds) == 15
    np.testing.assert_array_equal(ds.pair_ids, np.arange(25, 40))
    np.testing.assert_array_equal(ds.fragments.arrays(ds.pairs).obs, f2.arrays(p2[5:]).obs)
    assert len(ds.fragments) == 30


def test_save_load_round_trip_and_errors(tmp_path):
    f, pairs, labels = _data()
    labels[0] = 0.5
    ds = PreferenceDataset(max_size=100)
    ds.add(f, pairs, labels)
    ds2 = PreferenceDataset.load(ds.save(tmp_path / "p.npz"))
    np.testing.assert_array_equal(ds2.labels, ds.labels)
    np.testing.assert_array_equal(ds2.fragments.arrays(ds2.pairs).acts, ds.fragments.arrays(ds.pairs).acts)
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
