"""The reward is learned: held-out accuracy and correlation with the true reward."""

import copy
import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from prefrl.data import PreferenceDataset, sample_fragments
from prefrl.preference import RewardTrainer, RewardTrainerConfig, evaluate_preferences
from prefrl.rewards import MLPReward
from prefrl.teachers import SyntheticTeacher
from tests.narrow import present, section

OBS = __import__("gymnasium").spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = __import__("gymnasium").spaces.Box(-2, 2, (1,), np.float32)


def _pendulum_data(batch, n_pairs, seed):
    rng = np.random.default_rng(seed)
    frags, _ = sample_fragments(batch, 2 * n_pairs, 50, rng)
    pairs = np.arange(2 * n_pairs).reshape(-1, 2)
    return frags, pairs, SyntheticTeacher("oracle").label(frags, pairs)


def test_learns_pendulum_reward_from_300_oracle_pairs(pendulum_batch):
    frags, pairs, labels = _pendulum_data(pendulum_batch, 300, seed=0)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    net = MLPReward(OBS, ACT, ensemble_size=1)
    RewardTrainer(net, RewardTrainerConfig(epochs=30, val_fraction=0.0, seed=0)).train(ds)
    test_frags, test_pairs, test_labels = _pendulum_data(pendulum_batch, 500, seed=1)
    m = evaluate_preferences(net, test_frags, test_pairs, test_labels)
    assert m["accuracy"] >= 0.9
    rows = pendulum_batch.step_rows
    obs, acts = pendulum_batch.obs[rows], pendulum_batch.acts[rows]
    pred, _ = net.predict(obs, acts, pendulum_batch.obs[rows + 1])
    assert np.corrcoef(pred, pendulum_batch.rews[rows])[0, 1] >= 0.8


def test_every_parameter_changes_and_loss_falls(pendulum_batch):
    frags, pairs, labels = _pendulum_data(pendulum_batch, 100, seed=2)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    net = MLPReward(OBS, ACT, ensemble_size=3)
    before = {k: v.clone() for k, v in net.named_parameters()}
    tr = RewardTrainer(net, RewardTrainerConfig(epochs=1, val_fraction=0.0))
    first = tr.train(ds)["train_loss"]
    last = tr.train(ds, epoch_multiplier=10)["train_loss"]
    for k, v in net.named_parameters():
        if k == "absorbing_reward":  # Pendulum never terminates: no clip reaches the absorbing state
            assert torch.equal(v, before[k])
            continue
        assert not torch.equal(v, before[k]), k
        assert (v - before[k]).abs().flatten(1).amax(1).gt(0).all(), f"a member of {k} did not train"
    assert last < first


def test_bootstrap_gives_members_different_functions(pendulum_batch):
    frags, pairs, labels = _pendulum_data(pendulum_batch, 60, seed=3)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    net = MLPReward(OBS, ACT, ensemble_size=4)
    RewardTrainer(net, RewardTrainerConfig(epochs=5)).train(ds)
    a = frags.arrays()
    _, std = net.predict(a.obs, a.acts, a.next_obs)
    assert std.mean() > 1e-3


def test_gradient_accumulation_matches_one_big_batch(pendulum_batch):
    frags, pairs, labels = _pendulum_data(pendulum_batch, 64, seed=4)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    nets = []
    for accum in (1, 4):
        torch.manual_seed(0)
        net = MLPReward(OBS, ACT)
        # one optimiser step over all 64 pairs, taken whole or as 4 accumulated chunks of 16
        cfg = RewardTrainerConfig(batch_size=64, grad_accum_steps=accum, epochs=1, val_fraction=0.0)
        RewardTrainer(net, cfg).train(ds)
        nets.append(net)
    # the output bias is excluded: it shifts both returns equally, so its gradient is ~0 (noise)
    params = [dict(n.named_parameters()) for n in nets]
    for k in params[0]:
        if k != "mlp.layers.2.bias":
            torch.testing.assert_close(params[0][k], params[1][k], rtol=1e-4, atol=1e-5)


def test_adaptive_l2_moves_coefficient_and_validation_is_reported(pendulum_batch):
    frags, pairs, labels = _pendulum_data(pendulum_batch, 80, seed=5)
    # random labels: validation loss ends far above training loss, so L2 must grow
    labels = np.random.default_rng(0).integers(0, 2, len(labels)).astype(np.float32)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    net = MLPReward(OBS, ACT, hidden=(128, 128))
    cfg = RewardTrainerConfig(epochs=150, val_fraction=0.3, adaptive_l2=True, l2_init=1e-4, l2_factor=1.2)
    m = RewardTrainer(net, cfg).train(ds)
    assert "val_loss" in m and "val_accuracy" in m
    assert m["l2_coef"] > 1e-4


