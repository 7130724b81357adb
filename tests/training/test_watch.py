"""The run watch: signs of a run going wrong, read without the true reward."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
import torch

from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import make_env
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import sample_fragments
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference import RewardTrainer, RewardTrainerConfig
from prefrl.rewards import MLPReward
from prefrl.training.budget import LabelBudget
from prefrl.training.callbacks import LoopCallback
from prefrl.training.config import LoopConfig
from prefrl.training.loop import PreferenceLoop
from prefrl.training.watch import RunWatch, agreement, batch_steps, members, summary
from tests.narrow import present
from tests.training.test_loop import build


def test_agreement_reads_how_alike_the_members_rank_the_steps() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=500)
    alike = np.stack([base, 2 * base + 1, base + 0.01 * rng.normal(size=500)])
    assert agreement(alike) > 0.99  # scale and shift do not count as disagreement
    split = np.stack([base, -base, rng.normal(size=500)])
    assert agreement(split) < 0.0
    assert np.isnan(agreement(base[None]))  # one member: nothing to compare
    assert np.isnan(agreement(np.stack([base, np.zeros(500)])))  # a flat member is left out


def _pendulum(episodes: int, seed: int, scale: float = 1.0) -> TrajectoryBatch:
    batch = collect_episodes(make_env("Pendulum-v1"), n_episodes=episodes, seed=seed)
    if scale != 1.0:
        batch = TrajectoryBatch(batch.obs * scale, batch.acts, batch.rews, batch.lengths,
                                batch.terminated, batch.truncated)  # fmt: skip
    return batch


def _fitted(batch: TrajectoryBatch) -> tuple[MLPReward, PreferenceDataset]:
    env = make_env("Pendulum-v1")
    torch.manual_seed(0)
    net = MLPReward(env.observation_space, env.action_space, hidden=(32, 32), ensemble_size=4)
    rng = np.random.default_rng(0)
    frags, _ = sample_fragments(batch, 60, 20, rng)
    pairs = rng.choice(len(frags), size=(40, 2), replace=False if len(frags) >= 80 else True)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    ret = frags.returns()
    labels = (ret[pairs[:, 0]] > ret[pairs[:, 1]]).astype(np.float32)
    ds = PreferenceDataset()
    ds.add(frags, pairs, labels)
    RewardTrainer(net, RewardTrainerConfig(epochs=30)).train(ds)
    return net, ds


def test_standing_puts_better_episodes_nearer_the_clips_the_labels_preferred() -> None:
    """watch/standing: the reward's view of the agent's newest steps between the rejected (0)
    and preferred (1) clips; the best of several random episodes stands higher than the worst."""
    seen = _pendulum(4, seed=0)
    net, ds = _fitted(seen)
    episodes = sorted(_pendulum(6, seed=2), key=lambda e: float(e.rews.sum()) if e.rews is not None else 0.0)
    worst, best = (TrajectoryBatch.from_trajectories([e]) for e in (episodes[0], episodes[-1]))
    low = RunWatch(net, seed=0).measure(worst, ds, 0)["watch/standing"]
    high = RunWatch(net, seed=0).measure(best, ds, 0)["watch/standing"]
    assert high > low + 0.3, (low, high)


def test_novelty_rises_where_the_labels_do_not_reach_and_gain_reads_the_learned_reward() -> None:
    seen = _pendulum(4, seed=0)
    net, ds = _fitted(seen)
    watch = RunWatch(net, seed=0)
    near = watch.measure(_pendulum(2, seed=1), ds, 0)
    assert set(near) == {"watch/agreement", "watch/novelty", "watch/standing"}  # no previous batch: no gain
    assert near["watch/agreement"] > 0.5  # trained members agree on steps like the labelled ones
    far = RunWatch(net, seed=0).measure(_pendulum(2, seed=1, scale=6.0), ds, 0)
    assert far["watch/novelty"] > 2 * near["watch/novelty"]  # states no label covers
    # the same steps twice: no gain; then steps the reward pays more: a positive gain
    again = watch.measure(_pendulum(2, seed=1), ds, 1)
    assert abs(again["watch/learned_gain"]) < 1e-6
    rng = np.random.default_rng(0)
    good, bad = _pendulum(6, seed=2), _pendulum(2, seed=1)
    g, b = batch_steps(good, rng), batch_steps(bad, rng)
    assert g is not None and b is not None
    paid_more = members(net, g).mean() > members(net, b).mean()
    w = RunWatch(net, seed=0)
    w.measure(bad, ds, 0)
    gain = w.measure(good, ds, 1)["watch/learned_gain"]
    assert (gain > 0) == paid_more and gain != 0


def test_the_loop_logs_the_watch_every_iteration_after_the_first_fit() -> None:
    cfg = LoopConfig(total_steps=800, total_labels=6, iterations=3, initial_steps=200, fragment_length=20)
    loop = build(cfg)
    loop.run()
    rows = loop.state.history
    assert "watch/agreement" not in rows[0]  # nothing fitted before the first iteration's labels
    for row in rows[1:]:
        assert -1.0 <= row["watch/agreement"] <= 1.0 and row["watch/novelty"] > 0
    assert "watch/learned_gain" in rows[2]
    assert rows[1]["reward/fresh_n"] >= 1 and 0 <= rows[1]["reward/fresh_hits"] <= rows[1]["reward/fresh_n"]


class BonusLog(LoopCallback):
    """Records the agent reward's std weight and the alarm at the end of each iteration."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, float]] = []

    def on_iteration_end(self, loop: PreferenceLoop, metrics: Mapping[str, float]) -> None:
        assert loop.reward is not None
        self.rows.append((metrics.get("watch/alarm", 0.0), loop.reward.bonus))


