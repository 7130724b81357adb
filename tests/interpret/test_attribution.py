"""Pixel attribution, extremes and synthesis on a CNN reward that looks at one corner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from prefrl.data import Trajectory, TrajectoryBatch
from prefrl.interpret.attribution import (
    encode_images,
    extremes,
    gradient_saliency,
    heatmap,
    integrated_gradients,
    occlusion,
    plot_saliency,
    score_images,
    synthesize,
)
from prefrl.interpret.evaluation import predicted_rewards
from prefrl.interpret.supervised import SupervisedConfig, fit_supervised
from prefrl.rewards import CNNReward, MLPReward

OBS = spaces.Box(0, 255, (16, 16, 3), np.uint8)


def small_cnn(seed: int = 0) -> CNNReward:
    torch.manual_seed(seed)
    return CNNReward(OBS, spaces.Discrete(2), channels=(8, 8), kernels=(3, 3), strides=(1, 2), hidden=(32,))


def corner_batch(t: int = 600, seed: int = 0) -> TrajectoryBatch:
    """Dim noisy images with a red top-left 6x6 patch of random brightness (the true reward,
    in [0, 1]) and a distracting white 4x4 square of random brightness elsewhere."""
    rng = np.random.default_rng(seed)
    obs = rng.integers(0, 40, (t + 1, 16, 16, 3), dtype=np.uint8)
    v = rng.integers(0, 256, t + 1)
    obs[:, :6, :6, 0] = v[:, None, None]
    for i, (y, x, w) in enumerate(
        zip(rng.integers(7, 12, t + 1), rng.integers(0, 12, t + 1), rng.integers(0, 256, t + 1))
    ):
        obs[i, y : y + 4, x : x + 4] = w
    rews = (v[:-1] / 255.0).astype(np.float32)
    return TrajectoryBatch.from_trajectories([Trajectory(obs, rng.integers(0, 2, t), rews)])


@pytest.fixture(scope="module")
def corner_net() -> tuple[CNNReward, TrajectoryBatch]:
    batch = corner_batch()
    net = small_cnn()
    m = fit_supervised(net, batch, SupervisedConfig(epochs=40, lr=3e-3, batch_size=64, val_fraction=0.1))
    assert m["val_pearson"] > 0.8
    return net, batch


def test_integrated_gradients_are_complete() -> None:
    net = small_cnn(1)
    b = corner_batch(8)
    inputs = encode_images(net, b.obs[:4], b.acts[:4])
    attr, r = integrated_gradients(net, inputs, baseline="black", steps=64)
    assert attr.shape == (4, 3, 16, 16)
    with torch.no_grad():
        r0 = score_images(net, inputs, torch.zeros(4, 3, 16, 16), torch.arange(4))
    np.testing.assert_allclose(attr.sum((1, 2, 3)).numpy(), (r - r0).numpy(), rtol=0.05, atol=1e-3)


def test_full_image_occlusion_is_the_reward_drop_to_the_fill() -> None:
    net = small_cnn(2)
    b = corner_batch(8)
    inputs = encode_images(net, b.obs[:3], b.acts[:3])
    maps, r = occlusion(net, inputs, patch=16, stride=16, fill=128.0)
    with torch.no_grad():
        r_fill = score_images(net, inputs, torch.full((3, 3, 16, 16), 128.0), torch.arange(3))
    np.testing.assert_allclose(maps.numpy(), (r - r_fill)[:, None, None].expand(3, 16, 16).numpy(), atol=1e-5)


def test_saliency_points_at_the_rewarded_corner(corner_net, tmp_path: Path) -> None:
    net, batch = corner_net
    inputs = encode_images(net, batch.obs[:16], batch.acts[:16])
    grads, r = gradient_saliency(net, inputs)
    ig, _ = integrated_gradients(net, inputs, baseline="mean", steps=16)
    occ, _ = occlusion(net, inputs, patch=4, stride=2)
    maps = {"gradient": heatmap(grads), "integrated gradients": heatmap(ig), "occlusion": heatmap(occ)}
    for name, m in maps.items():
        share = m[:, :6, :6].sum() / m.sum()  # the corner is 14% of the image
        assert share > 0.4, f"{name}: only {share:.2f} of the attribution is on the rewarded corner"
    png = plot_saliency(inputs.images, maps, r.numpy(), tmp_path / "sal.png", max_rows=3)
    assert png.stat().st_size > 10_000


def test_extremes_and_synthesis(corner_net) -> None:
    net, batch = corner_net
    ex = extremes(net, batch, k=5)
    r = predicted_rewards(net, batch)
    assert np.all(np.diff(ex["top_rewards"]) <= 0) and np.all(np.diff(ex["bottom_rewards"]) >= 0)
    assert (
        ex["top_rewards"][0] == r[batch.step_rows].max()
        and ex["bottom_rewards"][0] == r[batch.step_rows].min()
    )
    assert batch.rews[ex["top_rows"]].mean() > batch.rews[ex["bottom_rows"]].mean() + 0.1
    hi, r_hi = synthesize(net, action=0, maximize=True, n=2, steps=120)
    lo, r_lo = synthesize(net, action=0, maximize=False, n=2, steps=120)
    assert hi.shape == (2, 16, 16, 3) and hi.dtype == np.uint8
    assert r_hi.min() > np.median(r) > r_lo.max()
    assert hi[:, :6, :6, 0].mean() > lo[:, :6, :6, 0].mean() + 50  # bright red corner vs dark one


def test_attribution_needs_an_image_reward() -> None:
    net = MLPReward(spaces.Box(-1, 1, (3,), np.float32), spaces.Discrete(2))
    with pytest.raises(ValueError, match="images"):
        encode_images(net, np.zeros((2, 3), np.float32), np.zeros(2, np.int64))
