"""Objects found by their colour in image observations, and how much attribution lands on them.

Does a reward look at what it should? In CoinRun the reward is the coin, a small yellow sprite;
these functions find such an object in every frame by its colour and measure the share of an
attribution map (:func:`prefrl.interpret.attribution.heatmap`) within a small radius of it:

- :func:`distinctive_colour`: the colour that tells the frames where an object is known to be
  (e.g. the steps that earned a reward) from frames where it is not (e.g. episodes' first
  frames): found from the frames, not written in;
- :func:`locate_colour`: where that colour is in each frame (the centre of its pixels) and
  whether it is visible at all;
- :func:`mass_near`: the share of each map's mass within ``radius`` pixels of a point; on a
  uniform map it is the disc's share of the image, the level a map that ignores the object gets.

Frames are ``uint8 [N, H, W, 3]`` (:func:`prefrl.interpret.attribution.display_frames` turns a
CNN's ``[N, C, H, W]`` inputs into these), points ``[N, 2]`` as (row, column).

Example:
    >>> import numpy as np
    >>> frames = np.zeros((2, 8, 8, 3), np.uint8)
    >>> frames[:, 2:4, 5:7] = (255, 204, 0)  # a 2x2 "coin"
    >>> centres, visible = locate_colour(frames, np.array([255, 204, 0]))
    >>> centres[0].tolist(), visible.tolist()
    ([2.5, 5.5], [True, True])
    >>> maps = np.ones((2, 8, 8))
    >>> round(float(mass_near(maps, centres, radius=1.0)[0]), 3)  # 4 of 64 pixels
    0.062
"""

from __future__ import annotations

import numpy as np


def _frames(frames: np.ndarray, name: str = "frames") -> np.ndarray:
    f = np.asarray(frames)
    if f.ndim != 4 or f.shape[-1] != 3 or f.dtype != np.uint8:
        raise ValueError(f"{name} must be uint8 RGB images [N, H, W, 3], got {f.dtype} {f.shape}")
    return f


def _codes(frames: np.ndarray) -> np.ndarray:
    """``[N, H, W]`` one integer per colour (``r·65536 + g·256 + b``)."""
    f = frames.astype(np.int64)
    return (f[..., 0] << 16) | (f[..., 1] << 8) | f[..., 2]


def _presence(frames: np.ndarray) -> dict[int, int]:
    """Colour code -> number of frames it appears in."""
    out: dict[int, int] = {}
    codes = _codes(frames).reshape(len(frames), -1)
    per_frame = np.concatenate([np.unique(c) for c in codes]) if len(codes) else np.zeros(0, np.int64)
    values, counts = np.unique(per_frame, return_counts=True)
    out.update(zip(values.tolist(), counts.tolist()))
    return out


def distinctive_colour(
    frames_with: np.ndarray, frames_without: np.ndarray, min_share: float = 0.5
) -> np.ndarray:
    """The exact colour ``uint8 [3]`` whose share of frames it appears in differs most between
    ``frames_with`` (where the object is known to be) and ``frames_without`` (where it is not).

    Raises:
        ValueError: a set of frames is empty, or no colour appears in at least ``min_share`` of
            ``frames_with`` more often than in ``frames_without``.
    """
    fw, fo = _frames(frames_with, "frames_with"), _frames(frames_without, "frames_without")
    if not len(fw) or not len(fo):
        raise ValueError(f"need frames with and without the object, got {len(fw)} and {len(fo)}")
    with_, without = _presence(fw), _presence(fo)
    scores = {
        c: n / len(fw) - without.get(c, 0) / len(fo) for c, n in with_.items() if n / len(fw) >= min_share
    }
    best = max(scores, key=lambda c: (scores[c], c), default=None)
    if best is None or scores[best] <= 0:
        raise ValueError(
            f"no colour appears in at least {min_share:.0%} of the {len(fw)} frames with the object "
            f"and less often in the {len(fo)} frames without it"
        )
    return np.array([(best >> 16) & 255, (best >> 8) & 255, best & 255], dtype=np.uint8)