def test_true_reward_loss_is_reported_and_teacher_error_rate_used(pendulum_batch):
    frags, pairs, labels = _pendulum_data(pendulum_batch, 50, seed=6)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    m = RewardTrainer(MLPReward(OBS, ACT), RewardTrainerConfig(epochs=1, error_rate=0.1)).train(ds)
    assert m["true_reward_loss"] == pytest.approx(-np.log(0.95), abs=0.02)


def test_empty_dataset_and_bad_config_raise():
    with pytest.raises(ValueError, match="empty preference dataset"):
        RewardTrainer(MLPReward(OBS, ACT)).train(PreferenceDataset())
    with pytest.raises(ValueError, match="divisible"):
        RewardTrainerConfig(batch_size=10, grad_accum_steps=3)
    with pytest.raises(ValueError, match="error_rate"):
        RewardTrainerConfig(error_rate=1.5)
    with pytest.raises(ValueError, match="pseudo_min_accuracy"):
        RewardTrainerConfig(pseudo_min_accuracy=1.2)
    with pytest.raises(ValueError, match="filter_min_accuracy"):
        RewardTrainerConfig(filter_min_accuracy=-0.1)
    with pytest.raises(ValueError, match="trust_window"):
        RewardTrainerConfig(trust_window=0)


def test_trainer_state_round_trips(pendulum_batch):
    frags, pairs, labels = _pendulum_data(pendulum_batch, 40, seed=7)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    torch.manual_seed(1)
    a = MLPReward(OBS, ACT)
    b = MLPReward(OBS, ACT)
    b.load_state_dict(a.state_dict())
    ta, tb = RewardTrainer(a), RewardTrainer(b)
    ta.train(ds)
    tb.net.load_state_dict(a.state_dict())
    tb.load_state_dict(copy.deepcopy(ta.state_dict()))
    ta.train(ds)
    tb.train(ds)
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q)


def test_true_pair_accuracy_is_one_for_the_true_reward_and_none_without_one() -> None:
    """The shared held-out figure: a net that computes the true reward ranks every strict pair
    right, its negation none; no true reward -> None."""
    import dataclasses

    from prefrl.agents.rollout import collect_episodes
    from prefrl.agents.sb3 import make_env
    from prefrl.preference.trainer import true_pair_accuracy

    env = make_env("Pendulum-v1")
    batch = collect_episodes(env, n_steps=600, seed=0)
    rews = np.zeros_like(batch.rews)
    rows = batch.step_rows
    rews[rows] = batch.obs[rows, 2]  # true reward := angular velocity, which this net computes:
    batch = dataclasses.replace(batch, rews=rews)
    net = MLPReward(env.observation_space, env.action_space, hidden=(2,), normalize_input=False)
    with torch.no_grad():  # r = relu(w) - relu(-w) = w (obs[2] is the 3rd of 4 inputs)
        for p in net.parameters():
            p.zero_()
        w1, w2 = net.mlp.linears[0].weight, net.mlp.linears[1].weight  # [E, in, out]
        w1[0, 2, 0], w1[0, 2, 1], w2[0, 0, 0], w2[0, 1, 0] = 1.0, -1.0, 1.0, -1.0
    rng = np.random.default_rng(0)
    assert true_pair_accuracy(net, batch, 100, 20, rng) == 1.0
    with torch.no_grad():
        w2.neg_()
    assert true_pair_accuracy(net, batch, 100, 20, rng) == 0.0
    assert true_pair_accuracy(net, dataclasses.replace(batch, rews=None), 100, 20, rng) is None


def test_temporal_crop_windows_keep_each_pair_aligned():
    """SURF's crop: both clips of a pair get windows of one length in [frac * L, L]."""
    net = MLPReward(OBS, ACT, ensemble_size=2)
    tr = RewardTrainer(net, RewardTrainerConfig(crop_min_frac=0.6, seed=0))
    mask = tr._crop_mask(torch.Size([3, 400]), 50, torch.device("cpu"))  # [E?, B, 2, L]
    assert mask.shape == (3, 400, 2, 50)
    size = mask.sum(-1)  # [3, 400, 2]
    assert torch.equal(size[..., 0], size[..., 1])  # the pair's two windows: same length
    assert size.min() >= 30 and size.max() <= 50 and len(size.unique()) > 10
    diff = mask[..., 1:] - mask[..., :-1]
    assert (diff.clamp_min(0).sum(-1) <= 1).all()  # each window is one contiguous run
    starts = mask.argmax(-1)
    assert (starts[..., 0] != starts[..., 1]).float().mean() > 0.5  # starts drawn per clip


