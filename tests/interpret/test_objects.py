"""Objects located by colour and the attribution mass near them (prefrl.interpret.objects)."""

from __future__ import annotations

import numpy as np
import pytest

from prefrl.interpret.objects import distinctive_colour, erase_colour, locate_colour, mass_near

COIN = (255, 204, 0)
GREY = (180, 195, 196)


def scene(n: int, coin_at: list[tuple[int, int] | None], seed: int = 0) -> np.ndarray:
    """``n`` 32x32 frames: a dark noisy background, a grey wall, and a 2x2 coin where asked."""
    rng = np.random.default_rng(seed)
    f = rng.integers(0, 60, (n, 32, 32, 3)).astype(np.uint8)
    f[:, :, 24:] = GREY
    for i, at in enumerate(coin_at):
        if at is not None:
            f[i, at[0] : at[0] + 2, at[1] : at[1] + 2] = COIN
    return f


def test_the_colour_that_tells_coin_frames_from_others_is_found_from_the_frames() -> None:
    with_coin = scene(6, [(5, 5), (10, 3), (20, 20), (1, 1), (8, 15), (28, 10)])
    without = scene(6, [None] * 5 + [(3, 3)], seed=1)  # the object may be in a few frames without
    assert distinctive_colour(with_coin, without).tolist() == list(COIN)


def test_no_distinctive_colour_is_a_clear_error() -> None:
    same = scene(4, [None] * 4)
    with pytest.raises(ValueError, match="no colour appears in at least 50% of the 4 frames"):
        distinctive_colour(same, same)  # every colour is as common in both
    with pytest.raises(ValueError, match=r"frames_with must be uint8 RGB images \[N, H, W, 3\]"):
        distinctive_colour(same.astype(np.float32), same)


def test_the_coin_is_located_at_its_centre_and_missing_where_it_is_not() -> None:
    frames = scene(3, [(5, 7), None, (20, 2)])
    frames[1, 0, 0] = COIN  # one stray pixel: below min_pixels
    centres, visible = locate_colour(frames, np.array(COIN))
    assert visible.tolist() == [True, False, True]
    np.testing.assert_allclose(centres[[0, 2]], [[5.5, 7.5], [20.5, 2.5]])
    assert np.isnan(centres[1]).all()
    with pytest.raises(ValueError, match="colour must be 3 values in"):
        locate_colour(frames, np.array([300, 0, 0]))


def test_mass_near_is_one_for_a_map_on_the_point_and_the_disc_share_for_a_flat_map() -> None:
    maps = np.zeros((2, 32, 32))
    maps[0, 5, 6] = -3.0  # magnitudes count
    maps[1] = 1.0
    share = mass_near(maps, np.array([[5.0, 5.0], [16.0, 16.0]]), radius=2.0)
    assert share[0] == 1.0
    assert share[1] == pytest.approx(13 / 1024)  # the 13 pixel centres within 2 of (16, 16)
    assert mass_near(np.zeros((1, 4, 4)), np.array([[1.0, 1.0]]), 1.0).tolist() == [0.0]
    with pytest.raises(ValueError, match="keep only the frames where the object is visible"):
        mass_near(maps, np.array([[np.nan, np.nan], [1.0, 1.0]]), 2.0)


def test_erasing_paints_the_coin_over_with_what_is_around_it() -> None:
    frames = scene(2, [(10, 21), None])  # the coin beside the wall
    out = erase_colour(frames, np.array(COIN))
    assert not locate_colour(out, np.array(COIN))[1].any()
    np.testing.assert_array_equal(out[1], frames[1])  # no coin: unchanged
    far = np.ones((32, 32), bool)
    far[7:15, 18:26] = False  # the coin, its edge and the ring around it
    np.testing.assert_array_equal(out[0][far], frames[0][far])  # nothing else touched
