"""REED's self-predictive training: the loss falls on real transitions, the encoder moves, the
preference fit still learns on the same (shared, flat-aliased) parameters, and the state
checkpoints exactly."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from prefrl.agents.rollout import collect_episodes
from prefrl.data import PreferenceDataset, TrajectoryBatch, sample_fragments
from prefrl.preference import RewardTrainer, RewardTrainerConfig, evaluate_preferences
from prefrl.preference.self_predictive import SelfPredictiveConfig, SelfPredictiveTrainer
from prefrl.rewards import MLPReward, ReedReward
from prefrl.storage.checkpoint import load_tensor_state, save_tensor_state
from prefrl.teachers import SyntheticTeacher
from tests.narrow import section

OBS = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = gym.spaces.Box(-2, 2, (1,), np.float32)


def _transitions(batch: TrajectoryBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = batch.step_rows
    return batch.obs[rows], batch.acts[rows], batch.obs[rows + 1]


def _preferences(batch: TrajectoryBatch, n_pairs: int, seed: int) -> PreferenceDataset:
    rng = np.random.default_rng(seed)
    frags, _ = sample_fragments(batch, 2 * n_pairs, 50, rng)
    pairs = np.arange(2 * n_pairs).reshape(-1, 2)
    ds = PreferenceDataset()
    ds.add(frags, pairs, SyntheticTeacher("oracle").label(frags, pairs))
    return ds


def test_loss_falls_on_pendulum_transitions_and_the_encoder_moves(pendulum_batch: TrajectoryBatch) -> None:
    torch.manual_seed(0)
    net = ReedReward(OBS, ACT, hidden=(32,), ensemble_size=3, latent_dim=32)
    obs, acts, nxt = _transitions(pendulum_batch)
    net.update_stats(torch.as_tensor(obs), None, None, None)
    before = {k: v.clone() for k, v in net.named_parameters()}
    tr = SelfPredictiveTrainer(net, SelfPredictiveConfig(steps=80, batch_size=128))
    m = tr.train(obs, acts, nxt)
    assert m["spr_loss"] < m["spr_loss_before"] - 0.3, m
    assert m["spr_loss"] < -0.8 and m["spr_latent_std"] > 1e-2, m  # predicts, without collapsing
    assert m["spr_steps"] == 80 and m["spr_transitions"] == len(acts)
    for k, v in net.named_parameters():
        moved = not torch.equal(v, before[k])
        assert moved == (not k.startswith(("head", "absorbing"))), k  # the reward head is not its part
    for p in tr.params:
        assert p.grad is None or not p.grad.any()  # nothing left over for the preference trainer


def test_preference_fit_still_learns_after_and_between_self_predictive_updates(
    pendulum_batch: TrajectoryBatch,
) -> None:
    """The loop's order: the preference trainer is built first (its flat buffer aliases every
    parameter), then self-prediction and preference fits alternate on the same network."""
    torch.manual_seed(0)
    net = ReedReward(OBS, ACT, hidden=(32, 32), ensemble_size=3, latent_dim=32)
    fit = RewardTrainer(net, RewardTrainerConfig(epochs=15, val_fraction=0.0, seed=0))
    spr = SelfPredictiveTrainer(net, SelfPredictiveConfig(steps=60, batch_size=128))
    obs, acts, nxt = _transitions(pendulum_batch)
    train = _preferences(pendulum_batch, 150, seed=0)
    for _ in range(2):
        m = spr.train(obs, acts, nxt)
        assert m["spr_loss"] < m["spr_loss_before"]
        encoder = [p.clone() for p in net.encoder.parameters()]
        fit.train(train)  # refuses to run if the parameters no longer live in its flat buffer
        assert fit.flat.intact()
        assert any(not torch.equal(a, b) for a, b in zip(encoder, net.encoder.parameters()))  # not frozen
    test = _preferences(pendulum_batch, 300, seed=1)
    assert test.fragments is not None
    acc = evaluate_preferences(net, test.fragments, test.pairs, test.labels)["accuracy"]
    assert acc >= 0.75, acc


def test_state_round_trips_through_a_tensor_checkpoint(
    pendulum_batch: TrajectoryBatch, tmp_path: Path
) -> None:
    obs, acts, nxt = _transitions(pendulum_batch)
    cfg = SelfPredictiveConfig(steps=5, batch_size=32, seed=3)

    def build() -> tuple[ReedReward, SelfPredictiveTrainer]:
        torch.manual_seed(0)
        net = ReedReward(OBS, ACT, hidden=(8,), ensemble_size=2, latent_dim=8)
        return net, SelfPredictiveTrainer(net, cfg)

    net, tr = build()
    tr.train(obs, acts, nxt)
    save_tensor_state({"spr": tr.state_dict()}, tmp_path / "s.safetensors")
    weights = {k: v.clone() for k, v in net.state_dict().items()}
    net2, tr2 = build()
    net2.load_state_dict(weights)
    tr2.load_state_dict(section(load_tensor_state(tmp_path / "s.safetensors"), "spr"))
    assert (tr2.calls, tr2.global_step) == (1, 5)
    a, b = tr.train(obs, acts, nxt), tr2.train(obs, acts, nxt)  # the same draws, the same Adam moments
    assert a["spr_loss"] == b["spr_loss"]
    for (k, x), (_, y) in zip(net.state_dict().items(), net2.state_dict().items()):
        torch.testing.assert_close(x, y, rtol=0, atol=0, msg=k)


def test_discrete_actions_disabled_empty_and_wrong_network() -> None:
    env = gym.make("CartPole-v1")
    batch = collect_episodes(env, n_steps=400, seed=0)
    net = ReedReward(env.observation_space, env.action_space, hidden=(8,), latent_dim=8)
    obs, acts, nxt = _transitions(batch)
    m = SelfPredictiveTrainer(net, SelfPredictiveConfig(steps=40, batch_size=64)).train(obs, acts, nxt)
    assert m["spr_loss"] < m["spr_loss_before"]
    assert SelfPredictiveTrainer(net, SelfPredictiveConfig(enabled=False)).train(obs, acts, nxt) == {}
    assert SelfPredictiveTrainer(net).train(obs[:0], acts[:0], nxt[:0]) == {}
    with pytest.raises(TypeError, match="needs a ReedReward"):
        SelfPredictiveTrainer(MLPReward(OBS, ACT))  # type: ignore[arg-type]  # the error under test
    with pytest.raises(ValueError, match="batch_size >= 1"):
        RewardTrainerConfig(self_predictive_batch_size=0)
    assert RewardTrainerConfig(seed=4).self_predictive_config() == SelfPredictiveConfig(seed=4)