def test_training_with_temporal_crop_still_learns(pendulum_batch):
    frags, pairs, labels = _pendulum_data(pendulum_batch, 200, seed=5)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    net = MLPReward(OBS, ACT, ensemble_size=2)
    RewardTrainer(net, RewardTrainerConfig(epochs=20, val_fraction=0.0, crop_min_frac=0.5)).train(ds)
    test_frags, test_pairs, test_labels = _pendulum_data(pendulum_batch, 300, seed=6)
    assert evaluate_preferences(net, test_frags, test_pairs, test_labels)["accuracy"] >= 0.85


def test_noise_filter_drops_or_flips_confidently_contradicted_labels(pendulum_batch):
    """RIME: a warm model the trust gate lets act leaves out (or flips) the labels it
    confidently contradicts: here a quarter of the new labels are backwards."""
    frags, pairs, labels = _pendulum_data(pendulum_batch, 200, seed=7)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    net = MLPReward(OBS, ACT, ensemble_size=3)
    cfg = RewardTrainerConfig(epochs=30, val_fraction=0.0, noise_filter=True, seed=0)
    tr = RewardTrainer(net, cfg)
    first = tr.train(ds)  # warm start: no filtering on the first call
    assert "noise_dropped" in first and first["noise_dropped"] == first["noise_flipped"] == 0
    assert first["filter_trusted"] == 0
    more_frags, more_pairs, clean = _pendulum_data(pendulum_batch, 60, seed=8)
    keep = np.abs(clean - 0.5) > 0.4  # clear preferences
    new = clean[keep].copy()
    wrong = np.zeros(len(new), dtype=bool)
    wrong[::4] = True  # the teacher got every fourth one backwards
    new[wrong] = 1.0 - new[wrong]
    n_old = len(ds)
    ds.add(more_frags, more_pairs[keep], new)
    feats = encode_for_test(net, ds)
    n = len(ds)
    new_labels, weight, counts = tr._filter_noise(
        feats, torch.as_tensor(ds.pairs), torch.as_tensor(ds.labels), torch.arange(n)
    )
    bad = torch.zeros(n, dtype=torch.bool)
    bad[n_old:] = torch.as_tensor(wrong)
    caught = (weight == 0) | (new_labels != torch.as_tensor(ds.labels))
    assert caught[bad].float().mean() >= 0.7  # most wrong labels are left out or flipped
    assert caught[~bad].float().mean() <= 0.1  # few right ones are
    assert counts["noise_dropped"] + counts["noise_flipped"] == caught.sum().item()
    flipped = new_labels != torch.as_tensor(ds.labels)
    assert torch.equal(new_labels[flipped], 1 - torch.as_tensor(ds.labels)[flipped])
    m = tr.train(ds)
    # the model predicts the right three quarters: trusted to filter, not to pseudo-label
    assert cfg.filter_min_accuracy <= m["fresh_accuracy"] <= 0.8 and m["filter_trusted"] == 1
    assert m["noise_dropped"] + m["noise_flipped"] > 0


def encode_for_test(net, ds):
    from prefrl.rewards.encode import encode_fragments

    return encode_fragments(net, ds.fragments)


def test_pseudo_labels_only_above_the_threshold(pendulum_batch):
    """SURF: an unlabelled pair gets a pseudo-label only where the ensemble is that sure."""
    frags, pairs, labels = _pendulum_data(pendulum_batch, 150, seed=9)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    net = MLPReward(OBS, ACT, ensemble_size=3)
    tr = RewardTrainer(net, RewardTrainerConfig(epochs=20, val_fraction=0.0, pseudo_label_ratio=2.0))
    unl, _ = sample_fragments(pendulum_batch, 200, 50, np.random.default_rng(10))
    tr.train(ds, unlabelled=unl)  # the first call: nothing trusted yet
    ds.add(*_pendulum_data(pendulum_batch, 30, seed=11))  # fresh labels the model predicts
    m = tr.train(ds, unlabelled=unl)
    assert m["pseudo_trusted"] == 1 and 0.0 < m["pseudo_label_frac"] <= 1.0
    feats = present(tr._unlabelled_features(unl, 50))
    fracs = []
    for threshold in (0.6, 0.99, 1.0):
        tr.config = dataclasses.replace(tr.config, pseudo_label_threshold=threshold)
        tally = torch.zeros(2)
        loss = tr._pseudo_loss(feats, 400, tally)
        fracs.append((tally[1] / tally[0]).item())
        if threshold == 1.0:  # nothing is that sure: no pseudo-label, no loss
            assert tally[1] == 0 and loss.item() == 0.0
    assert fracs[0] > fracs[1] > fracs[2] == 0.0
    # the pseudo-label is the side the ensemble prefers: the loss is below log 2 per pair
    tr.config = dataclasses.replace(tr.config, pseudo_label_threshold=0.9)
    assert tr._pseudo_loss(feats, 400, torch.zeros(2)).item() / 3 < np.log(2) * 0.5
    with pytest.raises(ValueError, match="unlabelled clips have length"):
        tr._unlabelled_features(sample_fragments(pendulum_batch, 4, 20, np.random.default_rng(0))[0], 50)
    with pytest.raises(ValueError, match="pseudo_label_threshold"):
        RewardTrainerConfig(pseudo_label_threshold=0.4)


