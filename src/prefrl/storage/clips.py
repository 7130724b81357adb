"""Clips: fragments as short videos people can watch, plus the arrays the reward model reads.

A clip is two files in the store's clip folder, both named by a random hex id:

- ``<name>.webm`` (VP8, which every Chromium plays), encoded once with imageio-ffmpeg;
- ``<name>.npz`` (``allow_pickle=False``): the fragment's step window, so that a trainer
  restarted later can rebuild the labelled fragments from the store alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from prefrl.data.arrays import obs_concat, obs_from_flat_dict, obs_map, obs_to_flat_dict
from prefrl.data.fragments import Fragments
from prefrl.rewards.spaces import channels_first

VIDEO_EXT = ".webm"
CLIP_FORMAT = "prefrl.clip"
CLIP_VERSION = 1
MIN_SIDE = 128
"""Tiny frames (e.g. 64x64 pixel observations) are scaled up to at least this many pixels."""


def clip_frames(fragments: Fragments, idx: np.ndarray) -> np.ndarray:
    """Frames ``[*I, L, H, W, 3]`` uint8 to show for fragments ``idx``.

    Rendered frames (``fragments.frames``) when the fragments carry them, otherwise the
    observations themselves when they are uint8 images (``[H, W, C]`` or ``[C, H, W]``,
    C = 1 or 3; other channel counts, e.g. stacked frames, show the last channel).
    """
    if fragments.table_frames is not None:
        return fragments.frames(idx)
    obs = fragments.table_obs
    if isinstance(obs, Mapping) or obs.dtype != np.uint8 or obs.ndim not in (3, 4):
        shape = "dict" if isinstance(obs, Mapping) else f"{obs.dtype} {obs.shape[1:]}"
        raise ValueError(
            f"cannot show these fragments to people: no rendered frames and observations are {shape}, "
            "not uint8 images; collect rollouts with render=True (env render_mode='rgb_array')"
        )
    imgs = obs[fragments.window(idx)]  # [*I, L, ...]
    if imgs.ndim == len(np.shape(idx)) + 3:  # [*I, L, H, W] grey
        imgs = imgs[..., None]
    if imgs.shape[-1] not in (1, 3) and channels_first(imgs.shape[-3:]):  # CHW (frame stacks too)
        imgs = np.moveaxis(imgs, -3, -1)
    if imgs.shape[-1] == 1:
        imgs = np.repeat(imgs, 3, axis=-1)
    elif imgs.shape[-1] != 3:
        imgs = np.repeat(imgs[..., -1:], 3, axis=-1)
    return np.ascontiguousarray(imgs)


def _even_frames(frames: np.ndarray) -> np.ndarray:
    """Scale tiny frames up (nearest) and crop to even sides, as yuv420p needs."""
    h, w = frames.shape[1:3]
    k = max(1, -(-MIN_SIDE // max(1, min(h, w))))
    if k > 1:
        frames = frames.repeat(k, axis=1).repeat(k, axis=2)
    h, w = frames.shape[1:3]
    return np.ascontiguousarray(frames[:, : h - h % 2, : w - w % 2])


def encode_video(frames: np.ndarray, path: Path, fps: float = 15.0) -> int:
    """Encode ``[T, H, W, 3]`` uint8 frames to a WebM (VP8) file; returns its size in bytes."""
    import imageio_ffmpeg

    from prefrl.storage.ffmpeg import die_with_parent_encoders

    die_with_parent_encoders()  # a killed trainer leaves no ffmpeg behind
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or len(frames) == 0:
        raise ValueError(f"frames must be [T, H, W, 3] uint8 with T >= 1, got {frames.dtype} {frames.shape}")
    frames = _even_frames(frames)
    h, w = frames.shape[1:3]
    tmp = path.with_name(path.stem + ".part" + path.suffix)
    writer = imageio_ffmpeg.write_frames(
        str(tmp),
        (w, h),
        fps=fps,
        codec="libvpx",
        pix_fmt_out="yuv420p",
        quality=None,
        bitrate="600k",
        macro_block_size=2,
        output_params=["-deadline", "realtime", "-cpu-used", "8"],
        ffmpeg_log_level="error",
    )
    writer.send(None)
    for f in frames:
        writer.send(f)
    writer.close()
    os.replace(tmp, path)
    return path.stat().st_size


def save_fragment(fragments: Fragments, i: int, path: Path) -> int:
    """Write fragment ``i``'s window (``L + 1`` observations, ``L`` actions…) to ``.npz``."""
    w = fragments.window(np.array([i]), extra=1)[0]  # [L+1]
    head = w[:-1]
    arrays: dict[str, Any] = dict(obs_to_flat_dict("obs", obs_map(lambda a: a[w], fragments.table_obs)))
    arrays["acts"] = fragments.table_acts[head]
    arrays["dones"] = fragments.table_dones[head]
    if fragments.table_rews is not None:
        arrays["rews"] = fragments.table_rews[head]
    meta = {
        "format": CLIP_FORMAT,
        "version": CLIP_VERSION,
        "length": fragments.length,
        "episode": int(fragments.episode[i]),
        "start": int(fragments.start[i]),
        "real": int(fragments.reals[i]),
    }
    arrays["__meta__"] = np.array(json.dumps(meta))
    tmp = path.with_name(path.stem + ".part.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
    return path.stat().st_size


def _pad(a: np.ndarray) -> np.ndarray:
    """Append one zero row (tables have ``L + 1`` rows; actions etc. only ``L``)."""
    return np.concatenate([a, np.zeros((1, *a.shape[1:]), dtype=a.dtype)])


def load_fragments(paths: list[Path]) -> Fragments:
    """Rebuild :class:`Fragments` (one per file, in order) from files of :func:`save_fragment`."""
    if not paths:
        raise ValueError("no clip files to load")
    obs: list[Any] = []
    acts, dones, rews, episode, start, real = [], [], [], [], [], []
    length = None
    for p in paths:
        try:
            with np.load(p, allow_pickle=False) as data:
                meta = json.loads(str(data["__meta__"]))
                if meta.get("format") != CLIP_FORMAT or meta.get("version") != CLIP_VERSION:
                    raise ValueError(f"not a prefrl clip file of version {CLIP_VERSION}: {meta}")
                d = {k: data[k] for k in data.files}
        except (OSError, KeyError, ValueError) as e:
            raise ValueError(f"{p}: cannot read clip arrays ({e})") from e
        if length is not None and meta["length"] != length:
            raise ValueError(f"{p}: fragment length {meta['length']} differs from {length}")
        length = int(meta["length"])
        obs.append(obs_from_flat_dict("obs", d))
        acts.append(_pad(d["acts"]))
        dones.append(_pad(d["dones"].astype(bool)))
        rews.append(_pad(d["rews"]) if "rews" in d else None)
        episode.append(meta["episode"])
        start.append(meta["start"])
        real.append(int(meta.get("real", length)))
    assert length is not None
    has_rews = all(r is not None for r in rews)
    return Fragments(
        obs_concat(obs),
        np.concatenate(acts),
        np.concatenate([r for r in rews if r is not None]) if has_rews else None,
        np.concatenate(dones),
        np.arange(len(paths), dtype=np.int64) * (length + 1),
        length,
        np.asarray(episode, dtype=np.int64),
        np.asarray(start, dtype=np.int64),
        None,
        None if all(r == length for r in real) else np.asarray(real, dtype=np.int64),
    )
