"""The lean per-step reward (:func:`prefrl.rewards.inference.reward_fn`): NumPy inference that
gives what the network gives, for every network it supports, and falls back to torch otherwise."""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest
import torch

from prefrl.rewards.cnn import CNNReward, cnn_architecture
from prefrl.rewards.inference import FastReward, TorchReward, reward_fn
from prefrl.rewards.mlp import MLPReward
from prefrl.rewards.nets import RewardNet
from prefrl.rewards.shaped import ShapedReward


def _lean_cases() -> list[tuple[str, Callable[[], RewardNet], tuple[int, ...], type]]:
    box = gym.spaces.Box(0.0, 1.0, (4,), np.float32)
    hwc = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    chw = gym.spaces.Box(0, 255, (3, 24, 24), np.uint8)
    d5 = gym.spaces.Discrete(5)
    cont = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def mlp_all() -> RewardNet:
        net = MLPReward(box, d5, hidden=(16, 8), ensemble_size=3, use_next_obs=True, use_done=True)
        net.norm.update(torch.rand(64, 4 + 5 + 4 + 1) * 3 - 1)  # type: ignore[union-attr]
        return net

    return [
        ("mlp", lambda: MLPReward(box, d5), (4,), FastReward),
        ("mlp-ensemble-norm-next-done", mlp_all, (4,), FastReward),
        ("mlp-box-tanh", lambda: MLPReward(box, cont, ensemble_size=2, activation="tanh"), (4,), FastReward),
        ("mlp-tanh-output", lambda: MLPReward(box, cont, ensemble_size=3, output="tanh"), (4,), FastReward),
        ("cnn-default", lambda: CNNReward(hwc, d5), (40, 40, 3), FastReward),
        ("cnn-tanh-output", lambda: CNNReward(hwc, d5, ensemble_size=2, output="tanh"), (40, 40, 3),
         FastReward),
        ("cnn-small", lambda: CNNReward(hwc, d5, **cnn_architecture(hwc)), (40, 40, 3), FastReward),
        ("cnn-chw-ensemble-done", lambda: CNNReward(chw, d5, ensemble_size=3, use_done=True, channels=(4, 8),
                                                    kernels=(4, 3), strides=(2, 2)), (3, 24, 24), FastReward),
        ("shaped-falls-back", lambda: ShapedReward(MLPReward(box, d5)), (4,), TorchReward),
    ]  # fmt: skip


@pytest.mark.parametrize("case", _lean_cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("n", [1, 7])
def test_lean_reward_matches_the_network(case: tuple, n: int) -> None:
    _, make, shape, kind = case
    torch.manual_seed(0)
    net = make().eval()
    rng = np.random.default_rng(n)
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
