from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from prefrl.rewards import (
    CNNReward,
    EnsembleMLP,
    MLPReward,
    RunningNorm,
    ShapedReward,
    load_reward_net,
    save_reward_net,
)

BOX3, BOX1 = spaces.Box(-1, 1, (3,)), spaces.Box(-2, 2, (1,))


def test_mlp_accepts_any_leading_dims_and_returns_ensemble_first():
    net = MLPReward(BOX3, BOX1, ensemble_size=4)
    obs, acts = torch.randn(5, 2, 7, 3), torch.randn(5, 2, 7, 1)
    r = net(obs, acts, obs, torch.zeros(5, 2, 7))
    assert r.shape == (4, 5, 2, 7)
    flat = net(obs.reshape(-1, 3), acts.reshape(-1, 1), obs.reshape(-1, 3), torch.zeros(70))
    torch.testing.assert_close(flat.reshape(4, 5, 2, 7), r)
    mean, std = net.predict(obs.numpy(), acts.numpy(), obs.numpy())
    assert mean.shape == (5, 2, 7) and (std > 0).all()


def test_batched_ensemble_equals_each_member_alone():
    mlp = EnsembleMLP(3, 4, (16, 16), 1)
    x = torch.randn(10, 4)
    out = mlp(x)  # [3, 10, 1]
    for m in range(3):
        h = x
        for i, layer in enumerate(mlp.linears):
            h = h @ layer.weight[m] + layer.bias[m]
            h = torch.relu(h) if i < 2 else h
        torch.testing.assert_close(out[m], h)
    xe = torch.randn(3, 10, 4)  # per-member inputs (bootstrap)
    outp = mlp(xe, per_member=True)
    torch.testing.assert_close(outp[1], mlp(xe[1])[1])


def test_handwritten_backward_matches_autograd():
    for e, per in [(1, False), (3, False), (3, True)]:
        mlp = EnsembleMLP(e, 5, (8, 6), 1).double()
        x = torch.randn(e, 9, 5, dtype=torch.double) if per else torch.randn(9, 5, dtype=torch.double)
        x.requires_grad_(True)
        torch.autograd.gradcheck(lambda x, m=mlp, p=per: m(x, per_member=p), (x,))
        grads = []
        for fast in (True, False):
            mlp.fast = fast
            loss = mlp(x, per_member=per).pow(2).sum()
            grads.append(torch.autograd.grad(loss, [x, *mlp.parameters()]))
        for a, b in zip(*grads):
            torch.testing.assert_close(a, b)


def test_discrete_multidiscrete_and_dict_spaces():
    obs_space = spaces.Dict({"cell": spaces.Discrete(5), "pos": spaces.Box(-1, 1, (2,))})
    act_space = spaces.MultiDiscrete([3, 2])
    net = MLPReward(obs_space, act_space, use_next_obs=True, use_done=True, ensemble_size=2)
    obs = {"cell": torch.tensor([[0, 4]]), "pos": torch.zeros(1, 2, 2)}
    r = net(obs, torch.tensor([[[2, 1], [0, 0]]]), obs, torch.zeros(1, 2))
    assert r.shape == (2, 1, 2)
    with pytest.raises(ValueError, match="does not end in the space's shape"):
        net(obs, torch.zeros(1, 2, 3), obs, torch.zeros(1, 2))
    with pytest.raises(ValueError, match="lacks keys"):
        net({"cell": obs["cell"]}, torch.zeros(1, 2, 2), obs, torch.zeros(1, 2))


def test_mismatched_observation_shape_is_named():
    net = MLPReward(BOX3, BOX1)
    with pytest.raises(ValueError, match=r"\(3,\)"):
        net(torch.zeros(4, 5), torch.zeros(4, 1), torch.zeros(4, 5), torch.zeros(4))


