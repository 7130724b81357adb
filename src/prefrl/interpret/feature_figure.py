"""The feature dictionary as a figure and a JSON file (``prefrl interpret features``, the run page).

:func:`explain_features` takes a CNN reward and a trajectory batch, builds the dictionary
(:mod:`prefrl.interpret.features`) on at most ``max_frames`` of its frames and writes

- ``features.png``: a row per feature: its top frames with the feature's map overlaid, the
  receptive-field patch of the strongest, the synthesised input that excites it most, and
  its share of the reward (mean contribution per frame, and share of all contributions);
- ``features.json``: the components, explained variance, top frames (rows of the batch) and
  contributions (:func:`prefrl.interpret.features.summary`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.attribution import display_frames, encode_images, overlay
from prefrl.interpret.features import (
    FeatureDictionary,
    RewardAttribution,
    feature_dictionary,
    feature_maps,
    feature_patches,
    feature_visualisation,
    reward_attribution,
    seen_images,
    summary,
    top_frames,
)
from prefrl.interpret.plots import new_figure, save_figure
from prefrl.rewards.nets import RewardNet
from prefrl.storage.checkpoint import dumps


@dataclass(frozen=True)
class FeatureOptions:
    """How big a feature dictionary to build and show."""

    n_features: int = 6
    layer: int = -1
    member: int = 0
    max_frames: int = 2000
    top: int = 4
    synth_steps: int = 200
    ig_steps: int = 16
    seed: int = 0


def frame_rows(batch: TrajectoryBatch, max_frames: int, seed: int) -> np.ndarray:
    """At most ``max_frames`` transition rows of ``batch`` (a seeded sample, in order)."""
    rows = batch.step_rows
    if len(rows) == 0:
        raise ValueError("the trajectory batch has no transitions")
    if len(rows) > max_frames:
        rows = np.sort(np.random.default_rng(seed).choice(rows, max_frames, replace=False))
    return rows


def plot_features(
    net: RewardNet,
    images: Any,
    result: FeatureDictionary,
    attribution: RewardAttribution,
    frames: np.ndarray,
    patches: np.ndarray,
    synthesised: np.ndarray,
    path: str | Path,
) -> Path:
    """One row per feature: top frames with its map overlaid, its patch, its synthesised input,
    its share of the reward."""
    shown = display_frames(seen_images(net, torch.as_tensor(images)))  # [N, H, W, 3]
    k_feat, k_top = frames.shape
    maps = feature_maps(result, frames, shown.shape[1:3])
    x = torch.as_tensor(synthesised)
    synth = display_frames(seen_images(net, x if getattr(net, "chw", True) else x.permute(0, 3, 1, 2)))
    shares = attribution.shares()
    cols = k_top + 3
    fig = new_figure(1.9 * cols, 2.0 * k_feat + 0.4)
    for f in range(k_feat):
        for j in range(k_top):
            ax = fig.add_subplot(k_feat, cols, f * cols + j + 1)
            ax.imshow(overlay(shown[frames[f, j]], maps[f, j], alpha=0.5), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(f"feature {f}", fontsize=9)
            if f == 0:
                ax.set_title(f"top frame {j + 1}", fontsize=8)
        ax = fig.add_subplot(k_feat, cols, f * cols + k_top + 1)
        ax.imshow(display_frames(patches[f, :1])[0], interpolation="nearest")
        ax.axis("off")
        if f == 0:
            ax.set_title("patch", fontsize=8)
        ax = fig.add_subplot(k_feat, cols, f * cols + k_top + 2)
        ax.imshow(synth[f], interpolation="nearest")
        ax.axis("off")
        if f == 0:
            ax.set_title("synthesised", fontsize=8)
        ax = fig.add_subplot(k_feat, cols, f * cols + k_top + 3)
        mean = float(attribution.contributions[:, f].mean())
        ax.barh([0], [shares[f]], color="tab:green" if mean >= 0 else "tab:red")
        ax.set_xlim(0, 1)
        ax.set_yticks([])
        ax.tick_params(labelsize=7)
        ax.set_title(f"{shares[f]:.0%} of reward\nmean {mean:+.3g}/frame", fontsize=8)
    fig.suptitle(
        f"feature dictionary: layer {result.layer}, {k_feat} NMF features of {len(shown)} frames, "
        f"explained variance {result.explained_variance:.2f}",
        fontsize=9,
    )
    return save_figure(fig, path)


def explain_features(
    net: RewardNet, batch: TrajectoryBatch, out: Path, opts: FeatureOptions, progress: bool = False
) -> dict[str, Any]:
    """Build the dictionary on ``batch``'s frames; write ``features.png`` and ``features.json``
    under ``out``; return the summary with their paths."""
    t0 = time.perf_counter()
    rows = frame_rows(batch, opts.max_frames, opts.seed)
    inputs = encode_images(net, batch.obs[rows], batch.acts[rows], batch.obs[rows + 1], batch.dones[rows])
    result = feature_dictionary(
        net, inputs, opts.layer, opts.n_features, opts.member, opts.seed, progress=progress
    )
    attribution = reward_attribution(net, inputs, result, opts.ig_steps, progress=progress)
    frames = top_frames(result, opts.top)
    patches = feature_patches(net, inputs, result, frames)
    synth, values = [], []
    for f in range(result.n_features):
        img, act = feature_visualisation(net, result, f, 1, opts.synth_steps, seed=opts.seed)
        synth.append(img[0])
        values.append(float(act[0]))
    out.mkdir(parents=True, exist_ok=True)
    png = plot_features(
        net, inputs.images, result, attribution, frames, patches, np.stack(synth), out / "features.png"
    )
    info = summary(result, attribution, frames, rows)
    for f, v in enumerate(values):
        info["features"][f]["synthesised_activation"] = v
    info["wall_s"] = time.perf_counter() - t0
    (out / "features.json").write_text(dumps(info, indent=2))
    return {**info, "png": str(png), "json": str(out / "features.json")}