TRUST_CFG: dict[str, Any] = dict(
    val_fraction=0.0, noise_filter=True, pseudo_label_ratio=2.0, pseudo_label_threshold=0.6, seed=0
)


def test_no_pseudo_label_in_the_first_call(pendulum_batch):
    """Trust gate: before any training the model's certainty means nothing, so even a low
    threshold gives no pseudo-label in the first call."""
    ds = PreferenceDataset()
    ds.add(*_pendulum_data(pendulum_batch, 40, seed=12))
    unl, _ = sample_fragments(pendulum_batch, 100, 50, np.random.default_rng(13))
    cfg = RewardTrainerConfig(epochs=5, **{**TRUST_CFG, "pseudo_label_threshold": 0.51})
    m = RewardTrainer(MLPReward(OBS, ACT, ensemble_size=2), cfg).train(ds, unlabelled=unl)
    assert m["pseudo_label_frac"] == 0.0 and m["pseudo_trusted"] == 0 and m["filter_trusted"] == 0
    assert m["noise_dropped"] == m["noise_flipped"] == 0
    assert "fresh_accuracy" not in m  # nothing scored yet: the metric is left out, never NaN


def test_trust_gate_stops_a_wrong_model_and_trusts_it_again_once_it_predicts(pendulum_batch):
    """A model trained on backwards labels, shown right ones, neither pseudo-labels nor filters
    them (the filter would "correct" many); once it learned the right labels (the backwards
    ones evicted by max_size) and predicts fresh ones, both act again."""
    ds = PreferenceDataset(max_size=100)
    frags, pairs, labels = _pendulum_data(pendulum_batch, 100, seed=14)
    ds.add(frags, pairs, 1.0 - labels)  # a teacher wrong on everything
    net = MLPReward(OBS, ACT, ensemble_size=3)
    tr = RewardTrainer(net, RewardTrainerConfig(epochs=50, **TRUST_CFG))
    unl, _ = sample_fragments(pendulum_batch, 100, 50, np.random.default_rng(15))
    tr.train(ds, unlabelled=unl)
    ds.add(*_pendulum_data(pendulum_batch, 100, seed=16))  # right labels; every wrong one evicted
    assert ds.pair_ids.min() == 100
    *_, counts = tr._filter_noise(  # what an ungated filter would do to the right labels
        encode_for_test(net, ds), torch.as_tensor(ds.pairs), torch.as_tensor(ds.labels), torch.arange(len(ds))
    )
    assert counts["noise_dropped"] + counts["noise_flipped"] >= 10
    m = tr.train(ds, unlabelled=unl)
    assert m["fresh_accuracy"] <= 0.3
    assert m["pseudo_trusted"] == m["filter_trusted"] == 0
    assert m["pseudo_label_frac"] == 0.0 and m["noise_dropped"] == m["noise_flipped"] == 0
    ds.add(*_pendulum_data(pendulum_batch, 40, seed=17))
    m = tr.train(ds, unlabelled=unl)
    assert m["fresh_accuracy"] >= 0.8 and len(tr.trust.outcomes) == 20  # the newest 20 only
    assert m["pseudo_trusted"] == m["filter_trusted"] == 1 and m["pseudo_label_frac"] > 0