@pytest.mark.parametrize("shape", [(84, 84, 4), (4, 84, 84)])
def test_cnn_on_uint8_images_hwc_and_chw(shape):
    space = spaces.Box(0, 255, shape, np.uint8)
    net = CNNReward(space, spaces.Discrete(3), ensemble_size=3)
    imgs = torch.randint(0, 256, (2, 5, *shape), dtype=torch.uint8)
    r = net(imgs, torch.zeros(2, 5, dtype=torch.long), imgs, torch.zeros(2, 5))
    assert r.shape == (3, 2, 5) and torch.isfinite(r).all()
    feats = net.encode(imgs, torch.zeros(2, 5, dtype=torch.long), imgs, torch.zeros(2, 5))
    per = {k: v.unsqueeze(0).expand(3, *v.shape) for k, v in feats.items()}
    torch.testing.assert_close(net.score(per, per_member=True), r)
    with pytest.raises(ValueError, match="uint8"):
        net(imgs.float(), torch.zeros(2, 5), imgs, torch.zeros(2, 5))
    with pytest.raises(ValueError, match="image Box"):
        CNNReward(BOX3, BOX1)


def test_shaped_reward_is_base_plus_potential_difference():
    base = MLPReward(BOX3, BOX1, ensemble_size=2)
    net = ShapedReward(base, gamma=0.9)
    s, a, s2 = torch.randn(6, 3), torch.randn(6, 1), torch.randn(6, 3)
    d = torch.tensor([0, 0, 1, 0, 1, 0.0])
    feats = net.encode(s, a, s2, d)
    phi_s, phi_n = net.potential_value(feats["phi_s"]), net.potential_value(feats["phi_next"])
    expected = base(s, a, s2, d) + 0.9 * (1 - d) * phi_n - phi_s
    torch.testing.assert_close(net(s, a, s2, d), expected)


def test_running_norm_matches_numpy():
    norm = RunningNorm(3)
    data = np.random.default_rng(0).normal(2.0, 3.0, size=(1000, 3)).astype(np.float32)
    for chunk in np.split(data, 4):
        norm.update(torch.as_tensor(chunk))
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(0), rtol=1e-4)
    np.testing.assert_allclose(norm.var.numpy(), data.var(0), rtol=1e-3)
    with pytest.raises(ValueError, match="NaN"):
        norm.update(torch.tensor([[np.nan, 0, 0]]))


def test_save_load_round_trip_and_bad_files(tmp_path):
    env = gym.make("CartPole-v1")
    for net in [
        MLPReward(env.observation_space, env.action_space, ensemble_size=3),
        ShapedReward(MLPReward(BOX3, BOX1), gamma=0.5),
        CNNReward(
            spaces.Box(0, 255, (32, 32, 3), np.uint8), BOX1, channels=(4, 8), kernels=(4, 3), strides=(2, 1)
        ),
    ]:
        path = save_reward_net(net, tmp_path / "r.safetensors")
        loaded = load_reward_net(path)
        assert type(loaded) is type(net)
        for (k, v), (k2, v2) in zip(net.state_dict().items(), loaded.state_dict().items()):
            assert k == k2
            torch.testing.assert_close(v, v2)
    (tmp_path / "bad.safetensors").write_bytes(b"\x00" * 50)
    with pytest.raises(ValueError, match="not a readable reward model"):
        load_reward_net(tmp_path / "bad.safetensors")
    with pytest.raises(FileNotFoundError):
        load_reward_net(tmp_path / "nope.safetensors")


def test_cnn_options_are_one_dataclass_that_the_config_the_file_and_the_network_share(tmp_path) -> None:
    """The CNN's options live in :class:`CNNOptions` only: the network built from a run's
    config carries exactly them, its saved file rebuilds them, and a wrong one is named."""
    from prefrl.rewards import CNNOptions
    from prefrl.rewards.config import RewardNetConfig

    obs, act = spaces.Box(0, 255, (40, 40, 3), np.uint8), spaces.Discrete(5)
    cfg = RewardNetConfig(cnn_channels=[4, 8], cnn_features="flat", output="tanh").resolved(obs, act)
    net = cfg.build(obs, act)
    assert isinstance(net, CNNReward) and net.ensemble_size == cfg.ensemble_size
    assert net.options.channels == (4, 8) and net.options.output == "tanh" and net.options.action_heads
    assert net.options.use_next_obs is False and net.options.chw is False
    loaded = load_reward_net(save_reward_net(net, tmp_path / "r.safetensors"))
    assert isinstance(loaded, CNNReward) and loaded.options == net.options
    assert CNNReward(
        obs,
        act,
        options=CNNOptions(features="spatial", channels=(4,), kernels=(1,), strides=(1,)),
        hidden=[16],
    ).options.hidden == (16,)
    with pytest.raises(TypeError, match=r"no option.*colour"):
        CNNReward(obs, act, colour=True)
    with pytest.raises(ValueError, match="same length"):
        CNNOptions(channels=(4, 8), kernels=(3,), strides=(1, 1))


