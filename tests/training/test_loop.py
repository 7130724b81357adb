"""The preference loop end to end, on real Gymnasium envs and real SB3 agents (tiny budgets)."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import gymnasium as gym
import numpy as np
import pytest
import torch

from prefrl.agents.learned_reward import LearnedRewardVecEnv
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.reward_signal import LearnedReward
from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import AgentConfig, make_agent, make_env, make_vec_env
from prefrl.data.fragments import Fragments
from prefrl.preference import RewardTrainer, RewardTrainerConfig
from prefrl.rewards import MLPReward
from prefrl.teachers import SyntheticTeacher
from prefrl.training.callbacks import LoopCallback
from prefrl.training.config import LoopConfig
from prefrl.training.loop import PreferenceLoop
from tests.narrow import present


def build(loop_cfg: LoopConfig, algo: str = "sac", teacher=None, env_id: str = "Pendulum-v1", tmp=None):
    rec = TrajectoryRecorder(make_vec_env(env_id, 1, seed=0))
    net = MLPReward(rec.observation_space, rec.action_space, hidden=(16, 16), ensemble_size=2)
    reward = LearnedReward(net)
    cfg = AgentConfig(algo=algo, net_arch=[16, 16], batch_size=32, n_steps=64)
    venv = LearnedRewardVecEnv(rec, reward, loop_cfg.hide_terminations, loop_cfg.hidden_end)
    agent = make_agent(cfg, venv, learning_starts=loop_cfg.random_steps)
    trainer = RewardTrainer(net, RewardTrainerConfig(epochs=2))
    return PreferenceLoop(loop_cfg, net, trainer, teacher or SyntheticTeacher("oracle"), agent=agent,
                          recorder=rec, reward=reward, side_env=make_env(env_id), run_dir=tmp)  # fmt: skip


def test_sac_loop_spends_the_label_budget_and_relabels(tmp_path) -> None:
    cfg = LoopConfig(total_steps=800, total_labels=6, iterations=3, initial_steps=200, fragment_length=20)
    loop = build(cfg, tmp=tmp_path)
    loop.run()
    assert loop.state.queries_asked == 6 and len(loop.dataset) == 6
    assert loop.env_steps == 800 and loop.agent.num_timesteps == 800
    # after the last reward update, every stored reward equals the current normalised reward
    buf = loop.agent.replay_buffer
    rows = buf.pos
    from prefrl.agents.sb3 import buffer_transitions

    obs, acts, nxt, done = buffer_transitions(loop.agent, slice(0, rows))
    expect = loop.reward.normalizer(loop.reward.raw(obs, acts, nxt, done))
    # rows added after the last relabel were written by the wrapper with the same reward
    np.testing.assert_allclose(buf.rewards[:rows, 0], expect, rtol=1e-4, atol=1e-4)
    assert (tmp_path / "preferences.npz").exists() and (tmp_path / "reward.safetensors").exists()
    assert "reward/pearson_true" in loop.state.history[-1]


class SkippingTeacher:
    """A real oracle that leaves every other pair unanswered (NaN)."""

    def __init__(self) -> None:
        self.inner = SyntheticTeacher("oracle")

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray:
        labels = self.inner.label(fragments, pairs)
        labels[::2] = np.nan
        return labels


def test_training_continues_when_teacher_answers_fewer() -> None:
    cfg = LoopConfig(total_steps=600, total_labels=8, iterations=2, initial_steps=200, fragment_length=20)
    loop = build(cfg, teacher=SkippingTeacher())
    loop.run()
    assert loop.state.queries_asked == 8 and len(loop.dataset) == 4
    assert loop.env_steps == 600


class LateTeacher:
    """An async oracle: answers a submitted batch on the second poll after it."""

    def __init__(self) -> None:
        self.inner = SyntheticTeacher("oracle")
        self.queue: list[list[Any]] = []  # [fragments, pairs, polls since submitted]

    def submit(self, fragments: Fragments, pairs: np.ndarray) -> None:
        self.queue.append([fragments, pairs, 0])

    def poll(self, all: bool = False) -> list:
        out = []
        for q in self.queue:
            q[2] += 1
        for q in [q for q in self.queue if q[2] >= 2]:
            out.append((q[0], q[1], self.inner.label(q[0], q[1])))
            self.queue.remove(q)
        return out

    def pending(self) -> int:
        return sum(len(q[1]) for q in self.queue)

    def resume(self) -> int:
        raise AssertionError("not resumed in these tests")


def test_a_teacher_of_neither_kind_is_refused() -> None:
    cfg = LoopConfig(total_steps=600, total_labels=8, iterations=2, initial_steps=200, fragment_length=20)
    with pytest.raises(TypeError, match=r"neither a Teacher .* nor an AsyncTeacher"):
        build(cfg, teacher=object())


def test_async_teacher_waits_only_while_dataset_empty() -> None:
    cfg = LoopConfig(total_steps=800, total_labels=6, iterations=3, initial_steps=200, fragment_length=20)
    teacher = LateTeacher()
    loop = build(cfg, teacher=teacher)
    loop.run()
    assert loop.state.queries_asked == 6
    assert len(loop.dataset) >= 2  # the first batch arrived (after waiting); later ones trail behind
    assert loop.env_steps == 800


def test_ppo_loop_and_offline_mode() -> None:
    cfg = LoopConfig(total_steps=600, total_labels=4, iterations=2, initial_steps=128, fragment_length=20)
    loop = build(cfg, algo="ppo")
    loop.run()
    assert len(loop.dataset) == 4 and loop.agent.num_timesteps >= 400
    env = make_env("Pendulum-v1")
    trajs = collect_episodes(env, n_episodes=3, seed=0)
    net = MLPReward(env.observation_space, env.action_space)
    before = [p.detach().clone() for p in net.parameters()]
    off = PreferenceLoop(LoopConfig(total_labels=10, iterations=2, fragment_length=20), net,
                         RewardTrainer(net, RewardTrainerConfig(epochs=2)), SyntheticTeacher("oracle"),
                         trajectories=trajs)  # fmt: skip
    off.run()
    assert len(off.dataset) == 10 and off.trainer.calls == 2
    assert any(not torch.equal(a, b) for a, b in zip(before, net.parameters()))  # the reward trained
    frags = off.dataset.fragments  # every clip comes from the given episodes
    assert frags is not None and set(frags.episode.tolist()) <= set(range(len(trajs)))


def test_terminating_env_runs_with_absorbing_clips() -> None:
    """CartPole episodes (often shorter than a clip) end in falls: no opt-out needed."""
    cfg = LoopConfig(total_steps=600, total_labels=4, iterations=2, initial_steps=300, fragment_length=30)
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    assert loop.reward.normalizer.center
    loop.run()
    assert len(loop.dataset) == 4
    frags = loop.dataset.fragments
    assert frags is not None and frags.real is not None and (frags.real < 30).any()
    assert not loop.reward.normalizer.center  # scale-only once an episode terminated
    assert loop.net.absorbing_reward.detach().abs().sum() > 0  # the absorbing reward was learned
    cfg = dataclasses.replace(cfg, end_clip_frac=1.0)  # every query clip contains a fall
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    loop.run()
    frags = loop.dataset.fragments
    assert frags is not None and frags.arrays().dones.any(1).all()


def test_hidden_ends_can_keep_the_agents_reward_centred() -> None:
    """With terminations hidden from the agent, center_hidden_ends keeps taking the running mean
    off its reward after CartPole's falls (the recipe's default switches to scale only there)."""
    cfg = LoopConfig(total_steps=600, total_labels=4, iterations=2, initial_steps=300, fragment_length=30,
                     hide_terminations=True)  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    loop.run()
    assert not loop.reward.normalizer.center  # told no end, but scale only all the same
    loop = build(dataclasses.replace(cfg, center_hidden_ends=True), algo="ppo", env_id="CartPole-v1")
    loop.run()
    norm = loop.reward.normalizer
    assert norm.center and norm.count > 0 and norm.mean != 0.0
    obs = np.stack([loop.side_env.observation_space.sample() for _ in range(8)])
    acts, dones = np.zeros(8, np.int64), np.zeros(8, bool)
    paid, raw = loop.reward(obs, acts, obs, dones)  # what the agent is paid for these steps
    np.testing.assert_allclose(paid, (raw - norm.mean) / norm.std, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="needs hide_terminations"):
        LoopConfig(center_hidden_ends=True)


def test_an_end_worth_the_median_step_keeps_the_agents_reward_centred_on_it() -> None:
    """end_value=median: after CartPole's falls, which the agent is told, its reward stays
    centred, on the median of its steps under the newest reward rather than on the absorbing
    state (which the default's scale-only normalisation keeps at 0)."""
    cfg = LoopConfig(total_steps=600, total_labels=4, iterations=2, initial_steps=300, fragment_length=30,
                     end_value="median")  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    loop.run()
    norm = loop.reward.normalizer
    assert norm.center and norm.shift == "median" and norm.count > 0 and norm.median != norm.mean
    obs = np.stack([loop.side_env.observation_space.sample() for _ in range(8)])
    acts, dones = np.zeros(8, np.int64), np.zeros(8, bool)
    paid, raw = loop.reward(obs, acts, obs, dones)  # what the agent is paid for these steps
    np.testing.assert_allclose(paid, (raw - norm.median) / norm.std, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="end_value=median says what an episode end"):
        LoopConfig(end_value="median", hide_terminations=True)
    with pytest.raises(ValueError, match="end_value=mean says what an episode end"):
        LoopConfig(end_value="mean", normalize_reward=False)
    with pytest.raises(ValueError, match="unknown end_value 'never'"):
        LoopConfig(end_value=cast(Any, "never"))


def test_clips_longer_than_every_episode_are_shortened_before_the_first_label(capsys) -> None:
    cfg = LoopConfig(total_steps=700, total_labels=4, iterations=2, initial_steps=450, fragment_length=300)
    loop = build(cfg)  # Pendulum: 200-step episodes, cut by a time limit
    loop.run()
    assert loop.state.fragment_length == 200 and loop.dataset.fragments.length == 200
    assert loop.config.fragment_length == 300  # the config stays as it was given
    assert "clips shortened from 300 to 200" in capsys.readouterr().err


@pytest.mark.slow
def test_sac_on_learned_reward_beats_random_on_true_reward() -> None:
    from prefrl.agents.evaluate import evaluate_returns

    cfg = LoopConfig(total_steps=8000, total_labels=20, iterations=8, initial_steps=1000, fragment_length=50,
                     initial_epoch_multiplier=5.0)  # fmt: skip
    rec = TrajectoryRecorder(make_vec_env("Pendulum-v1", 1, seed=0))
    net = MLPReward(rec.observation_space, rec.action_space, hidden=(64, 64), ensemble_size=3)
    reward = LearnedReward(net)
    agent = make_agent(AgentConfig(), LearnedRewardVecEnv(rec, reward), learning_starts=1000)
    trainer = RewardTrainer(net, RewardTrainerConfig(epochs=50, l2_init=0.0))
    loop = PreferenceLoop(cfg, net, trainer, SyntheticTeacher("oracle"), agent=agent, recorder=rec,
                          reward=reward, side_env=make_env("Pendulum-v1"))  # fmt: skip
    loop.run()
    learned = evaluate_returns("Pendulum-v1", loop.agent, 5).mean()
    random = evaluate_returns("Pendulum-v1", None, 5).mean()
    assert learned > random + 300, (learned, random)
    assert loop.state.history[-1]["reward/pearson_true"] > 0.5
    # the held-out accuracy (fresh clips ranked by the true reward): from the first trained
    # reward on, every iteration, and high once the reward is learned
    accs = [h.get("reward/heldout_accuracy") for h in loop.state.history]
    assert accs[0] is None and all(a is not None for a in accs[1:])
    last = [present(a) for a in accs[-3:]]
    assert np.mean(last) > 0.75, accs  # (clips of a good policy are close calls: not ~1)


class CountingEnv(gym.Wrapper):
    """Counts the steps taken in a real environment."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.steps = 0

    def step(self, action):
        self.steps += 1
        return self.env.step(action)


class IntrinsicSeen(LoopCallback):
    """Records, while the agent trains, whether the reward is the pre-training (intrinsic) one."""

    def __init__(self) -> None:
        self.seen: list[bool] = []

    def on_env_steps(self, loop, env_steps: int) -> None:
        self.seen.append(loop.reward.intrinsic is not None)


@pytest.mark.parametrize("on", [True, False])
def test_pretraining_exploration_mixing_and_active_selection(on: bool) -> None:
    cfg = LoopConfig(total_steps=900, total_labels=6, iterations=2, initial_steps=200,
                     pretrain_steps=200 if on else 0, fragment_length=20, exploration_frac=0.3 if on else 0.0,
                     active_selection=on, active_selection_from=0)  # fmt: skip
    loop = build(cfg)
    side, seen = CountingEnv(make_env("Pendulum-v1")), IntrinsicSeen()
    loop.side_env, loop.callbacks = side, [seen]
    metrics = loop.run()
    assert len(loop.dataset) == 6 and loop.env_steps == 900
    assert loop.reward.intrinsic is None  # back to the learned reward after pre-training
    # pre-training trained the agent on the state-entropy reward, and only then
    assert any(seen.seen) == on and not seen.seen[-1]
    # exploration mixing drew random-action episodes from the side env for the query clips
    assert (side.steps > 0) == on
    # active selection asked the pairs its ensemble disagrees on most
    assert ("labels/disagreement_chosen" in metrics) == on
    if on:
        assert metrics["labels/disagreement_chosen"] >= metrics["labels/disagreement_candidates"]
        # Pendulum never terminates: no chosen clip runs into the absorbing state
        assert metrics["labels/absorbing_share_chosen"] == metrics["labels/absorbing_share_candidates"] == 0.0


class TieTeacher:
    """A teacher who can never tell two clips apart (every answer a tie)."""

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray:
        return np.full(len(pairs), 0.5, dtype=np.float32)


@pytest.mark.parametrize("ties", [False, True])
def test_active_selection_waits_for_its_warm_up_labels(ties: bool) -> None:
    """Queries stay uniform until the reward has trained on active_selection_from labels that
    prefer a clip; ties do not count."""
    cfg = LoopConfig(total_steps=1200, total_labels=12, iterations=3, initial_steps=200,
                     initial_label_frac=0.25, fragment_length=20, active_selection=True,
                     active_selection_from=7)  # fmt: skip
    loop = build(cfg, teacher=TieTeacher() if ties else None)
    chose: list[tuple[int, bool]] = []
    query = loop._query

    def spy(n: int, batch, split: bool = False, ends: bool = False):
        assert not split and not ends  # the run watch's actions are off
        before = len(loop.dataset)
        out = query(n, batch, split, ends)
        chose.append((before, "labels/disagreement_chosen" in out))
        return out

    loop._query = spy
    loop.run()
    assert len(loop.dataset) == 12
    if ties:  # the ensemble learned nothing to disagree about: every query stayed uniform
        assert chose and not any(on for _, on in chose)
        return
    assert chose[0] == (0, False)  # the initial batch is uniform
    assert all(on == (before >= 7) for before, on in chose), chose
    assert any(on for _, on in chose) and not all(on for _, on in chose)


@pytest.mark.parametrize("teacher,explore", [("ties", True), ("ties", False), ("oracle", True)])
def test_the_agent_explores_while_every_label_is_a_tie(teacher: str, explore: bool) -> None:
    """A flat learned reward (all ties) is replaced by the state-entropy reward while it lasts."""
    cfg = LoopConfig(total_steps=900, total_labels=6, iterations=2, initial_steps=200, fragment_length=20,
                     tie_exploration=explore)  # fmt: skip
    loop = build(cfg, teacher=TieTeacher() if teacher == "ties" else None)
    seen = IntrinsicSeen()
    loop.callbacks = [seen]
    loop.run()
    want = teacher == "ties" and explore
    assert [h["agent/tie_exploration"] for h in loop.state.history] == [float(want)] * 2
    assert any(seen.seen) == want and seen.seen[-1] == want  # (not before the first labels)
    assert loop.reward.intrinsic is None  # the learned reward again once the run is over


def test_active_selection_from_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="active_selection_from must be >= 0"):
        LoopConfig(active_selection=True, active_selection_from=-1)


class FrameCheckingTeacher:
    """A real oracle that, like a person, needs rendered frames of both clips."""

    def __init__(self) -> None:
        self.inner, self.frames_seen = SyntheticTeacher("oracle"), 0

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray:
        frames = fragments.frames(pairs)  # [B, 2, L, H, W, 3]
        assert frames.dtype == np.uint8 and frames.shape[:3] == (len(pairs), 2, fragments.length)
        assert frames.std() > 0  # real pictures, not padding
        self.frames_seen += frames.shape[0]
        return self.inner.label(fragments, pairs)


def test_human_style_teacher_gets_rendered_frames() -> None:
    rec = TrajectoryRecorder(make_vec_env("Pendulum-v1", 1, seed=0, render=True), render=True)
    net = MLPReward(rec.observation_space, rec.action_space, hidden=(16, 16))
    reward = LearnedReward(net)
    agent = make_agent(AgentConfig(net_arch=[16, 16], batch_size=32), LearnedRewardVecEnv(rec, reward))
    teacher = FrameCheckingTeacher()
    cfg = LoopConfig(total_steps=240, total_labels=4, iterations=2, initial_steps=200, fragment_length=10)
    side = make_env("Pendulum-v1", render=True)
    trainer = RewardTrainer(net, RewardTrainerConfig(epochs=1))
    loop = PreferenceLoop(cfg, net, trainer, teacher, agent=agent, recorder=rec, reward=reward, side_env=side)
    loop.run()
    assert teacher.frames_seen == 4 and len(loop.dataset) == 4


@pytest.mark.parametrize("algo", ["td3", "a2c"])
def test_other_agents_run_the_loop(algo: str) -> None:
    cfg = LoopConfig(total_steps=400, total_labels=4, iterations=2, initial_steps=200, fragment_length=20)
    loop = build(cfg, algo=algo)
    loop.run()
    assert len(loop.dataset) == 4 and loop.env_steps == 400
    assert loop.off_policy == (algo == "td3")


@pytest.mark.slow  # ~10 s idle; the load-an-agent path also runs in test_resume
def test_warm_start_from_saved_policy(tmp_path) -> None:
    from prefrl.agents.policy_io import load_agent, save_agent

    first = build(
        LoopConfig(total_steps=400, total_labels=2, iterations=1, initial_steps=200, fragment_length=20)
    )
    first.run()
    save_agent(first.agent, tmp_path / "p.zip")
    loop = build(
        LoopConfig(total_steps=400, total_labels=2, iterations=1, initial_steps=200, fragment_length=20)
    )
    loop.agent = load_agent("sac", tmp_path / "p.zip", loop.agent.get_env())
    w = first.agent.policy.actor.mu.weight.detach().clone()
    np.testing.assert_array_equal(
        loop.agent.policy.actor.mu.weight.detach(), w
    )  # starts from the saved policy
    loop.run()
    assert loop.agent.num_timesteps == 400 and loop.agent.learning_starts == 200
    assert not np.allclose(loop.agent.policy.actor.mu.weight.detach(), w)  # and keeps learning


def test_techniques_together_in_the_loop() -> None:
    """SURF (crop + pseudo-labels from this iteration's episodes) and the RIME filter, on
    together: the loop hands the trainer unlabelled clips and every switch reports."""
    cfg = LoopConfig(total_steps=800, total_labels=8, iterations=3, initial_steps=200, fragment_length=20)
    loop = build(cfg)
    on = {"pseudo_label_ratio": 1.0, "crop_min_frac": 0.5, "noise_filter": True}
    loop.trainer.config = dataclasses.replace(loop.trainer.config, **on)
    loop.run()
    trained = [h for h in loop.state.history if "reward/train_loss" in h]
    assert len(trained) >= 2 and all("reward/pseudo_label_frac" in h for h in trained)
    assert all("reward/noise_dropped" in h for h in trained)
    assert len(loop.dataset) == 8


def test_exploration_bonus_follows_disagreement_and_decays() -> None:
    """RUNE: the agent's reward gains bonus x ensemble std, and the bonus decays with steps."""
    cfg = LoopConfig(total_steps=800, total_labels=8, iterations=3, initial_steps=200, fragment_length=20,
                     exploration_bonus=0.5, exploration_bonus_decay=1e-3)  # fmt: skip
    loop = build(cfg)
    assert loop.bonus_weight() == 0.5
    loop.run()
    assert loop.bonus_weight() == pytest.approx(0.5 * 0.999**800)
    rng = np.random.default_rng(0)
    obs, acts = rng.normal(size=(64, 3)).astype(np.float32), rng.normal(size=(64, 1)).astype(np.float32)
    nxt = rng.normal(size=(64, 3)).astype(np.float32)
    _, std = loop.net.predict(obs, acts, nxt)
    assert std.max() > 0  # two members that disagree somewhere
    loop.reward.set_bonus(0.0)
    plain = loop.reward.raw(obs, acts, nxt)
    loop.reward.set_bonus(2.0)
    np.testing.assert_allclose(loop.reward.raw(obs, acts, nxt) - plain, 2.0 * std, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="exploration_bonus_decay"):
        LoopConfig(exploration_bonus_decay=1.0)


def test_exploration_bonus_on_the_labels_schedule_fades_with_the_budget() -> None:
    """With exploration_bonus_schedule labels the bonus is its weight x the share of the label
    budget still to ask: whole before the first query, falling as queries are asked, 0 once
    the last is (logged as agent/bonus); an unknown schedule is refused."""
    cfg = LoopConfig(total_steps=1000, total_labels=8, iterations=4, initial_steps=200, fragment_length=20,
                     exploration_bonus=0.5, exploration_bonus_schedule="labels")  # fmt: skip
    loop = build(cfg)
    assert loop.bonus_weight() == 0.5
    loop.run()
    bonus = [h["agent/bonus"] for h in loop.state.history if "agent/bonus" in h]
    assert bonus[0] == 0.5 and bonus == sorted(bonus, reverse=True) and len(set(bonus)) > 1
    assert loop.bonus_weight() == 0.0 and loop.labels.budget.remaining == 0
    with pytest.raises(ValueError, match="exploration_bonus_schedule"):
        LoopConfig(exploration_bonus_schedule=cast(Any, "episodes"))


def test_exploration_bonus_gate_pays_the_bonus_only_while_fresh_labels_are_guessed_wrong() -> None:
    """With exploration_bonus_gate the bonus is scaled by how far the reward's accuracy on its
    fresh labels (reward/fresh_accuracy, logged before it trains on them) sits below the gate:
    whole at chance, none at the gate or above, whole before any label was scored; each
    iteration's logged bonus follows the newest accuracy logged before it; a gate at or below
    chance is refused."""
    cfg = LoopConfig(total_steps=1200, total_labels=12, iterations=5, initial_steps=200,
                     fragment_length=20, exploration_bonus=0.5, exploration_bonus_decay=0,
                     exploration_bonus_gate=0.75)  # fmt: skip
    loop = build(cfg)
    assert loop.bonus_weight() == 0.5  # nothing scored yet
    loop.run()
    history = loop.state.history
    scored = [i for i, h in enumerate(history) if "reward/fresh_accuracy" in h]
    assert scored and scored[0] < len(history) - 1  # an iteration after a scored one
    for i, h in enumerate(history):
        before = [history[j]["reward/fresh_accuracy"] for j in scored if j < i]
        want = 0.5 if not before else 0.5 * min(1.0, max(0.0, (0.75 - before[-1]) / 0.25))
        assert h["agent/bonus"] == pytest.approx(want)
    loop.progress.history.append({"reward/fresh_accuracy": 0.9})
    assert loop.bonus_weight() == 0.0
    loop.progress.history.append({"reward/fresh_accuracy": 0.5})
    assert loop.bonus_weight() == 0.5
    loop.progress.history.append({"reward/fresh_accuracy": 0.7})
    assert loop.bonus_weight() == pytest.approx(0.1)
    with pytest.raises(ValueError, match="exploration_bonus_gate"):
        LoopConfig(exploration_bonus_gate=0.5)


def test_where_episodes_end_the_bonus_pays_disagreement_above_the_newest_steps_mean() -> None:
    """CartPole's falls switch the agent's reward to scale only; the bonus is then measured from
    the newest steps' mean ensemble std (bonus_center), so over those steps it adds 0 on average:
    disagreement above the usual pays, staying alive does not. A checkpoint keeps the centre. On
    Pendulum (no end) the normaliser centres the whole reward and the centre stays 0."""
    from prefrl.agents.rollout import collect_episodes

    cfg = LoopConfig(total_steps=600, total_labels=4, iterations=2, initial_steps=300, fragment_length=30,
                     exploration_bonus=1.0, exploration_bonus_decay=0)  # fmt: skip
    loop = build(cfg, algo="ppo", env_id="CartPole-v1")
    loop.run()
    reward, signal = loop.reward, cast(Any, loop.signal)
    assert reward is not None and not reward.normalizer.center and reward.bonus_center > 0
    batch = collect_episodes(loop.side_env, n_steps=200, seed=3)
    signal.changed(batch, loop.agent)
    obs, acts, nxt, dones = batch.transitions(batch.step_rows)
    _, std = loop.net.predict(obs, acts, nxt, dones)
    assert reward.bonus_center == pytest.approx(float(np.mean(std)), rel=1e-4)
    with_bonus = reward.raw(obs, acts, nxt, dones)
    reward.set_bonus(0.0)
    added = with_bonus - reward.raw(obs, acts, nxt, dones)
    np.testing.assert_allclose(added, std - reward.bonus_center, rtol=1e-4, atol=1e-5)
    assert abs(float(np.mean(added))) < 1e-4 and added.max() > 0 > added.min()
    state, center = signal.state_dict(), reward.bonus_center
    reward.bonus_center = 0.0
    signal.load_state_dict(state)
    assert reward.bonus_center == center
    loop = build(cfg)  # Pendulum: never ends
    loop.run()
    assert loop.reward is not None and loop.reward.normalizer.center and loop.reward.bonus_center == 0.0


def test_uncertainty_penalty_takes_the_ensembles_spread_off_the_reward() -> None:
    """Pessimism: the agent's reward loses penalty x ensemble std, every iteration (no decay),
    so transitions the members disagree on pay less; a negative penalty is refused."""
    cfg = LoopConfig(total_steps=600, total_labels=8, iterations=2, initial_steps=200, fragment_length=20,
                     uncertainty_penalty=0.5)  # fmt: skip
    loop = build(cfg)
    assert loop.bonus_weight() == -0.5
    loop.run()
    assert loop.reward.bonus == -0.5 and loop.bonus_weight() == -0.5
    rng = np.random.default_rng(1)
    obs, acts = rng.normal(size=(64, 3)).astype(np.float32), rng.normal(size=(64, 1)).astype(np.float32)
    nxt = rng.normal(size=(64, 3)).astype(np.float32)
    mean, std = loop.net.predict(obs, acts, nxt)
    assert std.max() > 0
    want = mean - loop.net.absorbing_value() - 0.5 * std
    np.testing.assert_allclose(loop.reward.raw(obs, acts, nxt), want, rtol=1e-4, atol=1e-5)
    both = LoopConfig(exploration_bonus=0.5, exploration_bonus_decay=0.0, uncertainty_penalty=0.2)
    assert build(both).bonus_weight() == pytest.approx(0.3)
    with pytest.raises(ValueError, match="uncertainty_penalty"):
        LoopConfig(uncertainty_penalty=-0.1)


def test_random_steps_per_label_scale_with_the_budget_up_to_a_tenth_of_the_run() -> None:
    assert LoopConfig(total_steps=100_000, total_labels=50, initial_steps_per_label=100).random_steps == 5000
    assert LoopConfig(total_steps=15_000, total_labels=30, initial_steps_per_label=100).random_steps == 1500
    assert LoopConfig(total_steps=15_000, total_labels=10, initial_steps_per_label=100).random_steps == 1000
    assert LoopConfig(total_steps=100_000, total_labels=50).random_steps == 1000  # off: initial_steps
    cfg = LoopConfig(total_steps=1200, total_labels=4, iterations=2, initial_steps=100,
                     initial_steps_per_label=100, fragment_length=20)  # fmt: skip
    loop = build(cfg)
    loop.run()
    assert cfg.random_steps == 120 and loop.agent.learning_starts == 120
    # 120 random steps, then the agent's share of iteration 0: (1200 - 120) / 2
    assert loop.state.history[0]["step"] == 120 + 540
    assert loop.env_steps == 1200
