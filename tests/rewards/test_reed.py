"""REED's reward network: shapes, per-member passes, save/load, the config switch, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.config import RewardNetConfig
from prefrl.rewards.io import build_reward_net, load_reward_net, save_reward_net
from prefrl.rewards.reed import ReedReward

BOX3, BOX1 = spaces.Box(-1, 1, (3,)), spaces.Box(-2, 2, (1,))


@pytest.mark.parametrize(
    ("act_space", "heads"), [(BOX1, False), (spaces.Discrete(4), False), (spaces.Discrete(4), True)]
)
def test_rewards_are_ensemble_first_and_per_member_features_agree(
    act_space: spaces.Space, heads: bool
) -> None:
    torch.manual_seed(0)
    net = ReedReward(
        BOX3, act_space, hidden=(16,), ensemble_size=3, use_done=True, action_heads=heads, latent_dim=8
    )
    obs, nxt = torch.randn(5, 2, 7, 3), torch.randn(5, 2, 7, 3)
    acts = torch.as_tensor(
        np.stack([[[act_space.sample() for _ in range(7)] for _ in range(2)] for _ in range(5)])
    )
    dones = torch.zeros(5, 2, 7)
    r = net(obs, acts, nxt, dones)
    assert r.shape == (3, 5, 2, 7)
    feats = net.encode(obs, acts, nxt, dones)
    per = {k: v.unsqueeze(0).expand(3, *v.shape) for k, v in feats.items()}
    torch.testing.assert_close(net.score(per, per_member=True), r)  # each member its own rows
    flat = net(obs.reshape(-1, 3), acts.reshape(70, *acts.shape[3:]), nxt.reshape(-1, 3), dones.reshape(-1))
    torch.testing.assert_close(flat.reshape(3, 5, 2, 7), r)


def test_self_predictive_loss_is_per_member_and_trains_only_its_modules() -> None:
    torch.manual_seed(0)
    net = ReedReward(BOX3, BOX1, hidden=(16,), ensemble_size=3, latent_dim=8)
    obs, acts, nxt = torch.randn(32, 3), torch.rand(32, 1) * 4 - 2, torch.randn(32, 3)
    loss = net.self_predictive_loss(obs, acts, nxt)  # [E]
    assert loss.shape == (3,) and (loss.abs() <= 1 + 1e-6).all()
    s_obs, s_acts, s_nxt = (x.unsqueeze(0).expand(3, *x.shape) for x in (obs, acts, nxt))
    torch.testing.assert_close(net.self_predictive_loss(s_obs, s_acts, s_nxt, per_member=True), loss)
    loss.sum().backward()
    for name, p in net.named_parameters():
        trained = p.grad is not None and bool(p.grad.abs().sum() > 0)
        assert trained == name.startswith(("encoder", "dynamics", "prediction", "projection.")), name
    ids = {id(p) for p in net.self_predictive_parameters()}
    assert ids == {id(p) for n, p in net.named_parameters() if not n.startswith(("head", "absorbing"))}


def test_the_target_branch_is_held_fixed() -> None:
    """Stop-gradient: the loss reaches the encoder through phi(s), never through phi(s')."""
    torch.manual_seed(0)
    net = ReedReward(BOX3, BOX1, hidden=(16,), latent_dim=8)
    obs = torch.randn(16, 3, requires_grad=True)
    nxt = torch.randn(16, 3, requires_grad=True)
    net.self_predictive_loss(obs, torch.zeros(16, 1), nxt).sum().backward()
    assert obs.grad is not None and nxt.grad is None


def test_save_load_round_trip_equals(tmp_path: Path) -> None:
    torch.manual_seed(0)
    space = spaces.Dict({"pos": BOX3, "mode": spaces.Discrete(3)})
    net = ReedReward(space, spaces.Discrete(2), hidden=(8, 8), ensemble_size=2, output="tanh", latent_dim=4)
    obs = {"pos": torch.randn(20, 3), "mode": torch.randint(0, 3, (20,))}
    net.update_stats(obs, None, None, None)
    acts = torch.randint(0, 2, (20,))
    path = save_reward_net(net, tmp_path / "r.safetensors")
    back = load_reward_net(path)
    assert isinstance(back, ReedReward) and back.config == net.config
    torch.testing.assert_close(back(obs, acts, obs, torch.zeros(20)), net(obs, acts, obs, torch.zeros(20)))
    for (k, a), (_, b) in zip(net.state_dict().items(), back.state_dict().items()):
        torch.testing.assert_close(a, b, msg=k)
    assert type(build_reward_net(net.config)) is ReedReward


def test_config_switch_builds_reed_and_reads_the_next_state() -> None:
    cfg = RewardNetConfig(kind="reed", hidden=[16], ensemble_size=2, reed_latent_dim=12)
    resolved = cfg.resolved(BOX3, BOX1)
    assert resolved.use_next_obs is True and resolved.action_heads is False
    net = resolved.build(BOX3, BOX1)
    assert isinstance(net, ReedReward) and net.latent_dim == 12 and net.ensemble_size == 2
    assert net.use == (True, True, True, False)
    assert RewardNetConfig().resolved_kind(BOX3) == "mlp"  # off by default


def test_images_build_the_self_predictive_cnn_and_missing_state_inputs_are_clear_errors() -> None:
    image = spaces.Box(0, 255, (40, 40, 3), np.uint8)
    net = RewardNetConfig(kind="reed", reed_latent_dim=16).resolved(image, BOX1).build(image, BOX1)
    assert isinstance(net, CNNReward) and net.has_self_predictive and net.spatial and net.motion
    with pytest.raises(ValueError, match="vector observations"):
        ReedReward(spaces.Dict({"img": image, "v": BOX3}), BOX1)
    with pytest.raises(ValueError, match="use_obs or use_next_obs"):
        ReedReward(BOX3, BOX1, use_obs=False, use_next_obs=False)