@pytest.mark.parametrize("kind", ["mlp", "cnn", "reed"])
def test_the_absorbing_mode_goes_from_the_config_into_the_network_and_its_file(
    kind: Literal["mlp", "cnn", "reed"], tmp_path: Any
) -> None:
    from prefrl.rewards.config import RewardNetConfig

    obs = spaces.Box(0, 255, (16, 16, 3), np.uint8) if kind == "cnn" else BOX3
    cfg = RewardNetConfig(kind=kind, absorbing="median").resolved(obs, BOX1)
    net = cfg.build(obs, BOX1)
    assert net.absorbing == "median" and net.config["absorbing"] == "median"
    assert load_reward_net(save_reward_net(net, tmp_path / "r.safetensors")).absorbing == "median"
    plain = RewardNetConfig(kind=kind).resolved(obs, BOX1).build(obs, BOX1)
    assert plain.absorbing == "learned" and "absorbing" not in plain.config  # files stay as before
    assert load_reward_net(save_reward_net(plain, tmp_path / "p.safetensors")).absorbing == "learned"


def test_cnn_with_next_obs_sees_what_the_step_changed() -> None:
    import gymnasium as gym

    from prefrl.rewards import CNNReward, build_reward_net

    space = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    net = CNNReward(space, gym.spaces.Discrete(5), ensemble_size=2, channels=(8, 16), kernels=(4, 3),
                    strides=(4, 2), hidden=(32,), use_next_obs=True)  # fmt: skip
    rng = np.random.default_rng(0)
    o = rng.integers(0, 255, (4, 40, 40, 3), dtype=np.uint8)
    n = rng.integers(0, 255, (4, 40, 40, 3), dtype=np.uint8)
    a = np.zeros(4, np.int64)
    r1, r2 = net.predict(o, a, n)[0], net.predict(o, a, o)[0]
    assert r1.shape == (4,) and not np.allclose(r1, r2)  # the next image is an input
    again = build_reward_net(net.config)
    again.load_state_dict(net.state_dict())
    np.testing.assert_allclose(again.predict(o, a, n)[0], r1, rtol=1e-5)


def test_scoring_chunks_stay_small_for_atari_sized_clips() -> None:
    import gymnasium as gym

    from prefrl.data import Trajectory, TrajectoryBatch, sample_fragments
    from prefrl.rewards import CNNReward
    from prefrl.rewards.encode import fragment_rewards, fragments_per_chunk

    space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    obs = np.zeros((61, 4, 84, 84), np.uint8)
    ep = Trajectory(obs, np.zeros(60, np.int64), np.zeros(60, np.float32))
    batch = TrajectoryBatch.from_trajectories([ep])
    frags, _ = sample_fragments(batch, 20, 50, np.random.default_rng(0))
    net = CNNReward(space, gym.spaces.Discrete(6), ensemble_size=3)
    assert 1 <= fragments_per_chunk(net, frags) <= 10  # not 4096 clips of 50 frames in one pass
    assert fragment_rewards(net, frags).shape == (3, 20, 50)
    small = MLPReward(spaces.Box(-1, 1, (3,)), spaces.Box(-1, 1, (1,)), ensemble_size=3)
    vec = TrajectoryBatch.from_trajectories(
        [Trajectory(np.zeros((61, 3), np.float32), np.zeros((60, 1), np.float32), np.zeros(60, np.float32))]
    )
    assert fragments_per_chunk(small, sample_fragments(vec, 5, 50, np.random.default_rng(0))[0]) == 4096


