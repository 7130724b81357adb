"""Ties are reported while a run goes and in its report; every JSON file is strict JSON."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from safetensors.torch import load_file, save_file

from prefrl.data.fragments import Fragments
from prefrl.rewards import MLPReward, load_reward_net, save_reward_net
from prefrl.run.report import RunReport
from prefrl.run.train import format_report
from prefrl.storage.checkpoint import dumps, write_json
from prefrl.teachers import Answers, SyntheticTeacher
from prefrl.teachers.synthetic import TeacherConfig
from prefrl.training.budget import query_allocation
from prefrl.training.config import LoopConfig
from prefrl.training.labels import Labels
from prefrl.training.ties import decided_labels, tie_fraction
from tests.training.test_loop import build


def _strict_load(text: str) -> object:
    def refuse(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_tie_fraction_ignores_skipped_labels() -> None:
    assert tie_fraction(np.array([0.5, 1.0, np.nan, 0.5], np.float32)) == pytest.approx(2 / 3)
    assert tie_fraction(np.array([np.nan], np.float32)) is None
    assert tie_fraction(np.zeros(0, np.float32)) is None


def test_decided_labels_count_neither_ties_nor_skipped_ones() -> None:
    assert decided_labels(np.array([0.5, 1.0, np.nan, 0.0, 0.5], np.float32)) == 2
    assert decided_labels(np.zeros(0, np.float32)) == 0


def test_json_files_are_strict(tmp_path) -> None:
    obj = {"acc": float("nan"), "inf": math.inf, "np": np.float32(0.5), "list": [np.nan, 1, np.int64(3)]}
    write_json(tmp_path / "r.json", obj)
    back = _strict_load((tmp_path / "r.json").read_text())
    assert back == {"acc": None, "inf": None, "np": 0.5, "list": [None, 1, 3]}
    assert _strict_load(dumps({"x": np.nan})) == {"x": None}


def test_a_run_of_ties_warns_while_running_and_in_its_report(tmp_path, capsys) -> None:
    teacher = SyntheticTeacher(TeacherConfig(equal=2.0))  # every pair counts as equal
    cfg = LoopConfig(total_steps=600, total_labels=12, iterations=2, initial_steps=200, fragment_length=20,
                     tie_probe=0)  # fmt: skip
    loop = build(cfg, teacher=teacher, tmp=tmp_path)
    loop.run()
    err = capsys.readouterr().err
    assert "100% of the 12 labels so far are ties" in err and "--loop.fragment-length" in err
    assert loop.state.history[-1]["labels/tie_fraction"] == 1.0
    assert loop.clips.end_clip_frac(loop.labels.ties()) == 0.5  # auto: where episodes end, while ties
    # an explicit choice is kept
    loop.clips.config = dataclasses.replace(loop.clips.config, end_clip_frac=0.0)
    assert loop.clips.end_clip_frac(loop.labels.ties()) == 0.0
    rep: RunReport = {"labels_used": 12, "queries_asked": 12, "reward_accuracy": None,
                      "label_tie_fraction": 1.0, "wall_s": 1.0, "run_dir": "r", "files": {}}  # fmt: skip
    text = format_report(rep)
    assert "n/a (every held-out pair was a tie)" in text and "nan" not in text
    assert "most labels were ties" in text
    ok = format_report({**rep, "reward_accuracy": 0.91, "label_tie_fraction": 0.1})
    assert "0.910" in ok and "most labels were ties" not in ok


def test_informative_labels_keep_uniform_query_clips() -> None:
    cfg = LoopConfig(total_steps=600, total_labels=6, iterations=2, initial_steps=200, fragment_length=20)
    loop = build(cfg)  # oracle on Pendulum: no ties
    loop.run()
    assert tie_fraction(loop.dataset.labels) == 0.0 and loop.clips.end_clip_frac(loop.labels.ties()) == 0.0


def test_reward_files_from_before_absorbing_states_still_load(tmp_path) -> None:
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    net = MLPReward(env.observation_space, env.action_space, hidden=(8,), ensemble_size=2)
    path = save_reward_net(net, tmp_path / "r.safetensors")
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
    state = {k: v for k, v in load_file(str(path)).items() if k != "absorbing_reward"}
    save_file(state, str(tmp_path / "old.safetensors"), metadata=meta)
    old = load_reward_net(tmp_path / "old.safetensors")
    assert old.absorbing_reward.tolist() == [0.0, 0.0]
    o = np.zeros((3, 4), np.float32)
    np.testing.assert_allclose(
        old.predict(o, np.zeros(3, np.int64), o)[0], net.predict(o, np.zeros(3, np.int64), o)[0]
    )


class Person:
    """A teacher that answers at once and is not simulated (as a person at a console would be):
    every pair it is shown is a tie to it; it keeps how many it was shown."""

    def __init__(self) -> None:
        self.shown = 0

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray:
        self.shown += len(pairs)
        return np.full(len(pairs), 0.5, np.float32)


class LaterTies:
    """A teacher that answers later (as the web app does), every answer a tie."""

    def __init__(self) -> None:
        self.asked: list[Answers] = []

    def submit(self, fragments: Fragments, pairs: np.ndarray) -> object:
        keys = np.arange(len(pairs)) + sum(len(a.pairs) for a in self.asked)
        self.asked.append(Answers(fragments, pairs, np.full(len(pairs), 0.5, np.float32), keys))
        return None

    def poll(self, all: bool = False) -> list[Answers]:
        return list(self.asked)

    def pending(self) -> int:
        return 0

    def resume(self) -> int:
        return sum(len(a.pairs) for a in self.asked)


def _fragments(rews: np.ndarray) -> Fragments:
    """``len(rews) // 4`` clips of 3 steps over a table of ``rews`` ``[S]``."""
    n, zeros = len(rews) // 4, np.zeros((len(rews), 1), np.float32)
    return Fragments(table_obs=zeros, table_acts=zeros, table_rews=rews.astype(np.float32),
                     table_dones=np.zeros(len(rews), bool), rows=np.arange(n) * 4, length=3,
                     episode=np.zeros(n, np.int64), start=np.arange(n) * 4)  # fmt: skip