def test_the_budget_lends_as_many_queries_again_as_it_has_left() -> None:
    budget = LabelBudget(LoopConfig(total_labels=30, iterations=5))
    budget.asked = 10
    assert budget.ahead(5) == 5
    budget.asked = 26
    assert budget.ahead(3) == 1  # 4 left: 3 due and 1 more
    assert budget.ahead(0) == 0


@pytest.mark.parametrize("floor", [1.0, -1.0])
def test_the_alarm_asks_ahead_and_penalises_only_while_it_fires(floor: float) -> None:
    cfg = LoopConfig(total_steps=1200, total_labels=12, iterations=4, initial_steps=200, fragment_length=20,
                     watch_agreement=floor, watch_requery=True, watch_penalty=0.7)  # fmt: skip
    log = BonusLog()
    loop = build(cfg)
    loop.callbacks.append(log)
    loop.run()
    rows = loop.state.history
    alloc = loop.labels.budget.alloc
    assert loop.labels.asked == 12  # the budget holds, whatever was asked ahead
    if floor == 1.0:  # agreement is below 1 everywhere: the alarm fires after the first fit
        assert [a for a, _ in log.rows[1:]] == [1.0] * 3
        assert rows[1]["watch/labels_ahead"] > 0
        assert rows[1]["labels/asked"] == alloc[1] + rows[1]["watch/labels_ahead"]
        assert all(b == pytest.approx(-0.7) for _, b in log.rows[1:])
    else:  # -1 turns it off
        assert not any(a for a, _ in log.rows) and "watch/labels_ahead" not in rows[1]
        assert all(b == 0.0 for _, b in log.rows)
        assert [r["labels/asked"] for r in rows] == list(alloc)
    report = summary(rows)
    assert len(report["alarms"]) == (3 if floor == 1.0 else 0) and report["iterations"] == 3
    assert ("split on the agent's newest steps at 3 of 3" if floor == 1.0 else "agreed") in report["text"]


def test_watch_options_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="watch_agreement"):
        LoopConfig(watch_agreement=1.5)
    with pytest.raises(ValueError, match="watch_penalty"):
        LoopConfig(watch_penalty=-0.1)