def locate_colour(
    frames: np.ndarray, colour: np.ndarray, tolerance: int = 40, min_pixels: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Where ``colour`` is in each frame.

    A pixel matches when none of its channels differs from ``colour`` by more than
    ``tolerance``; a frame shows the object when at least ``min_pixels`` pixels match.

    Returns:
        ``centres [N, 2]`` (row, column: the mean of the matching pixels; NaN where not visible)
        and ``visible [N]`` bool.
    """
    f = _frames(frames)
    c = np.asarray(colour, dtype=np.int64).reshape(-1)
    if c.shape != (3,) or np.any((c < 0) | (c > 255)):
        raise ValueError(f"colour must be 3 values in [0, 255], got {colour!r}")
    if tolerance < 0 or min_pixels < 1:
        raise ValueError(f"need tolerance >= 0 and min_pixels >= 1, got {tolerance} and {min_pixels}")
    match = (np.abs(f.astype(np.int64) - c).max(-1) <= tolerance).astype(np.float64)  # [N, H, W]
    count = match.sum((1, 2))
    rows, cols = np.arange(f.shape[1], dtype=np.float64), np.arange(f.shape[2], dtype=np.float64)
    visible = count >= min_pixels
    with np.errstate(invalid="ignore", divide="ignore"):
        cy = (match.sum(2) * rows).sum(1) / count
        cx = (match.sum(1) * cols).sum(1) / count
    centres = np.stack([cy, cx], 1)
    centres[~visible] = np.nan
    return centres, visible


def mass_near(maps: np.ndarray, centres: np.ndarray, radius: float) -> np.ndarray:
    """``[N]``: the share of each map's mass (``|map|``) within ``radius`` pixels of its point
    (pixel centres at distance ``<= radius``); 0 for an all-zero map.

    Args:
        maps: ``[N, H, W]`` attribution maps (:func:`~prefrl.interpret.attribution.heatmap`).
        centres: ``[N, 2]`` points (row, column), e.g. from :func:`locate_colour`.
        radius: in pixels.
    """
    m = np.abs(np.asarray(maps, dtype=np.float64))
    p = np.asarray(centres, dtype=np.float64)
    if m.ndim != 3 or p.shape != (len(m), 2):
        raise ValueError(f"need maps [N, H, W] and centres [N, 2], got {m.shape} and {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("centres must be finite: keep only the frames where the object is visible")
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    ys = np.arange(m.shape[1], dtype=np.float64)[None, :, None]
    xs = np.arange(m.shape[2], dtype=np.float64)[None, None, :]
    near = (ys - p[:, 0, None, None]) ** 2 + (xs - p[:, 1, None, None]) ** 2 <= radius**2
    total = m.sum((1, 2))
    return np.where(total > 0, (m * near).sum((1, 2)) / np.where(total > 0, total, 1.0), 0.0)


def erase_colour(frames: np.ndarray, colour: np.ndarray, tolerance: int = 40, ring: int = 2) -> np.ndarray:
    """A copy of ``frames`` with the pixels of ``colour`` (and their neighbours) painted over by
    the median colour of the pixels around them: the object removed, for a counterfactual (what
    is the reward of this frame without the coin?).

    Pixels within ``tolerance`` of ``colour`` (see :func:`locate_colour`), grown by one pixel to
    take the blended edge, are replaced; the fill is the per-channel median of the pixels at
    most ``ring`` further out. Frames without the colour are returned unchanged.
    """
    f = _frames(frames)
    c = np.asarray(colour, dtype=np.int64).reshape(3)
    out = f.copy()
    match = np.abs(f.astype(np.int64) - c).max(-1) <= tolerance  # [N, H, W]
    hit = _grow(match, 1)
    around = _grow(hit, ring) & ~hit
    for i in np.flatnonzero(hit.any((1, 2))):
        fill = (
            np.median(f[i][around[i]], axis=0) if around[i].any() else np.median(f[i].reshape(-1, 3), axis=0)
        )
        out[i][hit[i]] = np.round(fill).astype(np.uint8)
    return out


def _grow(mask: np.ndarray, by: int) -> np.ndarray:
    """``[N, H, W]`` bool masks dilated by ``by`` pixels (a square neighbourhood)."""
    out = mask.copy()
    for _ in range(by):
        m = out.copy()
        m[:, 1:] |= out[:, :-1]
        m[:, :-1] |= out[:, 1:]
        m[:, :, 1:] |= out[:, :, :-1]
        m[:, :, :-1] |= out[:, :, 1:]
        m[:, 1:, 1:] |= out[:, :-1, :-1]
        m[:, :-1, :-1] |= out[:, 1:, 1:]
        m[:, 1:, :-1] |= out[:, :-1, 1:]
        m[:, :-1, 1:] |= out[:, 1:, :-1]
        out = m
    return out