def test_while_every_answer_is_a_tie_a_round_asks_a_few_and_keeps_the_rest(tmp_path) -> None:
    """A sparse reward no clip reaches yet: 5 queries per iteration instead of the round's share,
    the rest never asked and named as deferred (later iterations' budget)."""
    teacher = SyntheticTeacher(TeacherConfig(equal=2.0))  # every pair counts as equal
    cfg = LoopConfig(total_steps=600, total_labels=20, iterations=2, initial_steps=200, fragment_length=20)
    share = query_allocation(cfg).tolist()
    assert share == [6, 14]
    loop = build(cfg, teacher=teacher, tmp=tmp_path)
    loop.run()
    h = loop.state.history
    assert [r["labels/asked"] for r in h] == [5.0, 5.0] and [r["labels/deferred"] for r in h] == [1.0, 10.0]
    assert loop.state.queries_asked == 10 == len(loop.dataset)
    person = Person()  # not simulated: shown the first 5 only, not asked the rest at all
    loop = build(cfg, teacher=person)
    loop.run()
    assert person.shown == 10 and loop.state.queries_asked == 10


@pytest.mark.parametrize("teacher", ["oracle", "noisy", "mistake"])
def test_answers_that_prefer_clips_are_those_asked_without_the_probe(teacher: str) -> None:
    """Where a probe's answers prefer a clip, every pair is asked and answered as without the
    probe, to the same random draws of a simulated teacher."""
    fr = _fragments(np.arange(64.0) % 7)
    pairs = np.random.default_rng(0).integers(0, len(fr), size=(12, 2))
    got = []
    for probe in (5, 0):
        cfg = LoopConfig(total_labels=40, tie_probe=probe)
        labels = Labels(cfg, SyntheticTeacher(teacher, rng=np.random.default_rng(1)))
        m = labels.ask(fr, pairs, len(pairs), 0, {})
        assert m["labels/asked"] == 12 and "labels/deferred" not in m
        got.append(labels.dataset.labels)
    np.testing.assert_array_equal(got[0], got[1])
    assert decided_labels(got[0]) > 0


