"""``prefrl train`` on image observations: policy and reward-net choice, Atari preprocessing,
the hidden score strip, and (slow) Pong end to end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecTransposeImage

from prefrl.agents.learned_reward import LearnedRewardVecEnv
from prefrl.agents.policies import resolve_policy
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.reward_signal import LearnedReward
from prefrl.agents.sb3 import AgentConfig, make_agent, make_env, make_vec_env, relabel_replay_buffer
from prefrl.cli.main import main
from prefrl.data.fragments import sample_fragments
from prefrl.envs.atari import SCORE_ROWS, HideScore, make_atari_env
from prefrl.envs.config import EnvConfig
from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.config import RewardNetConfig
from prefrl.rewards.io import load_reward_net
from prefrl.rewards.mlp import MLPReward
from prefrl.storage.clips import clip_frames

ACTS = spaces.Discrete(6)


def image(shape: tuple[int, ...]) -> spaces.Box:
    return spaces.Box(0, 255, shape, np.uint8)


@pytest.mark.parametrize(
    ("space", "policy"),
    [
        (image((84, 84, 3)), "CnnPolicy"),
        (image((4, 84, 84)), "CnnPolicy"),
        (image((84, 84, 4)), "CnnPolicy"),
        (image((16, 16, 3)), "CnnPolicy"),  # too small for SB3's Nature CNN: keypoints read it
        (image((10, 10, 3)), "MlpPolicy"),  # too small for any extractor
        (spaces.Box(0.0, 1.0, (84, 84, 3), np.float32), "MlpPolicy"),  # not uint8: not an image
        (spaces.Box(-1.0, 1.0, (3,)), "MlpPolicy"),
        (spaces.Dict({"img": image((84, 84, 3)), "pos": spaces.Box(-1.0, 1.0, (2,))}), "MultiInputPolicy"),
    ],
)
def test_auto_policy_follows_the_observation_space(space: spaces.Space, policy: str) -> None:
    assert resolve_policy("auto", space) == policy
    assert resolve_policy("MlpPolicy", space) == "MlpPolicy"  # an explicit choice is kept
    if space == image((16, 16, 3)):  # SB3's own CNN cannot read it: SBX, or the Nature CNN asked for
        assert resolve_policy("auto", space, "nature") == "MlpPolicy"
        assert resolve_policy("auto", space, "auto", "sbx") == "MlpPolicy"


def test_unknown_policy_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown SB3 policy 'CNNPolicy'"):
        resolve_policy("CNNPolicy", image((84, 84, 3)))


@pytest.mark.parametrize(
    "shape", [(84, 84, 3), (3, 84, 84), (84, 84, 4), (4, 84, 84), (40, 40, 3), (12, 12, 3)]
)
def test_auto_reward_net_is_a_cnn_for_images_of_any_layout(shape: tuple[int, ...]) -> None:
    net = RewardNetConfig().build(image(shape), ACTS)
    assert isinstance(net, CNNReward) and net.chw == (shape[0] < shape[-1])
    obs = torch.randint(0, 256, (2, 5, *shape), dtype=torch.uint8)  # [B, L, *shape]
    acts = torch.randint(0, 6, (2, 5))
    assert net(obs, acts, obs, None).shape == (3, 2, 5)  # [E, B, L]


@pytest.mark.parametrize(("shape", "want"), [((40, 40, 3), "spatial"), ((3, 64, 64), "spatial"),
                                           ((84, 84, 4), "flat"), ((3,), "flat")])  # fmt: skip
def test_auto_cnn_features_are_keypoints_for_small_images(shape: tuple[int, ...], want: str) -> None:
    space = image(shape) if len(shape) == 3 else spaces.Box(-1.0, 1.0, shape)
    cfg = RewardNetConfig()
    assert cfg.resolve_cnn_features(space) == want
    assert RewardNetConfig(cnn_features="flat").resolve_cnn_features(space) == "flat"
    if len(shape) == 3:
        net = dataclasses.replace(cfg, cnn_features=want).build(space, ACTS)
        assert isinstance(net, CNNReward) and net.spatial == (want == "spatial")


def test_vector_and_dict_observations_keep_the_mlp_and_kind_overrides() -> None:
    box = spaces.Box(-1.0, 1.0, (3,))
    dict_space = spaces.Dict({"img": image((84, 84, 3)), "pos": box})
    assert isinstance(RewardNetConfig().build(box, ACTS), MLPReward)
    assert isinstance(RewardNetConfig().build(dict_space, ACTS), MLPReward)
    assert isinstance(RewardNetConfig(kind="mlp").build(image((8, 8, 3)), ACTS), MLPReward)
    with pytest.raises(ValueError, match=r"--reward\.kind cnn needs uint8 image"):
        RewardNetConfig(kind="cnn").build(box, ACTS)


def test_pong_is_preprocessed_by_default_and_renders_full_frames() -> None:
    env = make_env("ALE/Pong-v5", render=True)
    assert env.observation_space == image((4, 84, 84))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == (210, 160, 3)  # what labellers see
    env.close()
    raw = make_env("ALE/Pong-v5", EnvConfig(id="ALE/Pong-v5", atari_preprocessing="off").parsed_kwargs())
    assert raw.observation_space.shape == (210, 160, 3)
    raw.close()


def test_hidden_score_is_blank_for_the_reward_model_and_the_rest_untouched() -> None:
    kw = EnvConfig(id="ALE/Pong-v5", hide_score=True).parsed_kwargs()
    seen, plain = make_env("ALE/Pong-v5", kw), make_env("ALE/Pong-v5")
    a, _ = seen.reset(seed=3)
    b, _ = plain.reset(seed=3)
    for t in range(30):
        a, *_ = seen.step(t % 6)
        b, *_ = plain.step(t % 6)
    assert b[:, :SCORE_ROWS].any()  # the score (and border) is there without hiding
    assert not a[:, :SCORE_ROWS].any()
    np.testing.assert_array_equal(a[:, SCORE_ROWS:], b[:, SCORE_ROWS:])
    seen.close()
    plain.close()
    with pytest.raises(ValueError, match="not an ALE game"):
        make_env("Pendulum-v1", {"hide_score": True})


def test_pong_with_hidden_score_gets_a_cnn_agent_and_reward() -> None:
    venv = make_vec_env("ALE/Pong-v5", 1, {"hide_score": True})
    assert venv.observation_space == image((4, 84, 84))  # pixel bounds stay [0, 255]
    agent = make_agent(AgentConfig(n_steps=64, batch_size=32), venv)  # NatureCNN accepts it
    assert type(agent).__name__ == "PPO" and "Cnn" in type(agent.policy).__name__
    assert isinstance(RewardNetConfig().build(venv.observation_space, venv.action_space), CNNReward)
    venv.close()


def test_hide_score_on_raw_colour_frames() -> None:
    env = make_atari_env("ALE/Pong-v5", preprocessing=False, hide_score=True)
    assert isinstance(env, HideScore) and env.rows == 25  # 10 of 84 rows -> 25 of 210
    obs, _ = env.reset(seed=0)
    assert obs.shape == (210, 160, 3) and not obs[:25].any() and obs[25:].any()
    env.close()


def test_learned_reward_sees_the_layout_it_was_built_for() -> None:
    """SB3 transposes channel-last images for the agent outside the learned-reward wrapper; the
    reward model (built for HWC) gets HWC, also when an off-policy buffer is relabelled."""
    venv = make_vec_env("prefrl/MovingDot-v0", 1)
    net = RewardNetConfig().build(venv.observation_space, venv.action_space)
    assert isinstance(net, CNNReward) and not net.chw
    seen: list[tuple[int, ...]] = []

    def reward_fn(obs: np.ndarray, acts: np.ndarray, next_obs: np.ndarray, dones: np.ndarray) -> np.ndarray:
        seen.append(obs.shape[1:])
        return net.predict(obs, acts, next_obs, dones)[0]

    reward = LearnedReward(net)
    agent = make_agent(AgentConfig(algo="ppo", n_steps=32, batch_size=32), LearnedRewardVecEnv(venv, reward))
    assert (
        isinstance(agent.get_env(), VecTransposeImage)
        and agent.policy.__class__.__name__ == "ActorCriticCnnPolicy"
    )
    agent.learn(32)  # the reward model would raise on [3, 40, 40] images
    from stable_baselines3 import DQN

    dqn = DQN("CnnPolicy", LearnedRewardVecEnv(make_vec_env("prefrl/MovingDot-v0", 1), reward),
              buffer_size=100, learning_starts=100)  # fmt: skip
    dqn.learn(20)
    assert dqn.replay_buffer is not None and dqn.replay_buffer.observations.shape[2:] == (3, 40, 40)
    assert relabel_replay_buffer(dqn, reward_fn).shape == (20,) and seen == [(40, 40, 3)]


@pytest.mark.slow  # about 2 minutes on 2 CPU cores
def test_pong_trains_end_to_end_with_a_cnn_reward(tmp_path: Path) -> None:
    run = tmp_path / "pong"
    code = main([
        "train", "--env.id", "ALE/Pong-v5", "--agent.n-steps", "256",
        "--agent.batch-size", "64", "--loop.total-steps", "3000", "--loop.initial-steps", "500",
        "--loop.iterations", "2", "--loop.total-labels", "10", "--loop.fragment-length", "25",
        "--eval-episodes", "1", "--run-dir", str(run), "--no-progress",
    ])  # fmt: skip
    assert code == 0
    report = json.loads((run / "report.json").read_text())
    assert report["agent"] == "ppo"  # chosen from the discrete action space
    assert report["eval"] == "sampled"  # discrete actions on images: sampled, as RL Zoo evaluates Atari
    assert np.isfinite(report["true_return"]) and report["labels_used"] > 0
    net = load_reward_net(run / "reward.safetensors")
    assert isinstance(net, CNNReward) and net.image_shape == (4, 84, 84)
    conf = json.loads((run / "config.json").read_text())
    assert net.action_heads and conf["reward"]["action_heads"] is True  # auto: a CNN, Discrete actions


def test_labellers_see_rendered_game_frames_and_stacks_show_their_last_frame() -> None:
    recorder = TrajectoryRecorder(make_vec_env("ALE/Pong-v5", 1, render=True), render=True)
    recorder.reset()
    for _ in range(40):
        recorder.step(np.array([recorder.action_space.sample()]))
    batch = recorder.pop_episodes(include_partial=True)
    assert batch is not None
    frags, _ = sample_fragments(batch, 2, 10, np.random.default_rng(0))
    shown = clip_frames(frags, np.arange(2))
    assert shown.shape == (2, 10, 210, 160, 3) and shown.std() > 0  # the colour game, not the stack
    bare = dataclasses.replace(frags, table_frames=None)
    np.testing.assert_array_equal(
        clip_frames(bare, np.arange(2))[..., 0], bare.table_obs[bare.window(np.arange(2))][:, :, -1]
    )


@pytest.mark.parametrize(("acts", "want"), [(spaces.Discrete(5), True), (spaces.MultiDiscrete([2, 3]), False),
                                          (spaces.Box(-1.0, 1.0, (2,)), False)])  # fmt: skip
def test_auto_action_heads_for_a_cnn_reward_of_discrete_actions(acts: spaces.Space, want: bool) -> None:
    """auto: one reward output per action where a CNN reward reads a Discrete action and not the
    keypoints' displacement (not for the MLP: vectors keep the one-hot input); an explicit choice
    wins and reaches the network."""
    cfg, img, vec = RewardNetConfig(), image((84, 84, 3)), spaces.Box(-1.0, 1.0, (3,))
    assert cfg.resolve_action_heads(img, acts) is want
    small = image((40, 40, 3))  # keypoints, reading s' by default: the displacement says what was done
    assert cfg.resolve_next_obs(small) is True and cfg.resolve_action_heads(small, acts) is False
    assert RewardNetConfig(use_next_obs=False).resolve_action_heads(small, acts) is want
    assert RewardNetConfig(cnn_features="flat").resolve_action_heads(small, acts) is want
    assert cfg.resolve_action_heads(vec, acts) is False
    assert RewardNetConfig(kind="mlp").resolve_action_heads(img, acts) is False
    assert RewardNetConfig(action_heads=False).resolve_action_heads(img, spaces.Discrete(5)) is False
    assert RewardNetConfig(action_heads=True).resolve_action_heads(vec, spaces.Discrete(5)) is True
    assert RewardNetConfig(use_act=False).resolve_action_heads(img, spaces.Discrete(5)) is False
    for obs in (img, vec):
        net = dataclasses.replace(cfg, action_heads=want).build(obs, acts)
        assert net.action_heads is want and net.config["action_heads"] is want


def _fit_pong_reward(output: str, length: int, batch: int, steps: int) -> tuple[float, np.ndarray]:
    """A flat CNN reward of Pong's frames fitted to oracle labels of 150 pairs of random clips
    (``length`` steps) with the default trainer (learning rate included): (training accuracy,
    per-step rewards ``[N, L]``)."""
    from prefrl.agents.rollout import collect_episodes
    from prefrl.data.dataset import PreferenceDataset
    from prefrl.preference.trainer import RewardTrainer, RewardTrainerConfig
    from prefrl.rewards.encode import fragment_rewards
    from prefrl.teachers.synthetic import SyntheticTeacher

    env = make_env("ALE/Pong-v5", {"hide_score": True})
    eps = collect_episodes(env, n_steps=2000, seed=0)
    frags, _ = sample_fragments(eps, 300, length, np.random.default_rng(0))
    env.close()
    pairs = np.arange(300).reshape(-1, 2)
    data = PreferenceDataset()
    data.add(frags, pairs, SyntheticTeacher("oracle").label(frags, pairs))
    torch.manual_seed(0)
    cfg = RewardNetConfig(use_act=False, cnn_features="flat", output=output)  # type: ignore[arg-type]
    net = cfg.resolved(env.observation_space, env.action_space).build(env.observation_space, env.action_space)
    trainer = RewardTrainerConfig(max_steps=steps, epochs=1e6, batch_size=batch, seed=0)
    metrics = RewardTrainer(net, trainer).train(data)
    return metrics["train_accuracy"], fragment_rewards(net, frags).mean(0).cpu().numpy()


def test_a_flat_cnn_reward_is_linear_by_default_and_learns_pong() -> None:
    """``--reward.output auto`` keeps a flat CNN linear, also where episodes terminate (Pong's
    do), and ``--trainer.lr auto`` fits it at a tenth of the usual rate. At the usual rate its
    tanh output saturated on Pong: the head reads thousands of features whose shared part (the
    background) Adam's steps turned into jumps of the output's level, until every frame paid
    exactly +1 or -1 and the gradient was gone; with the linear output its convolutions died a
    few updates later (docs/benchmarks/pixels.md). The reward learns Pong's labels."""
    from prefrl.preference.trainer import FLAT_CNN_LR
    from prefrl.run.config import TrainConfig
    from prefrl.run.resolve import resolve

    used = resolve(TrainConfig(env=EnvConfig(id="ALE/Pong-v5", hide_score=True)))
    assert used.reward.cnn_features == "flat" and used.reward.output == "linear"
    assert used.trainer.lr == FLAT_CNN_LR  # its convolutions died at the usual rate
    acc, r = _fit_pong_reward(used.reward.output, length=5, batch=16, steps=50)
    assert acc > 0.9 and r.std() > 1e-3  # ranks the labelled pairs; frames are paid differently
