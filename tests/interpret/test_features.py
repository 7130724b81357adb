"""The feature dictionary (NMF of a CNN reward's activations) on a small moving-dot reward."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

import prefrl  # noqa: F401  (registers prefrl/MovingDot-v0)
from prefrl.agents.rollout import collect_episodes
from prefrl.cli.interpret import main
from prefrl.data import TrajectoryBatch
from prefrl.interpret.attribution import ImageInputs, encode_images
from prefrl.interpret.features import (
    FeatureDictionary,
    activations,
    feature_dictionary,
    feature_objective,
    feature_patches,
    feature_visualisation,
    receptive_field,
    reward_attribution,
    top_frames,
)
from prefrl.interpret.supervised import SupervisedConfig, fit_supervised
from prefrl.rewards import CNNReward, MLPReward, save_reward_net
from prefrl.rewards.cnn import cnn_architecture


@pytest.fixture(scope="module")
def dot() -> tuple[CNNReward, TrajectoryBatch, ImageInputs]:
    """A CNN reward of the moving dot's progress (s and s' stacked), fitted to the true reward."""
    env = gym.make("prefrl/MovingDot-v0", size=24, max_steps=50)
    batch = collect_episodes(env, n_episodes=20, seed=0)
    torch.manual_seed(0)
    arch: dict[str, Any] = cnn_architecture(env.observation_space)
    net = CNNReward(env.observation_space, env.action_space, use_next_obs=True, **arch)
    m = fit_supervised(net, batch, SupervisedConfig(epochs=15, lr=3e-3, batch_size=64, val_fraction=0.1))
    assert m["val_pearson"] > 0.6  # it learned something to explain
    rows = batch.step_rows[:400]
    inputs = encode_images(net, batch.obs[rows], batch.acts[rows], batch.obs[rows + 1], batch.dones[rows])
    return net.eval(), batch, inputs


@pytest.fixture(scope="module")
def fd(dot) -> FeatureDictionary:
    net, _, inputs = dot
    return feature_dictionary(net, inputs, layer=-1, n_features=6)


def test_nmf_is_non_negative_and_reconstructs_the_activations(dot, fd: FeatureDictionary) -> None:
    net, _, inputs = dot
    a = activations(net, inputs, layer=1).numpy()  # [N, 16, h, w], post-ReLU
    assert fd.components.shape == (6, 16) and fd.coefficients.shape == (len(inputs), 6, *a.shape[2:])
    assert (fd.components >= 0).all() and (fd.coefficients >= 0).all() and (fd.floor == 0).all()
    np.testing.assert_allclose(np.linalg.norm(fd.components, axis=1), 1.0, rtol=1e-5)
    rec = np.einsum("nkhw,kc->nchw", fd.coefficients, fd.components)
    ev = 1 - ((a - rec) ** 2).sum() / ((a - a.mean((0, 2, 3), keepdims=True)) ** 2).sum()
    assert ev > 0.6, f"6 of 16 channels' NMF explains only {ev:.2f} of the variance"
    assert fd.explained_variance == pytest.approx(ev, abs=0.02)
    one = feature_dictionary(net, inputs, layer=-1, n_features=1)
    assert one.explained_variance < fd.explained_variance  # more features, better reconstruction


def test_top_frames_have_the_highest_coefficients(fd: FeatureDictionary) -> None:
    top = top_frames(fd, 5)
    s = fd.coefficients.max((2, 3))  # [N, K]
    assert top.shape == (6, 5)
    for k in range(6):
        rest = np.setdiff1d(np.arange(len(s)), top[k])
        assert s[top[k], k].min() >= s[rest, k].max()
        assert np.all(np.diff(s[top[k], k]) <= 0)


def test_patches_are_the_receptive_field_around_the_strongest_position(dot, fd: FeatureDictionary) -> None:
    net, _, inputs = dot
    side, jump = receptive_field(net, 1)
    assert (side, jump) == (12, 8)  # kernels 4, 3; strides 4, 2
    frames = top_frames(fd, 2)
    patches = feature_patches(net, inputs, fd, frames)
    assert patches.shape == (6, 2, 6, 12, 12) and patches.dtype == np.uint8
    i, k = int(frames[0, 0]), 0
    y, x = np.unravel_index(int(np.argmax(fd.coefficients[i, k])), fd.coefficients.shape[2:])
    y0, x0 = min(int(y) * 8, 24 - 12), min(int(x) * 8, 24 - 12)
    np.testing.assert_array_equal(patches[0, 0], inputs.images[i, :, y0 : y0 + 12, x0 : x0 + 12].numpy())


def test_visualisation_excites_its_feature_more_than_random_inputs(dot, fd: FeatureDictionary) -> None:
    net, *_ = dot
    for k in (0, 1):
        img, value = feature_visualisation(net, fd, k, n=2, steps=80)
        assert img.shape == (2, 24, 24, 6) and img.dtype == np.uint8
        obj = feature_objective(net, fd, k, 8)
        rand = torch.randint(0, 256, (8, 6, 24, 24), generator=torch.Generator().manual_seed(k)).float()
        with torch.no_grad():
            r_rand = obj(rand).numpy()
        assert value.min() > r_rand.max(), f"feature {k}: synthesised {value}, random {r_rand.max():.3f}"


def test_attribution_shares_add_up_to_the_reward(dot, fd: FeatureDictionary) -> None:
    net, _, inputs = dot
    att = reward_attribution(net, inputs, fd, steps=32)
    with torch.no_grad():
        r = net.score({k: v for k, v in inputs.feats.items()})[0].numpy()
    np.testing.assert_allclose(att.reward, r, atol=1e-5)
    total = att.baseline + att.contributions.sum(1) + att.residual
    scale = float(np.ptp(r))
    np.testing.assert_allclose(total, r, atol=0.02 * scale)  # integrated gradients are complete
    np.testing.assert_allclose(att.spatial.sum((2, 3)), att.contributions, rtol=1e-4, atol=1e-6)
    assert att.shares().sum() == pytest.approx(1.0)
    # the features carry the reward's variation: what the reconstruction misses is small beside it
    assert np.std(att.residual) < 0.5 * np.std(r)


@pytest.mark.parametrize("next_obs", [False, True])
def test_keypoint_cnn_last_layer_is_made_non_negative(next_obs: bool) -> None:
    """Keypoint CNNs (the moving dot's default reward reads s and s' with them)."""
    env = gym.make("prefrl/MovingDot-v0", size=16, max_steps=20)
    batch = collect_episodes(env, n_episodes=3, seed=1)
    torch.manual_seed(1)
    net = CNNReward(
        env.observation_space, env.action_space, ensemble_size=2, features="spatial", use_next_obs=next_obs,
        channels=(8,), kernels=(1,), strides=(1,),
    )  # fmt: skip
    rows = batch.step_rows
    inputs = encode_images(net, batch.obs[rows], batch.acts[rows], batch.obs[rows + 1])
    fd = feature_dictionary(net, inputs, n_features=3, member=1)
    assert (fd.floor <= 0).all() and (fd.coefficients >= 0).all() and fd.coefficients.shape[2:] == (8, 8)
    att = reward_attribution(net, inputs, fd, steps=512)
    with torch.no_grad():
        np.testing.assert_allclose(att.reward, net.score(dict(inputs.feats))[1].numpy(), atol=1e-5)
    total = att.baseline + att.contributions.sum(1) + att.residual
    # complete up to the Riemann error, larger here: standardised maps of a nearly silenced layer are steep
    np.testing.assert_allclose(total, att.reward, atol=0.05 * max(float(np.ptp(att.reward)), 1e-3))
    assert np.abs(att.contributions).sum() > 0  # the features of s move the reward
    img, _ = feature_visualisation(net, fd, 0, n=1, steps=5)
    assert img.shape == (1, 16, 16, 6 if next_obs else 3)


def test_cli_writes_the_figure_and_json(dot, tmp_path: Path, png_ok: Callable[..., np.ndarray]) -> None:
    net, batch, _ = dot
    save_reward_net(net, tmp_path / "reward.safetensors")
    batch.save(tmp_path / "traj.npz")
    out = tmp_path / "out"
    argv = ["features", "--reward", str(tmp_path / "reward.safetensors"), "--trajectories"]
    argv += [str(tmp_path / "traj.npz"), "--features", "3", "--frames", "300", "--steps", "20"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    png_ok(out / "features.png")
    info = json.loads((out / "features.json").read_text())
    assert len(info["features"]) == 3 and info["frames"] == 300 and info["layer"] == 1
    assert sum(f["share"] for f in info["features"]) == pytest.approx(1.0, abs=1e-6)
    for f in info["features"]:  # top frames are rows of the trajectory file
        assert all(0 <= r < len(batch.acts) for r in f["top_frames"])


def test_bad_layer_and_non_cnn_give_one_line(dot, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    net, batch, _ = dot
    save_reward_net(net, tmp_path / "reward.safetensors")
    batch.save(tmp_path / "traj.npz")
    argv = ["features", "--reward", str(tmp_path / "reward.safetensors"), "--trajectories"]
    assert main([*argv, str(tmp_path / "traj.npz"), "--layer", "5", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--layer 5 out of range" in err and "2 convolution" in err
    assert main([*argv, str(tmp_path / "traj.npz"), "--features", "40", "--out", str(tmp_path)]) == 2
    assert "--features 40 out of range: layer 1 has 16 channels" in capsys.readouterr().err
    mlp = MLPReward(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2))
    with pytest.raises(ValueError, match="needs a CNN reward"):
        feature_dictionary(mlp, ImageInputs({"img": torch.zeros(2, 3, 8, 8, dtype=torch.uint8)}))


def test_run_page_section_shows_the_dictionary_of_a_cnn_reward(dot, tmp_path: Path) -> None:
    from prefrl.data.dataset import PreferenceDataset
    from prefrl.data.fragments import sample_fragments
    from prefrl.interpret.run_page import features_section

    net, batch, _ = dot
    frags, _ = sample_fragments(batch, 20, 10, np.random.default_rng(0))
    ds = PreferenceDataset()
    ds.add(frags, np.arange(20).reshape(10, 2), np.ones(10, np.float32))
    ds.save(tmp_path / "preferences.npz")
    html = features_section(tmp_path, net, tmp_path / "report")
    assert "<section id='features'>" in html and "data:image/png;base64," in html
    assert "prefrl interpret features --run" in html
    info = json.loads((tmp_path / "report" / "features.json").read_text())
    assert len(info["features"]) == 4 and info["frames"] == 200  # 20 clips of 10 steps
    mlp = MLPReward(gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Discrete(2))
    assert features_section(tmp_path, mlp, tmp_path / "report") == ""