def test_trust_record_survives_a_checkpoint(pendulum_batch, tmp_path):
    """The rolling outcomes and the dataset mark go through the checkpoint file (JSON values,
    no pickle); a state saved before the trust gate existed still loads."""
    from prefrl.storage.checkpoint import load_tensor_state, save_tensor_state

    ds = PreferenceDataset()
    ds.add(*_pendulum_data(pendulum_batch, 60, seed=18))
    torch.manual_seed(2)
    a, b = MLPReward(OBS, ACT, ensemble_size=2), MLPReward(OBS, ACT, ensemble_size=2)
    cfg = RewardTrainerConfig(epochs=10, **TRUST_CFG)
    ta = RewardTrainer(a, cfg)
    ta.train(ds)
    ds.add(*_pendulum_data(pendulum_batch, 15, seed=19))
    ta.train(ds)
    assert len(ta.trust.outcomes) > 0 and ta.trust.seen == ds.next_id
    save_tensor_state({"trainer": ta.state_dict()}, tmp_path / "trainer.safetensors")
    state = section(load_tensor_state(tmp_path / "trainer.safetensors"), "trainer")
    b.load_state_dict(a.state_dict())
    tb = RewardTrainer(b, cfg)
    tb.load_state_dict(state)
    assert list(tb.trust.outcomes) == list(ta.trust.outcomes) and tb.trust.seen == ta.trust.seen
    ds.add(*_pendulum_data(pendulum_batch, 15, seed=20))
    ma, mb = ta.train(ds), tb.train(ds)
    assert ma["fresh_accuracy"] == mb["fresh_accuracy"]
    assert ma["filter_trusted"] == mb["filter_trusted"]
    del state["trust"]  # an older checkpoint: no record, the normaliser's mark stands in
    old = RewardTrainer(MLPReward(OBS, ACT, ensemble_size=2), cfg)
    old.load_state_dict(state)
    assert len(old.trust.outcomes) == 0 and old.trust.seen == state["stats_seen"]


def test_label_smoothing_bounds_the_return_gap_a_few_labels_can_force(pendulum_batch):
    """SEER: with smoothing s a sure label targets P = 1 - s/2, so the model's loss on its own
    labels settles near -log(1 - s/2) instead of going to 0 as the return gaps grow."""
    from prefrl.preference.trainer import smooth_labels

    assert torch.allclose(smooth_labels(torch.tensor([1.0, 0.0, 0.5]), 0.2), torch.tensor([0.9, 0.1, 0.5]))
    frags, pairs, labels = _pendulum_data(pendulum_batch, 8, seed=5)
    loss = {}
    for s in (0.0, 0.2):
        ds = PreferenceDataset()
        ds.add(frags, pairs, labels)
        net = MLPReward(OBS, ACT, ensemble_size=1)
        cfg = RewardTrainerConfig(epochs=300, val_fraction=0.0, seed=0, label_smoothing=s, lr=1e-2)
        RewardTrainer(net, cfg).train(ds)
        m = evaluate_preferences(net, frags, pairs, labels)
        assert m["accuracy"] == 1.0  # both rank every labelled pair right
        loss[s] = m["loss"]
    assert loss[0.0] < 0.02 and 0.05 < loss[0.2] < 0.2  # -log(0.9) = 0.105
    with pytest.raises(ValueError, match="label_smoothing"):
        RewardTrainerConfig(label_smoothing=1.0)


def test_the_learning_rate_is_chosen_by_the_network_unless_given() -> None:
    """auto: a tenth of the usual rate for a CNN over flat image features (at 3e-3 Pong's reward
    saturated and its convolutions died), the usual one for the MLP and the keypoint CNN."""
    from gymnasium import spaces

    from prefrl.preference.trainer import FLAT_CNN_LR, LR
    from prefrl.rewards.config import RewardNetConfig

    frames, acts = spaces.Box(0, 255, (4, 84, 84), np.uint8), spaces.Discrete(6)
    small = spaces.Box(0, 255, (40, 40, 3), np.uint8)
    vec = spaces.Box(-1.0, 1.0, (3,), np.float32)
    nets = {
        "flat CNN": (RewardNetConfig(cnn_features="flat").build(frames, acts), FLAT_CNN_LR),
        "keypoint CNN": (RewardNetConfig().resolved(small, acts).build(small, acts), LR),
        "MLP": (RewardNetConfig().build(vec, spaces.Box(-1.0, 1.0, (1,), np.float32)), LR),
    }
    for name, (net, lr) in nets.items():
        assert RewardTrainer(net, RewardTrainerConfig()).optimizer.lr == lr, name
    assert FLAT_CNN_LR < LR
    flat = nets["flat CNN"][0]
    assert RewardTrainer(flat, RewardTrainerConfig(lr=1e-3)).optimizer.lr == 1e-3  # given: kept
    with pytest.raises(ValueError, match="lr must be positive"):
        RewardTrainerConfig(lr=0.0)