def test_tanh_output_bounds_every_reward_and_survives_save_load(tmp_path) -> None:
    """``output="tanh"``: per-step and absorbing rewards in (-1, 1), even far outside the data;
    the setting is saved; the wrapper's NumPy per-step path squashes each member the same way."""
    from prefrl.rewards.inference import FastReward, reward_fn

    net = MLPReward(BOX3, BOX1, ensemble_size=2, output="tanh", normalize_input=False)
    lin = MLPReward(BOX3, BOX1, ensemble_size=2, normalize_input=False)
    lin.load_state_dict(net.state_dict())
    with torch.no_grad():
        net.absorbing_reward.fill_(50.0)
        for p in net.mlp.parameters():
            p.mul_(20.0)
    lin.load_state_dict(net.state_dict())
    s, a = torch.randn(64, 3) * 100, torch.randn(64, 1)
    d = torch.zeros(64, dtype=torch.bool)
    feats = net.encode(s, a, s, d)
    r, raw = net.score(feats), lin.score(feats)
    assert raw.abs().max() > 5  # the unbounded twin goes far outside (-1, 1) ...
    torch.testing.assert_close(r, torch.tanh(raw))  # ... the bounded one is its tanh
    assert r.abs().max() <= 1.0
    assert 0.99 < net.absorbing_value() <= 1.0 and lin.absorbing_value() == 50.0
    feats["absorbing"] = torch.ones(64, dtype=torch.bool)
    assert torch.all(net.score(feats) == net.score(feats)[0, 0])  # absorbing: the squashed value
    loaded = load_reward_net(save_reward_net(net, tmp_path / "t.safetensors"))
    assert loaded.output == "tanh"
    torch.testing.assert_close(loaded.score(loaded.encode(s, a, s, d)), r)
    assert isinstance(reward_fn(net), FastReward)
    got = reward_fn(net)(s.numpy(), a.numpy(), s.numpy(), d.numpy())
    np.testing.assert_allclose(got, r.mean(0).detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="unknown reward output 'sigmoid'"):
        MLPReward(BOX3, BOX1, output="sigmoid")


def test_soft_argmax_finds_a_bright_pixel() -> None:
    from prefrl.rewards.layers import soft_argmax

    x = torch.zeros(2, 1, 9, 11)
    x[0, 0, 2, 8] = 50.0  # row 2 of 9, column 8 of 11: y = -1 + 2 * 2/8, x = -1 + 2 * 8/10
    x[1, 0, 8, 0] = 50.0  # bottom-left corner
    got = soft_argmax(x)  # [B, C, 2] as (x, y)
    torch.testing.assert_close(got[:, 0], torch.tensor([[0.6, -0.5], [-1.0, 1.0]]), atol=1e-4, rtol=0)
    flat = soft_argmax(torch.zeros(1, 3, 4, 4))  # no peak: the centre
    torch.testing.assert_close(flat, torch.zeros(1, 3, 2), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match=r"\[B, C, H, W\]"):
        soft_argmax(torch.zeros(3, 4, 4))


