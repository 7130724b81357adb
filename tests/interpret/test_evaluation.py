"""EPIC distance, correlations and held-out accuracy, against values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces

from prefrl.data import PreferenceDataset, Trajectory, TrajectoryBatch, random_pairs, sample_fragments
from prefrl.interpret.evaluation import (
    Coverage,
    RewardEvaluator,
    canonicalize,
    epic_distance,
    heldout_accuracy,
    heldout_preference_metrics,
    pearson_distance,
    reward_correlations,
)
from prefrl.rewards import MLPReward, ShapedReward

GAMMA = 0.5
# Two states, one action, uniform D_S and D_A; the coverage is every (s, a, s') equally.
R_NEXT = np.array([[[0.0, 1.0]], [[0.0, 1.0]]])  # R(s, a, s') = [s' == 1]
R_FROM = np.array([[[0.0, 0.0]], [[1.0, 1.0]]])  # R(s, a, s') = [s == 1]
R_EDGE = np.array([[[0.0, 1.0]], [[0.0, 0.0]]])  # R(s, a, s') = [s == 0 and s' == 1]


def test_canonical_rewards_match_hand_computation() -> None:
    cov = Coverage.tabular(2, 1)
    # C(R_NEXT) = [s'==1] + γ/2 − 1/2 − γ/2 = [s'==1] − 1/2 on (0,0), (0,1), (1,0), (1,1)
    np.testing.assert_allclose(canonicalize(R_NEXT, cov, GAMMA), [-0.5, 0.5, -0.5, 0.5])
    # C(R_EDGE) = [s==0][s'==1] + γ[s'==0]/2 − [s==0]/2 − γ/4
    np.testing.assert_allclose(canonicalize(R_EDGE, cov, GAMMA), [-0.375, 0.375, 0.125, -0.125])


def test_epic_hand_computed_values() -> None:
    cov = Coverage.tabular(2, 1)
    # [s == 1] is γ [s' == 1] shaped by Φ(s) = [s == 1]: equivalent rewards.
    assert epic_distance(R_NEXT, R_FROM, cov, GAMMA) == pytest.approx(0.0, abs=1e-7)
    # ρ = 0.0625 / sqrt(0.25 * 0.078125) = 1/√5  ->  D = sqrt((1 − 1/√5) / 2) ≈ 0.5257
    assert epic_distance(R_NEXT, R_EDGE, cov, GAMMA) == pytest.approx(math.sqrt((1 - 1 / math.sqrt(5)) / 2))
    assert epic_distance(R_NEXT, -R_NEXT, cov, GAMMA) == pytest.approx(1.0)


@pytest.mark.parametrize("gamma", [0.0, 0.9, 1.0])
def test_epic_zero_for_shaped_and_rescaled_positive_otherwise(gamma: float) -> None:
    rng = np.random.default_rng(0)
    n_s, n_a = 5, 3
    r = rng.normal(size=(n_s, n_a, n_s))
    phi = rng.normal(size=n_s)
    shaped = 3.7 * r + gamma * phi[None, None, :] - phi[:, None, None] + 2.0 * (gamma < 1)
    cov = Coverage.tabular(
        n_s, n_a, state_weights=rng.uniform(0.1, 1, n_s), action_weights=np.array([1, 2, 3])
    )
    assert epic_distance(r, shaped, cov, gamma) == pytest.approx(0.0, abs=1e-6)
    other = rng.normal(size=(n_s, n_a, n_s))
    d = epic_distance(r, other, cov, gamma)
    assert 0.3 < d < 1.0
    shaped_other = other + 5 * (gamma * phi[None, None, :] - phi[:, None, None])
    assert epic_distance(shaped, shaped_other, cov, gamma) == pytest.approx(d)


def test_epic_is_nan_for_a_reward_equivalent_to_zero() -> None:
    phi = np.array([1.0, -2.0])
    pure_shaping = 0.9 * phi[None, None, :] - phi[:, None, None]
    assert math.isnan(
        epic_distance(R_NEXT, np.broadcast_to(pure_shaping, (2, 1, 2)).copy(), Coverage.tabular(2, 1), 0.9)
    )


def test_pearson_distance_validates_shapes() -> None:
    with pytest.raises(ValueError, match="shapes"):
        pearson_distance(np.zeros(3), np.zeros(4))


def _box_batch(n_eps: int = 4, t: int = 20, seed: int = 0) -> TrajectoryBatch:
    rng = np.random.default_rng(seed)
    trajs = []
    for _ in range(n_eps):
        obs = rng.normal(size=(t + 1, 3)).astype(np.float32)
        acts = rng.uniform(-1, 1, size=(t, 2)).astype(np.float32)
        trajs.append(Trajectory(obs, acts, (obs[:-1, 0] + 0.5 * acts[:, 1]).astype(np.float32)))
    return TrajectoryBatch.from_trajectories(trajs)


def test_epic_on_networks_ignores_learned_potential() -> None:
    torch.manual_seed(0)
    obs_space = spaces.Box(-5, 5, (3,), np.float32)
    act_space = spaces.Box(-1, 1, (2,), np.float32)
    base = MLPReward(obs_space, act_space, normalize_input=False)
    shaped = ShapedReward(base, gamma=0.9)
    other = MLPReward(obs_space, act_space, normalize_input=False)
    cov = Coverage.from_batch(_box_batch(), n=200, n_mean=32)
    assert epic_distance(base, shaped, cov, gamma=0.9) < 1e-3
    assert epic_distance(base, other, cov, gamma=0.9) > 0.05
    cov2 = Coverage.from_spaces(obs_space, act_space, n=100, n_mean=16)
    assert epic_distance(base, shaped, cov2, gamma=0.9) < 1e-3


def test_reward_correlations_follow_true_reward() -> None:
    batch = _box_batch()
    obs_space = spaces.Box(-5, 5, (3,), np.float32)
    act_space = spaces.Box(-1, 1, (2,), np.float32)
    net = MLPReward(obs_space, act_space, hidden=(), normalize_input=False)
    with torch.no_grad():  # a linear net equal to 2 * true reward - 1
        w = torch.zeros(5, 1)
        w[0, 0], w[4, 0] = 2.0, 1.0
        net.mlp.linears[0].weight.copy_(w[None])
        net.mlp.linears[0].bias.fill_(-1.0)
    c = reward_correlations(net, batch)
    assert c["pearson"] == pytest.approx(1.0, abs=1e-6)
    assert c["spearman"] == pytest.approx(1.0, abs=1e-6)
    assert c["return_pearson"] == pytest.approx(1.0, abs=1e-6)
    with torch.no_grad():
        net.mlp.linears[0].weight.mul_(-1)
    assert reward_correlations(net, batch)["spearman"] == pytest.approx(-1.0, abs=1e-6)


def test_reward_correlations_need_true_rewards() -> None:
    b = _box_batch()
    nets = MLPReward(spaces.Box(-5, 5, (3,), np.float32), spaces.Box(-1, 1, (2,), np.float32))
    no_rews = TrajectoryBatch(b.obs, b.acts, None, b.lengths, b.terminated, b.truncated)
    with pytest.raises(ValueError, match="true rewards"):
        reward_correlations(nets, no_rews)


def test_heldout_accuracy_uses_the_trainers_split() -> None:
    batch = _box_batch(n_eps=8, t=30)
    frags, _ = sample_fragments(batch, 100, 5, np.random.default_rng(0))
    pairs = random_pairs(len(frags), 300, np.random.default_rng(1))
    ret = frags.returns()
    labels = (ret[pairs[:, 0]] > ret[pairs[:, 1]]).astype(np.float32)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    net = MLPReward(spaces.Box(-5, 5, (3,), np.float32), spaces.Box(-1, 1, (2,), np.float32), hidden=())
    net.norm = None
    with torch.no_grad():
        net.mlp.linears[0].weight.zero_()
        net.mlp.linears[0].weight[0, 0, 0], net.mlp.linears[0].weight[0, 4, 0] = 1.0, 0.5
    m = heldout_preference_metrics(net, ds, 0.2)
    assert m["pairs"] == ds.validation_mask(0.2).sum() > 20
    assert m["accuracy"] == pytest.approx(1.0)
    with torch.no_grad():
        net.mlp.linears[0].weight.mul_(-1)
    assert heldout_accuracy(net, ds, None) == pytest.approx(0.0)
    ev = RewardEvaluator(batch=batch, val_fraction=0.2)(net, ds)
    assert ev["heldout_accuracy"] == 0.0 and ev["pearson"] == pytest.approx(-1.0, abs=1e-6)
