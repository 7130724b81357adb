import math

import numpy as np
import pytest

from prefrl.data import Fragments
from prefrl.teachers import PRESETS, SyntheticTeacher, TeacherConfig


def _frags(returns_per_step: list[list[float]]) -> Fragments:
    """Fragments with given per-step rewards, each in its own episode."""
    rews = np.asarray(returns_per_step, dtype=np.float32)
    n, L = rews.shape
    table = np.zeros((n * (L + 1)), np.float32)
    for i in range(n):
        table[i * (L + 1) : i * (L + 1) + L] = rews[i]
    obs = np.zeros((n * (L + 1), 1), np.float32)
    rows = np.arange(n) * (L + 1)
    return Fragments(
        obs, np.zeros((len(obs), 1)), table, np.zeros(len(obs), bool), rows, L, np.arange(n), np.zeros(n, int)
    )


def test_oracle_prefers_the_higher_return_and_ties_half():
    f = _frags([[1, 1], [0, 3], [2, 0]])
    labels = SyntheticTeacher("oracle").label(f, np.array([[0, 1], [1, 0], [0, 2]]))
    np.testing.assert_array_equal(labels, [0.0, 1.0, 0.5])


def test_noisy_teacher_follows_bradley_terry_probabilities():
    f = _frags([[1.0], [0.0]])
    t = SyntheticTeacher(TeacherConfig(beta=2.0), np.random.default_rng(0))
    labels = t.label(f, np.tile([[0, 1]], (20000, 1)))
    assert labels.mean() == pytest.approx(1 / (1 + math.exp(-2.0)), abs=0.01)


def test_mistake_teacher_flips_at_its_rate():
    f = _frags([[5.0], [0.0]])
    labels = SyntheticTeacher("mistake", np.random.default_rng(0)).label(f, np.tile([[0, 1]], (20000, 1)))
    assert 1 - labels.mean() == pytest.approx(0.1, abs=0.01)


def test_myopic_teacher_weighs_later_steps_more():
    f = _frags([[10, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0, 9.5]])
    assert SyntheticTeacher("oracle").label(f, np.array([[0, 1]]))[0] == 1.0
    assert SyntheticTeacher("myopic").label(f, np.array([[0, 1]]))[0] == 0.0


def test_skip_and_equal_use_the_seen_return_range():
    f = _frags([[0.0], [0.5], [10.0], [9.8], [100.0]])
    pairs = np.array([[0, 1], [2, 3], [4, 0]])
    skip = SyntheticTeacher("skip").label(f, pairs)  # range 0..100: skip when both returns < 10
    assert np.isnan(skip[0]) and skip[1] == 1.0 and skip[2] == 1.0
    eq = SyntheticTeacher("equal").label(f, pairs)  # equal when |diff| < 10
    np.testing.assert_array_equal(eq, [0.5, 0.5, 1.0])
    absolute = SyntheticTeacher(TeacherConfig(equal=0.1, threshold_mode="absolute")).label(f, pairs)
    np.testing.assert_array_equal(absolute, [0.0, 1.0, 1.0])


def test_presets_and_bad_configs():
    for name in PRESETS:
        assert isinstance(TeacherConfig.preset(name), TeacherConfig)
    with pytest.raises(ValueError, match="unknown teacher preset"):
        TeacherConfig.preset("perfect")
    with pytest.raises(ValueError, match="beta"):
        TeacherConfig(beta=0.0)
    with pytest.raises(ValueError, match="gamma"):
        TeacherConfig(gamma=1.5)
    f = _frags([[1.0], [0.0]])
    nof = Fragments(f.table_obs, f.table_acts, None, f.table_dones, f.rows, 1, f.episode, f.start)
    with pytest.raises(ValueError, match="true rewards"):
        SyntheticTeacher().label(nof, np.array([[0, 1]]))