def test_stay_margin_says_whether_the_reward_pays_the_agent_to_end_its_episodes() -> None:
    """CartPole's episodes end: with the absorbing state paid above every step, ending pays."""
    batch = collect_episodes(make_env("CartPole-v1"), n_episodes=6, seed=0)
    env = make_env("CartPole-v1")
    torch.manual_seed(0)
    net = MLPReward(env.observation_space, env.action_space, hidden=(16,), ensemble_size=3)
    rng = np.random.default_rng(0)
    frags, _ = sample_fragments(batch, 10, 5, rng)
    ds = PreferenceDataset()
    ds.add(frags, np.array([[0, 1], [2, 3]]), np.array([1.0, 0.0], np.float32))
    steps = batch_steps(batch, rng)
    assert steps is not None
    per_step = members(net, steps).mean(0)
    margins = []
    for absorbing in (per_step.max() + 1.0, per_step.min() - 1.0):
        with torch.no_grad():
            net.absorbing_reward.fill_(float(absorbing))
        margins.append(RunWatch(net, seed=0).measure(batch, ds, 0)["watch/stay_margin"])
    assert margins[0] < 0 < margins[1]
    cut = TrajectoryBatch(batch.obs, batch.acts, batch.rews, batch.lengths,
                          np.zeros_like(batch.terminated), np.ones_like(batch.truncated))  # fmt: skip
    assert "watch/stay_margin" not in RunWatch(net, seed=0).measure(cut, ds, 0)  # no episode has ended


def test_end_clips_are_asked_while_ending_pays() -> None:
    """CartPole with an absorbing state paid above every step: the loop cuts half its query
    clips at episode ends (none without the switch, its labels being no ties)."""
    seen: dict[bool, float] = {}
    for on in (True, False):
        cfg = LoopConfig(total_steps=1400, total_labels=16, iterations=4, initial_steps=300,
                         fragment_length=10, end_clip_frac=0.0, watch_end_clips=on)  # fmt: skip
        loop = build(cfg, algo="ppo", env_id="CartPole-v1")
        with torch.no_grad():
            loop.net.absorbing_reward.fill_(50.0)  # ending pays, whatever the fit makes of the steps
            loop.net.absorbing_reward.requires_grad_(False)
        log = BonusLog()
        loop.callbacks.append(log)
        loop.run()
        frags = present(loop.dataset.fragments)
        ended = frags.reals < frags.length  # clips that reach an episode's end
        seen[on] = float(ended[loop.dataset.pairs].mean())
        rows = loop.state.history
        assert all(r["watch/stay_margin"] < 0 for r in rows[1:])
        assert all(r.get("watch/end_clips") == (1.0 if on else None) for r in rows[1:])
        report = summary(rows)
        assert report["ending_pays"] == [int(r["step"]) for r in rows[1:]]
        assert report["end_clips"] == (3 if on else 0)
        assert ("cut at episode ends there" in report["text"]) == on
    assert seen[True] > seen[False]


def test_the_report_compares_the_teacher_and_the_reward_on_newer_clips() -> None:
    rows = [
        {"step": 1000.0, "watch/alarm": 0.0},
        {"step": 2000.0, "watch/alarm": 0.0, "watch/reward_newer": 0.8, "watch/teacher_newer": 0.0},
        {"step": 3000.0, "watch/alarm": 0.0, "watch/reward_newer": 0.6, "watch/teacher_newer": 1.0},
        {"step": 4000.0, "watch/alarm": 0.0, "watch/reward_newer": 0.7},  # answers not in yet
    ]
    s = summary(rows)
    assert [v[0] for v in s["against_older"]] == [2000.0, 3000.0, 4000.0]
    assert np.isnan(s["against_older"][2][1])
    text = s["text"]
    assert "newer clips to its older ones in 50% of those asked, the reward expected 70%" in text
    assert "progress the teacher did not at 1 of 2 iterations (first at step 2,000)" in text
    assert "newer clips" not in summary(rows[:1])["text"]


def test_the_report_says_where_the_agent_looked_stuck_and_explored() -> None:
    rows = [
        {"step": 10_000.0, "watch/alarm": 0.0},
        {"step": 20_000.0, "watch/alarm": 0.0, "agent/stuck_exploration": 1.0},
        {"step": 30_000.0, "watch/alarm": 0.0, "agent/stuck_exploration": 0.0},
    ]
    s = summary(rows)
    assert s["stuck"] == [20_000]
    assert "looked like the rejected clips at 1 (first at step 20,000)" in s["text"]
    assert "rejected" not in summary(rows[:1])["text"]