def test_spatial_cnn_reward_reads_where_the_dot_is_and_learns_it() -> None:
    """The keypoint head: moving the dot changes the reward, members train in one pass and every
    parameter changes, and the net rebuilds from its config."""
    import gymnasium as gym

    from prefrl.rewards import CNNReward, build_reward_net
    from prefrl.rewards.cnn import cnn_architecture

    space = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    arch: dict[str, Any] = cnn_architecture(space, features="spatial")
    assert arch["kernels"] == (1,) and cnn_architecture(space)["kernels"] == (4, 3)
    net = CNNReward(space, gym.spaces.Discrete(5), ensemble_size=2, features="spatial", **arch)
    img = np.zeros((2, 40, 40, 3), np.uint8)
    img[0, 5:8, 5:8, 0] = 255
    img[1, 30:33, 30:33, 0] = 255
    a = np.zeros(2, np.int64)
    r = net.predict(img, a, img)[0]
    assert r.shape == (2,) and abs(r[0] - r[1]) > 1e-6
    before = {k: v.clone() for k, v in net.named_parameters()}
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    target = torch.tensor([1.0, -1.0])
    imgs, acts = torch.from_numpy(img), torch.from_numpy(a)
    for _ in range(30):  # the reward of the dot's place: right-bottom bad, left-top good
        loss = ((net(imgs, acts, imgs, torch.zeros(2)) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1
    changed = {k for k, v in net.named_parameters() if not torch.equal(v, before[k])}
    assert changed >= {k for k in before if k != "absorbing_reward"}
    again = build_reward_net(net.config)
    again.load_state_dict(net.state_dict())
    np.testing.assert_allclose(again.predict(img, a, img)[0], net.predict(img, a, img)[0], rtol=1e-5)
    with pytest.raises(ValueError, match="flat' or 'spatial"):
        CNNReward(space, gym.spaces.Discrete(5), features="dense")


def _dot(ys: list[int], xs: list[int], size: int = 40) -> np.ndarray:
    """``[n, size, size, 3]`` uint8 images with a 3x3 red dot at each (y, x) and a green one at (30, 30)."""
    img = np.zeros((len(ys), size, size, 3), np.uint8)
    for i, (y, x) in enumerate(zip(ys, xs)):
        img[i, y : y + 3, x : x + 3, 0] = 255
        img[i, 30:33, 30:33, 1] = 255
    return img


def test_keypoint_cnn_points_at_the_dots_before_training() -> None:
    """Standardised maps: the red and green channels' keypoints sit on their dots, untrained
    (pooled 2x2: 20x20 cells from -1 to 1, so pixel p is at (p / 2 - 0.25) / 19 * 2 - 1)."""
    from prefrl.rewards import CNNReward
    from prefrl.rewards.cnn import cnn_architecture

    space = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    arch: dict[str, Any] = cnn_architecture(space, features="spatial")
    net = CNNReward(space, gym.spaces.Discrete(5), ensemble_size=2, features="spatial", **arch)
    kp = net.keypoints(torch.from_numpy(_dot([5, 20], [6, 24])))  # [E, 2, maps, 2]
    assert kp.shape == (2, 2, 3 + 8, 2)

    def coord(p: float) -> float:  # a 3-pixel dot starting at p, centre p + 1
        return ((p + 1) / 2 - 0.25) / 19 * 2 - 1

    for i, (y, x) in enumerate([(5, 6), (20, 24)]):
        np.testing.assert_allclose(kp[:, i, 0].numpy(), [[coord(x), coord(y)]] * 2, atol=0.05)  # red
        np.testing.assert_allclose(kp[:, i, 1].numpy(), [[coord(30), coord(30)]] * 2, atol=0.05)  # green


def test_keypoint_cnn_reading_s_next_sees_the_displacement() -> None:
    """With ``use_next_obs`` the keypoint CNN reads kp(s) and kp(s') - kp(s) in grid cells (not two
    stacked images): a dot moved 4 pixels right is 2 pooled cells on the red x, 0 elsewhere; a step
    that moves nothing reads 0 whatever the images; batched, per member and reloaded alike."""
    from prefrl.rewards import CNNReward, build_reward_net

    space = gym.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    net = CNNReward(space, gym.spaces.Discrete(5), ensemble_size=2, features="spatial", channels=(4,),
                    kernels=(1,), strides=(1,), hidden=(8,), use_next_obs=True)  # fmt: skip
    s, moved = torch.from_numpy(_dot([10, 10], [10, 10])), torch.from_numpy(_dot([10, 10], [14, 10]))
    disp = net.displacement(s, moved)  # [E, 2, maps, 2]
    assert disp.shape == (2, 2, 3 + 4, 2)
    np.testing.assert_allclose(disp[:, 0, 0].numpy(), [[2.0, 0.0]] * 2, atol=0.1)  # red moved 2 cells right
    np.testing.assert_allclose(disp[:, 0, 1].numpy(), 0.0, atol=1e-4)  # green stayed
    torch.testing.assert_close(disp[:, 1], torch.zeros_like(disp[:, 1]))  # the same image: nothing moved
    a = torch.tensor([4, 4])
    r = net(s, a, moved, None)
    assert r.shape == (2, 2) and not torch.allclose(r[:, 0], r[:, 1])
    feats = net.encode(s.view(1, 2, 40, 40, 3), a.view(1, 2), moved.view(1, 2, 40, 40, 3), torch.zeros(1, 2))
    torch.testing.assert_close(net.score(feats).view(2, 2), r)
    stacked = {k: v.unsqueeze(0).expand(2, *v.shape) for k, v in feats.items()}
    torch.testing.assert_close(net.score(stacked, per_member=True).view(2, 2), r)
    again = build_reward_net(net.config)
    again.load_state_dict(net.state_dict())
    torch.testing.assert_close(again(s, a, moved, None), r)


def test_keypoint_motion_locates_each_frame_of_a_clip_once_with_the_same_rewards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Clips whose s' is the next step's s are scored from L + 1 frames instead of 2L: the
    rewards equal those of the same transitions scored one by one (where frames are not shared),
    batched and per member, and so do their gradients."""
    from prefrl.rewards import CNNReward

    space = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)
    net = CNNReward(space, gym.spaces.Discrete(5), ensemble_size=2, features="spatial", channels=(4,),
                    kernels=(1,), strides=(1,), hidden=(8,), use_next_obs=True)  # fmt: skip
    g = torch.Generator().manual_seed(0)
    frames = torch.randint(0, 256, (3, 2, 6, 16, 16, 3), dtype=torch.uint8, generator=g)  # [B, 2, L + 1, ...]
    acts, dones = torch.randint(0, 5, (3, 2, 5), generator=g), torch.zeros(3, 2, 5)
    obs, nxt = frames[:, :, :-1], frames[:, :, 1:]
    calls: list[int] = []
    keypoints = net._keypoints

    def counted(x: torch.Tensor) -> torch.Tensor:
        calls.append(x.shape[0])
        return keypoints(x)

    monkeypatch.setattr(net, "_keypoints", counted)
    clip = net.score(net.encode(obs, acts, nxt, dones))  # [E, 3, 2, 5]
    assert calls == [3 * 2 * 6]  # 36 frames, not 60
    # the same 30 transitions one by one, reversed: no s' is the next s, every frame is located twice
    single = net.encode(obs.reshape(30, 16, 16, 3).flip(0), acts.reshape(30).flip(0),
                        nxt.reshape(30, 16, 16, 3).flip(0), dones.reshape(30))  # fmt: skip
    one_by_one = net.score(single)
    assert calls[-1] == 60
    torch.testing.assert_close(clip, one_by_one.flip(1).view(2, 3, 2, 5))
    feats = net.encode(obs, acts, nxt, dones)
    per = {k: v.unsqueeze(0).expand(2, *v.shape) for k, v in feats.items()}
    torch.testing.assert_close(net.score(per, per_member=True), clip)
    (grad_shared,) = torch.autograd.grad(net.score(feats).sum(), net.sharpness)
    (grad_single,) = torch.autograd.grad(net.score(single).sum(), net.sharpness)
    torch.testing.assert_close(grad_shared, grad_single)


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_action_heads_pay_the_taken_actions_output(kind: str, tmp_path) -> None:
    """One output per Discrete action: the reward is the taken action's column, the same per
    member and batched, the action is no input, and the choice survives save/load."""
    from prefrl.rewards.inference import FastReward, reward_fn

    acts_space = spaces.Discrete(4, start=1)
    obs_space: spaces.Box
    net: MLPReward | CNNReward
    if kind == "mlp":
        obs_space = BOX3
        net = MLPReward(obs_space, acts_space, ensemble_size=2, action_heads=True)
        obs = torch.randn(5, 6, 3)
        trunk = net.mlp
    else:
        obs_space = spaces.Box(0, 255, (16, 16, 3), np.uint8)
        net = CNNReward(obs_space, acts_space, ensemble_size=2, channels=(4,), kernels=(3,), strides=(2,),
                        hidden=(8,), features="spatial", action_heads=True)  # fmt: skip
        obs = torch.randint(0, 256, (5, 6, 16, 16, 3), dtype=torch.uint8)
        trunk = net.head
    assert trunk.linears[-1].weight.shape[-1] == 4  # [E, in, actions]
    acts = torch.randint(1, 5, (5, 6))
    dones = torch.zeros(5, 6)
    r = net(obs, acts, obs, dones)
    assert r.shape == (2, 5, 6)
    feats = net.encode(obs, acts, obs, dones)
    torch.testing.assert_close(feats["act"], acts - 1)
    # every action's reward at once, by asking for each action in turn: the taken one's is r
    each = torch.stack([net(obs, torch.full_like(acts, a), obs, dones) for a in range(1, 5)], -1)
    torch.testing.assert_close(each.gather(-1, (acts - 1).expand(2, -1, -1).unsqueeze(-1)).squeeze(-1), r)
    assert (each.std(-1) > 0).all()  # the actions are paid differently
    stacked = {k: v.unsqueeze(0).expand(2, *v.shape) for k, v in feats.items()}
    torch.testing.assert_close(net.score(stacked, per_member=True), r)
    path = save_reward_net(net, tmp_path / "r.safetensors")
    again = load_reward_net(path)
    assert again.action_heads and again.config["action_heads"] is True
    torch.testing.assert_close(again(obs, acts, obs, dones), r)
    fn = reward_fn(net)  # the NumPy fast path picks the taken action's head too
    assert isinstance(fn, FastReward)
    got = fn(obs[0].numpy(), acts[0].numpy(), obs[0].numpy(), dones[0].numpy())
    np.testing.assert_allclose(got, r.detach().mean(0)[0].numpy(), rtol=1e-5, atol=1e-6)


def test_action_heads_need_a_discrete_action_that_the_reward_reads() -> None:
    with pytest.raises(ValueError, match="Discrete action space"):
        MLPReward(BOX3, BOX1, action_heads=True)
    with pytest.raises(ValueError, match="use_act=False"):
        MLPReward(BOX3, spaces.Discrete(3), use_act=False, action_heads=True)
    with pytest.raises(ValueError, match="another input"):
        MLPReward(BOX3, spaces.Discrete(3), use_obs=False, action_heads=True)
    with pytest.raises(ValueError, match="Discrete action space"):
        CNNReward(spaces.Box(0, 255, (16, 16, 3), np.uint8), spaces.MultiDiscrete([2, 3]), action_heads=True)


@pytest.mark.slow
@pytest.mark.parametrize("reads", ["heads", "displacement"])
def test_keypoint_cnn_learns_the_moving_dots_progress_reward_from_pixels(reads: str) -> None:
    """200 oracle labels of 10-step random clips on the moving dot: the keypoint CNN with one
    output per action, or reading the keypoints' displacement to s' with a one-hot action (the
    default), correlates with the true per-step reward on unseen random transitions (offline,
    this draw: r = 0.88 with heads, 0.66 reading the displacement; another draw of 200 labels
    0.88 / 0.89, and of 800 labels 0.89 / 0.95: 200 labels leave the displacement variable)."""
    import prefrl  # noqa: F401  (registers the environment)
    from prefrl.data import PreferenceDataset, Trajectory, TrajectoryBatch, sample_fragments
    from prefrl.preference import RewardTrainer, RewardTrainerConfig
    from prefrl.rewards.cnn import cnn_architecture
    from prefrl.teachers import SyntheticTeacher

    env = gym.make("prefrl/MovingDot-v0")
    rng = np.random.default_rng(0)

    def random_episodes(n: int, seed: int) -> list[Trajectory]:
        out = []
        for i in range(n):
            obs, _ = env.reset(seed=seed + i)
            frames, acts, rews = [obs], [], []
            for _ in range(200):
                a = int(rng.integers(5))
                obs, r, *_ = env.step(a)
                frames.append(obs)
                acts.append(a)
                rews.append(r)
            rew = np.array(rews, np.float32)
            out.append(Trajectory(np.array(frames), np.array(acts), rew, truncated=True))
        return out

    torch.manual_seed(0)
    frags, _ = sample_fragments(TrajectoryBatch.from_trajectories(random_episodes(100, 0)), 400, 10, rng)
    pairs = np.arange(400).reshape(-1, 2)
    data = PreferenceDataset()
    data.add(frags, pairs, SyntheticTeacher("oracle").label(frags, pairs))
    arch: dict[str, Any] = cnn_architecture(env.observation_space, features="spatial")
    kw: dict[str, Any] = {"action_heads": True} if reads == "heads" else {"use_next_obs": True}
    space = env.observation_space
    net = CNNReward(space, env.action_space, ensemble_size=3, features="spatial", **kw, **arch)
    RewardTrainer(net, RewardTrainerConfig(epochs=10, val_fraction=0.0)).train(data)
    test = random_episodes(10, 10_000)
    obs = np.concatenate([t.obs[:-1] for t in test])
    acts = np.concatenate([t.acts for t in test])
    rews = np.concatenate([t.rews for t in test])
    pred, _ = net.predict(obs, acts, np.concatenate([t.obs[1:] for t in test]))
    assert np.corrcoef(pred, rews)[0, 1] > 0.5
