"""REED on images: a CNN reward built with ``self_predictive`` learns to predict the next frame's
features from the moving dot's real transitions, trains only its convolutions and self-predictive
MLPs, keeps the preference fit working on the same parameters, saves and loads, and the
combinations it cannot serve are clear errors."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import prefrl.envs  # noqa: F401  (registers prefrl/MovingDot-v0)
from prefrl.preference.self_predictive import SelfPredictiveConfig, SelfPredictiveTrainer, has_self_predictive
from prefrl.rewards.cnn import CNNOptions, CNNReward
from prefrl.rewards.config import RewardNetConfig
from prefrl.rewards.io import load_reward_net, save_reward_net


def _dot_transitions(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` random-action transitions of the moving dot: images ``[n, 40, 40, 3]``, actions ``[n]``."""
    env = gym.make("prefrl/MovingDot-v0")
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    assert isinstance(env.action_space, gym.spaces.Discrete)
    xs, nxt = [], []
    acts: list[int] = []
    while len(acts) < n:
        a = int(rng.integers(env.action_space.n))
        o2, _, term, trunc, _ = env.step(a)
        xs.append(obs)
        acts.append(a)
        nxt.append(o2)
        obs = env.reset()[0] if term or trunc else o2
    env.close()
    return np.stack(xs), np.asarray(acts), np.stack(nxt)


def _net(**options: object) -> CNNReward:
    torch.manual_seed(0)
    cfg = RewardNetConfig(kind="reed", ensemble_size=3, reed_latent_dim=32)
    env = gym.make("prefrl/MovingDot-v0")
    obs_space, act_space = env.observation_space, env.action_space
    net = cfg.resolved(obs_space, act_space).build(obs_space, act_space)
    assert isinstance(net, CNNReward)
    if options:
        net = CNNReward(obs_space, act_space, ensemble_size=3, options=net.options, **options)
    return net


def test_loss_falls_on_the_dots_transitions_and_only_the_image_path_moves() -> None:
    net = _net()
    assert has_self_predictive(net) and net.motion  # the dot's default: keypoints and their displacement
    assert net.image_shape == (3, 40, 40)  # what the per-step fast path reads
    obs, acts, nxt = _dot_transitions(600)
    before = {k: v.clone() for k, v in net.named_parameters()}
    tr = SelfPredictiveTrainer(net, SelfPredictiveConfig(steps=60, batch_size=64))
    m = tr.train(obs, acts, nxt)
    assert m["spr_loss"] < m["spr_loss_before"] - 0.1, m
    assert m["spr_latent_std"] > 1e-2, m  # the keypoints did not collapse to one place
    moved = {k for k, v in net.named_parameters() if not torch.equal(v, before[k])}
    assert any(k.startswith("conv") for k in moved) and "sharpness" in moved
    assert not any(k.startswith(("head", "absorbing")) for k in moved)  # the reward is not its part
    for p in tr.params:
        assert p.grad is None or not p.grad.any()


def test_save_load_round_trip_and_per_member_rows(tmp_path: Path) -> None:
    net = _net()
    obs, acts, nxt = _dot_transitions(40, seed=1)
    mean, _ = net.predict(obs, acts, nxt)
    path = save_reward_net(net, tmp_path / "reward.safetensors")
    back = load_reward_net(path)
    assert isinstance(back, CNNReward) and back.has_self_predictive
    assert back.options == net.options
    assert np.allclose(back.predict(obs, acts, nxt)[0], mean)
    # per-member inputs: each member its own rows gives the shared-input loss when rows agree
    o = torch.as_tensor(obs[:8])
    a = torch.as_tensor(acts[:8])
    n2 = torch.as_tensor(nxt[:8])
    shared = net.self_predictive_loss(o, a, n2)
    per = net.self_predictive_loss(
        o.expand(3, *o.shape), a.expand(3, 8), n2.expand(3, *n2.shape), per_member=True
    )
    assert shared.shape == (3,) and torch.allclose(shared, per, atol=1e-5)


def test_what_it_cannot_serve_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="one image at a time"):
        CNNOptions(features="flat", use_next_obs=True, self_predictive=True)
    plain = _net(self_predictive=False)
    assert not has_self_predictive(plain)
    with pytest.raises(TypeError, match="built with self_predictive"):
        SelfPredictiveTrainer(plain)
