"""The lean per-step reward (:func:`prefrl.rewards.inference.reward_fn`): NumPy inference that
gives what the network gives, for every network it supports (the keypoint CNN and action heads
included), and falls back to torch otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
import torch

from prefrl.rewards.cnn import CNNReward, cnn_architecture
from prefrl.rewards.config import RewardNetConfig
from prefrl.rewards.inference import FastReward, TorchReward, reward_fn
from prefrl.rewards.mlp import MLPReward
from prefrl.rewards.nets import RewardNet
from prefrl.rewards.shaped import ShapedReward
from tests.narrow import present


def _lean_cases() -> list[tuple[str, Callable[[], RewardNet], tuple[int, ...], type]]:
    box = gym.spaces.Box(0.0, 1.0, (4,), np.float32)
    hwc = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    chw = gym.spaces.Box(0, 255, (3, 24, 24), np.uint8)
    odd = gym.spaces.Box(0, 255, (3, 23, 17), np.uint8)  # pooled 2x2 with a row and a column left over
    tiny = gym.spaces.Box(0, 255, (12, 12, 2), np.uint8)  # under 16 px: not pooled
    atari = gym.spaces.Box(0, 255, (84, 84, 1), np.uint8)
    d5 = gym.spaces.Discrete(5)
    d6 = gym.spaces.Discrete(6)
    cont = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def mlp_all() -> RewardNet:
        net = MLPReward(box, d5, hidden=(16, 8), ensemble_size=3, use_next_obs=True, use_done=True)
        present(net.norm).update(torch.rand(64, 4 + 5 + 4 + 1) * 3 - 1)
        return net

    kp: dict[str, Any] = cnn_architecture(hwc, features="spatial")
    two_convs = {"channels": (4, 6), "kernels": (3, 2), "strides": (1, 2), "hidden": (16, 8)}

    def keypoints(space: gym.spaces.Box, act: gym.spaces.Space, e: int, **kw: Any) -> Callable[[], RewardNet]:
        return lambda: CNNReward(space, act, ensemble_size=e, features="spatial", **kw)

    def cnn(space: gym.spaces.Box, act: gym.spaces.Space, e: int, **kw: Any) -> Callable[[], RewardNet]:
        return lambda: CNNReward(space, act, ensemble_size=e, **kw)

    return [
        ("mlp", lambda: MLPReward(box, d5), (4,), FastReward),
        ("mlp-ensemble-norm-next-done", mlp_all, (4,), FastReward),
        ("mlp-box-tanh", lambda: MLPReward(box, cont, ensemble_size=2, activation="tanh"), (4,), FastReward),
        ("mlp-tanh-output", lambda: MLPReward(box, cont, ensemble_size=3, output="tanh"), (4,), FastReward),
        ("mlp-heads", lambda: MLPReward(box, d5, ensemble_size=3, action_heads=True), (4,), FastReward),
        (
            "mlp-heads-tanh-next-done-start",
            lambda: MLPReward(
                box,
                gym.spaces.Discrete(5, start=-1),
                ensemble_size=3,
                action_heads=True,
                use_next_obs=True,
                use_done=True,
                output="tanh",
            ),
            (4,),
            FastReward,
        ),
        ("cnn-default", lambda: CNNReward(hwc, d5), (40, 40, 3), FastReward),
        (
            "cnn-tanh-output",
            lambda: CNNReward(hwc, d5, ensemble_size=2, output="tanh"),
            (40, 40, 3),
            FastReward,
        ),
        ("cnn-small", cnn(hwc, d5, 1, **cnn_architecture(hwc)), (40, 40, 3), FastReward),
        (
            "cnn-chw-ensemble-done",
            cnn(chw, d5, 3, use_done=True, channels=(4, 8), kernels=(4, 3), strides=(2, 2)),
            (3, 24, 24),
            FastReward,
        ),
        ("cnn-heads-atari", cnn(atari, d6, 3, action_heads=True), (84, 84, 1), FastReward),
        (
            "cnn-heads-tanh-done-chw",
            cnn(
                chw,
                d6,
                2,
                action_heads=True,
                use_done=True,
                output="tanh",
                channels=(4, 8),
                kernels=(4, 3),
                strides=(2, 2),
            ),
            (3, 24, 24),
            FastReward,
        ),
        ("cnn-keypoints", keypoints(hwc, d5, 3, **kp), (40, 40, 3), FastReward),
        ("cnn-keypoints-motion", keypoints(hwc, d5, 3, use_next_obs=True, **kp), (40, 40, 3), FastReward),
        (
            "cnn-keypoints-motion-tanh-done-box",
            keypoints(hwc, cont, 2, use_next_obs=True, use_done=True, output="tanh", **kp),
            (40, 40, 3),
            FastReward,
        ),
        (
            "cnn-keypoints-two-convs-odd-chw-motion",
            keypoints(odd, d5, 3, use_next_obs=True, **two_convs),
            (3, 23, 17),
            FastReward,
        ),
        (
            "cnn-keypoints-unpooled-tanh-act",
            keypoints(tiny, d5, 2, activation="tanh", **two_convs),
            (12, 12, 2),
            FastReward,
        ),
        ("cnn-keypoints-heads", keypoints(hwc, d5, 3, action_heads=True, **kp), (40, 40, 3), FastReward),
        (
            "cnn-keypoints-heads-tanh-done-chw",
            keypoints(odd, d5, 3, action_heads=True, use_done=True, output="tanh", **two_convs),
            (3, 23, 17),
            FastReward,
        ),
        ("cnn-stacked-frames-falls-back", cnn(hwc, d5, 1, use_next_obs=True), (40, 40, 3), TorchReward),
        ("shaped-falls-back", lambda: ShapedReward(MLPReward(box, d5)), (4,), TorchReward),
    ]


@pytest.mark.parametrize("case", _lean_cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("n", [1, 3, 16])
def test_lean_reward_matches_the_network(case: tuple, n: int) -> None:
    _, make, shape, kind = case
    torch.manual_seed(0)
    net = make().eval()
    rng = np.random.default_rng(n)
    obs: np.ndarray
    nxt: np.ndarray
    if len(shape) == 3:
        obs, nxt = (rng.integers(0, 256, (n, *shape)).astype(np.uint8) for _ in range(2))
    else:
        obs, nxt = (rng.normal(size=(n, *shape)).astype(np.float32) * 2 for _ in range(2))
    if isinstance(net.action_space, gym.spaces.Discrete):
        acts = rng.integers(0, 5, n)
    else:
        acts = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    dones = rng.random(n) < 0.5
    fn = reward_fn(net)
    assert isinstance(fn, kind)
    with torch.no_grad():
        t = [torch.from_numpy(np.asarray(v)) for v in (obs, acts, nxt, dones)]
        want = net.score(net.encode(*t)).mean(0).numpy()
    got = fn(obs, acts, nxt, dones)
    assert got.shape == (n,) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # the numbers follow new weights once rebuilt (what the wrapper does on each update)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1)
        want2 = net.score(net.encode(*t)).mean(0).numpy()
    assert not np.allclose(want2, want)
    np.testing.assert_allclose(reward_fn(net)(obs, acts, nxt, dones), want2, rtol=1e-4, atol=1e-5)


def _dot_frames(rng: np.random.Generator, n: int, shape: tuple[int, ...], chw: bool) -> np.ndarray:
    """``n + 1`` consecutive frames ``[n + 1, *shape]`` of a 3x3 dot moving one pixel a step on a
    dark, slightly noisy background (what keypoints are for: one small object)."""
    c, h, w = shape if chw else (shape[2], shape[0], shape[1])
    frames = rng.integers(0, 8, (n + 1, h, w, c)).astype(np.uint8)
    y, x = int(rng.integers(2, h - n - 4)), int(rng.integers(2, w - 5))
    for t in range(n + 1):
        frames[t, y + t : y + t + 3, x : x + 3] = 255
    return frames.transpose(0, 3, 1, 2).copy() if chw else frames


@pytest.mark.parametrize(
    ("shape", "n_acts", "spatial"),
    [
        ((40, 40, 3), 5, True),
        ((3, 40, 40), 5, True),
        ((84, 84, 1), 6, False),
        ((84, 84, 4), 6, False),
        ((4, 84, 84), 6, False),
    ],
)
@pytest.mark.parametrize("output", ["auto", "tanh"])
def test_the_default_image_nets_of_prefrl_train_get_the_numpy_path(
    shape: tuple[int, ...], n_acts: int, spatial: bool, output: Literal["auto", "tanh"]
) -> None:
    """``RewardNetConfig``'s default reward for a small image (a keypoint CNN reading s') and for
    an Atari-sized one (a flat CNN with action heads) run in NumPy and give the network's numbers,
    before and after their weights change, on noise and on a moving dot's consecutive frames."""
    obs_space = gym.spaces.Box(0, 255, shape, np.uint8)
    act_space = gym.spaces.Discrete(n_acts)
    torch.manual_seed(1)
    net = RewardNetConfig(output=output).resolved(obs_space, act_space).build(obs_space, act_space)
    assert isinstance(net, CNNReward) and net.ensemble_size == 3
    assert (net.spatial, net.motion, net.action_heads) == (spatial, spatial, not spatial)
    rng = np.random.default_rng(0)
    for step in range(2):
        if step:  # new weights (what an update brings), then rebuilt as the wrapper does
            with torch.no_grad():
                for p in net.parameters():
                    p.add_(0.2 * torch.randn_like(p))
        fast = FastReward.of(net)
        assert fast is not None
        for n in (1, 3, 16):
            frames = _dot_frames(rng, n, shape, net.chw)
            noise = rng.integers(0, 256, (2, n, *shape)).astype(np.uint8)
            for obs, nxt in ((frames[:-1], frames[1:]), (noise[0], noise[1])):
                acts, dones = rng.integers(0, n_acts, n), rng.random(n) < 0.3
                want = TorchReward(net)(obs, acts, nxt, dones)
                got = fast(obs, acts, nxt, dones)
                assert got.shape == (n,) and got.dtype == np.float64
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