def test_people_whose_answers_are_all_ties_get_a_few_queries_per_iteration() -> None:
    cfg = LoopConfig(total_labels=40)
    labels = Labels(cfg, LaterTies())
    assert labels.probed(12) == 12  # no answer yet: nothing known, the round as it is
    labels.ask(_fragments(np.zeros(16)), np.array([[0, 1], [2, 3]]), 2, 0, {})
    labels.poll()
    assert len(labels.dataset) == 2 and labels.decided == 0
    off = Labels(dataclasses.replace(cfg, tie_probe=0), LaterTies())
    off.dataset = labels.dataset  # the same answers, all ties
    assert labels.probed(12) == 5 and labels.probed(3) == 3 and off.probed(12) == 12


def test_the_report_names_the_queries_a_run_of_ties_never_asked(tmp_path) -> None:
    """MountainCar's -1 per step ties every clip random actions make: most of the budget is
    never asked, and the run's report says how much and why."""
    from prefrl.run.config import parse_args
    from prefrl.run.train import train

    cfg = parse_args(["--env.id", "MountainCar-v0", "--run-dir", str(tmp_path / "r"), "--no-progress",
                      "--loop.total-steps", "1200", "--loop.initial-steps", "400", "--loop.iterations", "2",
                      "--loop.total-labels", "20", "--eval-episodes", "1",
                      "--loop.fragment-length", "10"])  # fmt: skip
    rep = train(cfg)
    assert rep["queries_asked"] == 10 and rep["queries_not_asked"] == 10
    text = format_report(rep)
    assert "queries not asked           : 10 of the budget" in text and "--loop.tie-probe" in text
    assert json.loads((tmp_path / "r" / "report.json").read_text())["queries_not_asked"] == 10


def test_while_every_label_ties_the_agent_is_paid_for_novelty_not_for_one_more_step() -> None:
    """Tie exploration pays a state by how much rarer it is than the remembered ones: familiar
    states earn less than nothing, so an episode that goes on in them is not worth more than
    one that ends (the goal, the coin or the fall that would tell clips apart)."""
    from gymnasium import spaces

    from prefrl.agents.reward_signal import LearnedReward
    from prefrl.training.agent_reward import AgentReward

    net = MLPReward(spaces.Box(-10, 10, (3,)), spaces.Discrete(2), hidden=(8,), ensemble_size=1)
    paid = AgentReward(LearnedReward(net), LoopConfig(), off_policy=False)
    assert paid.explore_on_ties(all_ties=True)
    explore = paid.reward.intrinsic
    assert explore is not None
    rng = np.random.default_rng(0)
    familiar = np.concatenate([explore(rng.normal(0, 1, (8, 3))) for _ in range(200)])[800:]
    assert abs(familiar.mean()) < 0.25 and (familiar < 0).mean() > 0.3
    assert explore(np.full((1, 3), 9.0))[0] > 2.0  # somewhere new
    assert not paid.explore_on_ties(all_ties=False) and paid.reward.intrinsic is None


def test_stuck_exploration_fires_on_newest_ties_while_the_agent_looks_like_what_lost() -> None:
    """tie_exploration_stuck: the newest 3 labels ties (some this iteration) and watch/standing
    below 0.5; not with it off, not where a newest label prefers a clip, not where the agent
    looks like what won, not in an iteration that asked nothing."""
    cfg = LoopConfig(total_steps=400, total_labels=6, iterations=2, initial_steps=100, fragment_length=10)
    on = build(dataclasses.replace(cfg, tie_exploration_stuck=True), env_id="CartPole-v1", algo="ppo")
    off = build(cfg, env_id="CartPole-v1", algo="ppo")
    frags, pairs = _fragments(np.arange(40.0)), np.arange(10).reshape(5, 2)
    lost = {"labels/answered": 2.0, "watch/standing": 0.2}
    for loop in (on, off):
        loop.dataset.add(frags, pairs[:2], np.array([1.0, 0.5], np.float32))  # one decided, one tie
        assert not loop._stuck(lost)  # a newest label prefers a clip
        loop.dataset.add(frags, pairs[2:], np.full(3, 0.5, np.float32))  # then three ties
    assert on._stuck(lost) and not off._stuck(lost)
    assert not on._stuck({**lost, "watch/standing": 0.7})  # the agent looks like what won
    assert not on._stuck({**lost, "labels/answered": 0.0})  # nothing asked of its newest clips
    assert not on._stuck({"labels/answered": 2.0})  # no standing measured: no reason to explore
