"""Episode ends, hand-computed: falls and goals continue in an absorbing state, time limits never do."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

from prefrl.agents.learned_reward import LearnedRewardVecEnv
from prefrl.agents.reward_signal import LearnedReward
from prefrl.data import Fragments, PreferenceDataset, Trajectory, TrajectoryBatch, sample_fragments
from prefrl.data.fragments import window_counts
from prefrl.preference import RewardTrainer, RewardTrainerConfig
from prefrl.rewards import MLPReward
from prefrl.rewards.encode import encode_fragments
from prefrl.rewards.normalization import RewardNormalizer
from prefrl.teachers import SyntheticTeacher
from tests.narrow import array, present


def episode(rews: list[float], terminated: bool, truncated: bool = False, first: float = 0.0) -> Trajectory:
    """A 1-d episode: observation t is ``first + t``, action t is ``10 + t``."""
    t = len(rews)
    return Trajectory(
        obs=(first + np.arange(t + 1, dtype=np.float32))[:, None],
        acts=(10 + np.arange(t, dtype=np.float32))[:, None],
        rews=np.asarray(rews, dtype=np.float32),
        terminated=terminated,
        truncated=truncated,
    )


def clip(batch: TrajectoryBatch, ep: int, start: int, length: int) -> Fragments:
    """The one clip of ``length`` starting at ``start`` of episode ``ep``."""
    left = int(batch.lengths[ep]) - start
    real = np.array([min(length, left)]) if batch.terminated[ep] else None
    return Fragments(batch.obs, batch.acts, batch.rews, batch.dones, np.array([batch.starts[ep] + start]),
                     length, np.array([ep]), np.array([start]), None, real)  # fmt: skip


def test_a_clip_that_ends_in_a_fall_continues_in_the_absorbing_state() -> None:
    # CartPole-like: +1 per step, the pole falls after 3 steps
    b = TrajectoryBatch.from_trajectories([episode([1, 1, 1], terminated=True)])
    f = clip(b, 0, 1, 5)
    a = f.arrays()
    np.testing.assert_array_equal(present(a.rews)[0], [1, 1, 0, 0, 0])  # nothing more happens
    np.testing.assert_array_equal(a.absorbing[0], [False, False, True, True, True])
    np.testing.assert_array_equal(a.obs[0, :, 0], [1, 2, 3, 3, 3])  # the terminal observation, held
    np.testing.assert_array_equal(a.next_obs[0, :, 0], [2, 3, 3, 3, 3])
    np.testing.assert_array_equal(a.acts[0, :, 0], [11, 12, 0, 0, 0])
    np.testing.assert_array_equal(a.dones[0], [False, True, False, False, False])
    assert f.returns()[0] == 2.0  # a clip that survives all 5 steps would return 5: no tie


def test_a_clip_that_reaches_the_goal_beats_one_that_runs_out_of_time() -> None:
    # sparse reward: 10 on reaching the goal (termination), 0 otherwise; the other episode
    # is cut off by a time limit after 6 steps without reaching it
    goal = episode([0, 10], terminated=True)
    timeout = episode([0] * 6, terminated=False, truncated=True, first=100)
    b = TrajectoryBatch.from_trajectories([goal, timeout])
    assert window_counts(b, 4).tolist() == [2, 3]  # the goal episode: a clip from each step
    pair = Fragments.concat([clip(b, 0, 0, 4), clip(b, 1, 0, 4)])
    np.testing.assert_array_equal(pair.rews, [[0, 10, 0, 0], [0, 0, 0, 0]])
    assert pair.reals.tolist() == [2, 4]
    assert SyntheticTeacher("oracle").label(pair, np.array([[0, 1]])).tolist() == [1.0]


def test_clips_never_run_past_a_time_limit() -> None:
    b = TrajectoryBatch.from_trajectories([episode([1] * 4, terminated=False, truncated=True)])
    assert window_counts(b, 3).tolist() == [2]  # T - L + 1
    f, _ = sample_fragments(b, 200, 3, np.random.default_rng(0))
    assert f.real is None and not f.arrays().absorbing.any()
    assert set(f.start.tolist()) == {0, 1}
    with pytest.raises(ValueError, match=r"longer than every episode .* none terminated"):
        sample_fragments(b, 10, 5, np.random.default_rng(0))


def test_short_terminated_episodes_give_clips_of_full_length() -> None:
    b = TrajectoryBatch.from_trajectories(
        [episode([1, 1], terminated=True), episode([1] * 30, terminated=True)]
    )
    f, rep = sample_fragments(b, 2000, 10, np.random.default_rng(0))
    assert rep.short_episodes == 0 and rep.windows == 2 + 30
    a = f.arrays()
    assert a.obs.shape == (2000, 10, 1)
    # every clip starting k steps before its end has exactly k real steps
    left = b.lengths[f.episode] - f.start
    np.testing.assert_array_equal(f.reals, np.minimum(10, left))
    np.testing.assert_array_equal(a.absorbing.sum(1), 10 - f.reals)
    np.testing.assert_array_equal(present(a.rews).sum(1), f.reals)


def test_weights_favour_episodes_but_keep_windows_uniform_within_one() -> None:
    b = TrajectoryBatch.from_trajectories([episode([0] * 20, True), episode([0] * 20, False, True, 100)])
    f, _ = sample_fragments(b, 4000, 5, np.random.default_rng(0), weights=np.array([3.0, 1.0]))
    share = np.mean(f.episode == 0)  # 3 * 20 windows against 1 * 16
    assert abs(share - 60 / 76) < 0.03
    with pytest.raises(ValueError, match="weights"):
        sample_fragments(b, 10, 5, np.random.default_rng(0), weights=np.array([1.0, -1.0]))


def test_the_reward_model_scores_absorbing_steps_with_its_learned_value() -> None:
    b = TrajectoryBatch.from_trajectories([episode([1, 1, 1], terminated=True)])
    env_like = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    net = MLPReward(env_like, env_like, hidden=(8,), ensemble_size=2)
    with torch.no_grad():
        net.absorbing_reward.copy_(torch.tensor([-3.0, -5.0]))
    feats = encode_fragments(net, clip(b, 0, 1, 5))
    r = net.score(feats)  # [E, 1, 5]
    np.testing.assert_allclose(r[:, 0, 2:].detach().numpy(), [[-3, -3, -3], [-5, -5, -5]])
    r.sum().backward()
    assert net.absorbing_reward.grad is not None and net.absorbing_reward.grad.tolist() == [3.0, 3.0]
    assert net.absorbing_value() == -4.0


def test_a_median_absorbing_state_is_worth_the_batch_typical_step() -> None:
    b = TrajectoryBatch.from_trajectories([episode([1, 1, 1, 1, 1, 1], terminated=True)])
    env_like = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    net = MLPReward(env_like, env_like, hidden=(8,), ensemble_size=2)
    net.set_absorbing("median")
    feats = encode_fragments(net, Fragments.concat([clip(b, 0, 3, 5), clip(b, 0, 0, 5)]))
    raw = net.score({k: v for k, v in feats.items() if k != "absorbing"})  # [E, 2, 5]
    real = ~feats["absorbing"]  # 3 + 5 real steps
    r = net.score(feats)
    for e in range(2):
        want = torch.nanmedian(raw[e][real]).item()
        np.testing.assert_allclose(r[e][~real].detach().numpy(), want, rtol=1e-6)
        assert net.absorbing_reward[e].item() == pytest.approx(want)  # kept: what the agent is told
    r[:, ~real].sum().backward()  # the ends move the network's typical step, not a free scalar
    assert net.absorbing_reward.grad is not None and not net.absorbing_reward.grad.any()
    assert all(
        p.grad is not None and p.grad.abs().sum() > 0
        for n, p in net.named_parameters()
        if n != "absorbing_reward"
    )
    net.eval()
    with torch.no_grad():
        net.absorbing_reward.fill_(7.0)
        net.score(feats)
    assert net.absorbing_value() == 7.0  # scoring outside training leaves the kept anchor alone
    with pytest.raises(ValueError, match="absorbing-state mode 'mean'"):
        net.set_absorbing("mean")


def _coin_or_nothing(mode: str, seed: int) -> tuple[float, float]:
    """Train a one-input reward on 200 oracle pairs of 5-step clips: a clip that reaches a coin
    (observation 1, reward 10) and ends there, against one of ordinary steps (observations in
    [0, 0.2], reward 0) that never ends. Returns what the coin and the absorbing state are
    worth above an ordinary step."""
    rng = np.random.default_rng(seed)
    coins = [episode([0.0] * 8 + [10.0], terminated=True) for _ in range(20)]
    nothing = [episode([0.0] * 30, terminated=False, truncated=True) for _ in range(20)]
    for t in coins:
        t.obs[:, 0] = np.r_[rng.uniform(0, 0.2, 8), 1.0, 1.0]
    for t in nothing:
        t.obs[:, 0] = rng.uniform(0, 0.2, 31)
    b = TrajectoryBatch.from_trajectories(coins + nothing)
    frs = []
    for _ in range(200):
        frs += [clip(b, int(rng.integers(20)), int(rng.integers(5, 9)), 5)]  # the coin, then the end
        frs += [clip(b, 20 + int(rng.integers(20)), int(rng.integers(0, 25)), 5)]
    f = Fragments.concat(frs)
    pairs = np.arange(len(frs)).reshape(-1, 2)
    ds = PreferenceDataset()
    ds.add(f, pairs, SyntheticTeacher("oracle").label(f, pairs))
    torch.manual_seed(seed)
    space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    net = MLPReward(space, space, hidden=(16,), ensemble_size=1, use_act=False, use_next_obs=False)
    net.set_absorbing(mode)
    RewardTrainer(net, RewardTrainerConfig(epochs=30, val_fraction=0.0, seed=seed)).train(ds)
    zero = np.zeros((2, 1), np.float32)
    r, _ = net.predict(np.array([[0.1], [1.0]], np.float32), zero, zero)
    return float(r[1] - r[0]), net.absorbing_value() - float(r[0])


@pytest.mark.parametrize("seed", [0, 1])
def test_a_median_absorbing_state_leaves_the_coins_win_to_the_coin(seed: int) -> None:
    learned_coin, learned_end = _coin_or_nothing("learned", seed)
    assert learned_end > 0.25 * learned_coin  # learned: the end takes a share of the coin's win
    coin, end = _coin_or_nothing("median", seed)
    assert abs(end) < 0.1 * coin  # median: the end is a typical step
    assert coin > 1.2 * learned_coin  # and the coin carries the win


def test_normalisation_without_centring_keeps_zero_at_zero() -> None:
    n = RewardNormalizer(center=False)
    n.reset_to(np.array([1.0, 3.0]))  # mean 2, var 1: rms sqrt(5)
    np.testing.assert_allclose(
        n(np.array([0.0, 1.0, -2.0])), np.array([0.0, 1.0, -2.0]) / np.sqrt(5), rtol=1e-6
    )
    centred = RewardNormalizer()
    centred.reset_to(np.array([1.0, 3.0]))
    np.testing.assert_allclose(centred(np.array([2.0])), [0.0], atol=1e-6)
    state = n.state_dict()
    again = RewardNormalizer()
    again.load_state_dict(state)
    assert again.center is False


def test_agent_reward_at_a_terminal_transition_is_measured_from_the_absorbing_state() -> None:
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    net = MLPReward(venv.observation_space, venv.action_space, hidden=(8,), ensemble_size=1)
    with torch.no_grad():
        net.absorbing_reward.fill_(0.25)
    reward = LearnedReward(net)
    reward.normalizer.center = False
    reward.normalizer.reset_to(np.array([2.0]))  # rms 2: agent reward = (r - 0.25) / 2
    wrapped = LearnedRewardVecEnv(venv, reward)
    reward.update_stats = False
    obs = wrapped.reset()
    for _ in range(500):  # always push right: the pole falls within a few dozen steps
        prev = obs
        obs, rews, dones, infos = wrapped.step(np.array([1]))
        if dones[0]:
            break
    assert dones[0] and not infos[0].get("TimeLimit.truncated", False)
    last = infos[0]["terminal_observation"][None]
    expect = net.predict(array(prev), np.array([1]), last, np.array([True]))[0][0]
    assert infos[0]["learned_reward"] == pytest.approx(expect - 0.25, abs=1e-5)
    assert rews[0] == pytest.approx((expect - 0.25) / np.sqrt(4.0 + 1e-8), abs=1e-5)


def test_only_ends_draws_clips_that_contain_a_termination() -> None:
    eps = [episode([1] * 30, True), episode([1] * 3, True, first=50), episode([0] * 40, False, True, 100)]
    b = TrajectoryBatch.from_trajectories(eps)
    assert window_counts(b, 10, only_ends=True).tolist() == [10, 3, 0]
    f, _ = sample_fragments(b, 3000, 10, np.random.default_rng(0), only_ends=True)
    assert set(f.episode.tolist()) == {0, 1}
    assert (f.reals < 10).sum() + (f.start == 20).sum() == len(f)  # every clip reaches the end
    assert f.start[f.episode == 0].min() == 20 and f.arrays().dones.any(1).all()
    with pytest.raises(ValueError, match="no episode in the batch terminated"):
        sample_fragments(TrajectoryBatch.from_trajectories([episode([0] * 40, False, True)]), 5, 10,
                         np.random.default_rng(0), only_ends=True)  # fmt: skip


def test_people_see_the_last_frame_dimmed_after_a_fall() -> None:
    ep = episode([1, 1, 1], terminated=True)
    frames = np.full((3, 2, 2, 3), 200, np.uint8) + np.arange(3, dtype=np.uint8)[:, None, None, None]
    ep = Trajectory(ep.obs, ep.acts, ep.rews, terminated=True, infos={"frames": frames})
    b = TrajectoryBatch.from_trajectories([ep])
    f = clip(b, 0, 1, 5)
    f = Fragments(f.table_obs, f.table_acts, f.table_rews, f.table_dones, f.rows, 5, f.episode, f.start,
                  b.infos["frames"], f.real)  # fmt: skip
    shown = f.frames()[0, :, 0, 0, 0]  # [L]
    assert shown.tolist() == [201, 202, 101, 101, 101]  # the frame before the last action, at half brightness
