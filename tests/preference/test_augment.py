"""Random-shift augmentation of image clips (RAD/DrQ) and the per-update step cap of the fitter."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from prefrl.data import PreferenceDataset, Trajectory, TrajectoryBatch, sample_fragments
from prefrl.preference import RewardTrainer, RewardTrainerConfig
from prefrl.preference.augment import random_shift
from prefrl.rewards import MLPReward
from prefrl.rewards.cnn import CNNReward
from prefrl.teachers import SyntheticTeacher
from tests.narrow import present


def _offset(src: torch.Tensor, out: torch.Tensor, pad: int) -> tuple[int, int] | None:
    """The (dy, dx) whose edge-repeating shift of ``src`` [..., H, W] gives ``out``, if any."""
    h, w = src.shape[-2:]
    for dy in range(-pad, pad + 1):
        for dx in range(-pad, pad + 1):
            rows = (torch.arange(h) + dy).clamp(0, h - 1)
            cols = (torch.arange(w) + dx).clamp(0, w - 1)
            if torch.equal(src[..., rows, :][..., cols], out):
                return dy, dx
    return None


def test_each_clip_is_shifted_by_one_offset_shared_by_its_frames() -> None:
    g = torch.Generator().manual_seed(0)
    img = torch.randint(0, 256, (6, 2, 5, 3, 12, 12), dtype=torch.uint8, generator=g)  # [B, 2, L, C, H, W]
    out = random_shift(img, 2, clip_dims=2, generator=torch.Generator().manual_seed(1))
    assert out.shape == img.shape and out.dtype == torch.uint8
    offsets = set()
    for b in range(6):
        for side in range(2):
            off = _offset(img[b, side], out[b, side], 2)  # one offset fits all 5 frames and channels
            assert off is not None
            offsets.add(off)
    assert len(offsets) > 3  # clips get their own offsets
    again = random_shift(img, 2, clip_dims=2, generator=torch.Generator().manual_seed(1))
    assert torch.equal(out, again)  # reproducible from the generator


def test_shift_zero_is_the_identity_and_bad_shifts_are_refused() -> None:
    img = torch.zeros(2, 3, 1, 8, 8, dtype=torch.uint8)
    assert random_shift(img, 0, clip_dims=1) is img
    with pytest.raises(ValueError, match="too large"):
        random_shift(img, 4, clip_dims=1)
    with pytest.raises(ValueError, match=">= 0"):
        random_shift(img, -1, clip_dims=1)
    with pytest.raises(ValueError, match="image_shift"):
        RewardTrainerConfig(image_shift=-2)
    with pytest.raises(ValueError, match="max_steps"):
        RewardTrainerConfig(max_steps=0)


def _dot_data(n_pairs: int, seed: int) -> PreferenceDataset:
    import prefrl  # noqa: F401  (registers the moving dot)

    env = gym.make("prefrl/MovingDot-v0")
    rng = np.random.default_rng(seed)
    eps = []
    for i in range(20):
        obs, _ = env.reset(seed=seed * 1000 + i)
        frames, acts, rews = [obs], [], []
        for _ in range(60):
            a = int(rng.integers(5))
            obs, r, *_ = env.step(a)
            frames.append(obs)
            acts.append(a)
            rews.append(r)
        eps.append(Trajectory(np.array(frames), np.array(acts), np.array(rews, np.float32), truncated=True))
    frags, _ = sample_fragments(TrajectoryBatch.from_trajectories(eps), 2 * n_pairs, 10, rng)
    pairs = np.arange(2 * n_pairs).reshape(-1, 2)
    data = PreferenceDataset()
    data.add(frags, pairs, SyntheticTeacher("oracle").label(frags, pairs))
    return data


def test_shifted_training_changes_every_parameter_and_learns() -> None:
    torch.manual_seed(0)
    import prefrl  # noqa: F401

    env = gym.make("prefrl/MovingDot-v0")
    data = _dot_data(60, seed=0)
    net = CNNReward(env.observation_space, env.action_space, ensemble_size=2)
    before = {n: p.detach().clone() for n, p in net.named_parameters() if n != "absorbing_reward"}
    cfg = RewardTrainerConfig(lr=3e-3, epochs=15, val_fraction=0.0, image_shift=2, seed=0)  # as measured
    metrics = RewardTrainer(net, cfg).train(data)
    after = dict(net.named_parameters())
    assert all(not torch.equal(p, after[n]) for n, p in before.items())  # no clip ends: no absorbing step
    assert metrics["train_accuracy"] > 0.75


PENDULUM_OBS = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
PENDULUM_ACT = gym.spaces.Box(-2, 2, (1,), np.float32)


def _pendulum_pairs(batch: TrajectoryBatch, n_pairs: int) -> PreferenceDataset:
    """``n_pairs`` oracle-labelled pairs of 20-step Pendulum clips."""
    rng = np.random.default_rng(0)
    frags, _ = sample_fragments(batch, 2 * n_pairs, 20, rng)
    pairs = np.arange(2 * n_pairs).reshape(-1, 2)
    data = PreferenceDataset()
    data.add(frags, pairs, SyntheticTeacher("oracle").label(frags, pairs))
    return data


def test_max_steps_caps_each_update_and_scales_with_the_epoch_multiplier(pendulum_batch) -> None:
    data = _pendulum_pairs(pendulum_batch, 200)
    obs, act = PENDULUM_OBS, PENDULUM_ACT
    free = RewardTrainer(MLPReward(obs, act, ensemble_size=1), RewardTrainerConfig(epochs=4, val_fraction=0))
    assert free.train(data)["steps"] == 4 * 7  # 200 pairs in batches of 32: 7 steps an epoch
    capped = RewardTrainer(
        MLPReward(obs, act, ensemble_size=1), RewardTrainerConfig(epochs=4, val_fraction=0, max_steps=10)
    )
    m = capped.train(data)
    assert m["steps"] == 10 and m["epochs"] == pytest.approx(10 / 7)
    assert capped.train(data, epoch_multiplier=2.0)["steps"] == 20
    assert capped.global_step == 30


def test_image_shift_on_a_vector_reward_is_refused(pendulum_batch) -> None:
    data = _pendulum_pairs(pendulum_batch, 10)
    trainer = RewardTrainer(
        MLPReward(PENDULUM_OBS, PENDULUM_ACT), RewardTrainerConfig(epochs=1, image_shift=2)
    )
    with pytest.raises(ValueError, match="reads no images"):
        trainer.train(data)


def test_shared_trunk_one_convolution_pass_members_differ_by_bootstrap_weights(tmp_path) -> None:
    import prefrl  # noqa: F401
    from prefrl.rewards.io import load_reward_net, save_reward_net

    torch.manual_seed(0)
    env = gym.make("prefrl/MovingDot-v0")
    data = _dot_data(60, seed=0)
    net = CNNReward(env.observation_space, env.action_space, ensemble_size=3, shared_trunk=True)
    conv = net.conv[0]
    assert isinstance(conv, torch.nn.Conv2d) and conv.groups == 1  # one set of convolutions for all
    assert conv.out_channels == 16  # not one set per member (3 x 16)
    before = {n: p.detach().clone() for n, p in net.named_parameters() if n != "absorbing_reward"}
    cfg = RewardTrainerConfig(lr=3e-3, epochs=15, val_fraction=0.0, seed=0)  # the rate it was written for
    metrics = RewardTrainer(net, cfg).train(data)
    after = dict(net.named_parameters())
    assert all(not torch.equal(p, after[n]) for n, p in before.items())
    assert metrics["train_accuracy"] > 0.75
    obs = present(data.fragments).arrays().obs[:4].reshape(-1, *present(env.observation_space.shape))
    acts = np.zeros(len(obs), dtype=np.int64)
    _, std = net.predict(obs, acts, obs)
    assert float(std.mean()) > 1e-4  # the members learned different functions from their weights
    save_reward_net(net, tmp_path / "r.safetensors")
    back = load_reward_net(tmp_path / "r.safetensors")
    assert back.shared_trunk
    assert np.allclose(back.predict(obs, acts, obs)[0], net.predict(obs, acts, obs)[0], atol=1e-5)


def test_held_out_scoring_keeps_no_autograd_graph(pendulum_batch, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held-out metrics score without gradients: a graph kept per chunk took tens of GB on images."""
    from prefrl.preference import evaluate_preferences

    data = _pendulum_pairs(pendulum_batch, 20)
    frags, pairs, labels = present(data.fragments), data.pairs, data.labels
    net = MLPReward(PENDULUM_OBS, PENDULUM_ACT, ensemble_size=2)
    seen: list[bool] = []
    score = net.score

    def watched(*args, **kwargs):  # records whether autograd was on while scoring
        seen.append(torch.is_grad_enabled())
        return score(*args, **kwargs)

    monkeypatch.setattr(net, "score", watched)
    evaluate_preferences(net, frags, pairs, labels)
    assert seen and not any(seen)
