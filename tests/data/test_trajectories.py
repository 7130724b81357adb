import numpy as np
import pytest

from prefrl.data import Trajectory, TrajectoryBatch
from tests.conftest import make_batch


def test_batch_rows_and_episode_views_round_trip():
    b = make_batch([5, 3, 7])
    assert len(b) == 3 and b.num_steps == 15
    np.testing.assert_array_equal(b.starts, [0, 6, 10])
    ep = b.episode(1)
    assert ep.obs.shape == (4, 3) and ep.acts.shape == (3, 1)
    np.testing.assert_array_equal(ep.obs[:, 1], np.arange(4))
    np.testing.assert_array_equal(b.episode_returns(), [sum(range(5)), 3000 + 3, 2000 * 7 + sum(range(7))])
    assert len(b.step_rows) == 15


def test_dones_only_at_last_step_of_terminated_episodes():
    b = make_batch([4, 2], terminated=True)
    assert np.flatnonzero(b.dones).tolist() == [3, 6]
    assert not make_batch([4, 2]).dones.any()


def test_save_load_box_and_dict(tmp_path):
    b = make_batch([5, 3])
    b2 = TrajectoryBatch.load(b.save(tmp_path / "t.npz"))
    np.testing.assert_array_equal(b.obs, b2.obs)
    np.testing.assert_array_equal(b.rews, b2.rews)
    trajs = [
        Trajectory(
            obs={"pos": np.zeros((t + 1, 2), np.float32), "id": np.arange(t + 1)},
            acts=np.arange(t),
            rews=np.ones(t, np.float32),
            infos={"x": np.ones(t)},
        )
        for t in (2, 4)
    ]
    d = TrajectoryBatch.from_trajectories(trajs)
    d2 = TrajectoryBatch.load(d.save(tmp_path / "d.npz"))
    assert set(d2.obs) == {"pos", "id"} and d2.obs["id"].tolist() == [0, 1, 2, 0, 1, 2, 3, 4]
    assert "x" in d2.infos


def test_bad_inputs_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="needs 4 observations"):
        Trajectory(obs=np.zeros((3, 2)), acts=np.zeros((3, 1)))
    with pytest.raises(ValueError, match="NaN"):
        Trajectory(obs=np.zeros((3, 2)), acts=np.zeros((2, 1)), rews=np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="zero episodes"):
        TrajectoryBatch.from_trajectories([])
    corrupt = tmp_path / "c.npz"
    corrupt.write_bytes(b"not a zip file at all")
    with pytest.raises(ValueError, match="cannot read"):
        TrajectoryBatch.load(corrupt)
    foreign = tmp_path / "f.npz"
    np.savez(foreign, a=np.zeros(3))
    with pytest.raises(ValueError, match="not a prefrl file"):
        TrajectoryBatch.load(foreign)
    pickled = tmp_path / "p.npz"
    np.savez(pickled, __meta__=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="cannot read"):
        TrajectoryBatch.load(pickled)
    with pytest.raises(FileNotFoundError):
        TrajectoryBatch.load(tmp_path / "missing.npz")
