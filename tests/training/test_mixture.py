"""Mixture queries (PPE): older clips where the ensemble is least sure, joined with recent ones."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import torch

from prefrl.agents.policy_io import load_agent
from prefrl.agents.rollout import collect_episodes
from prefrl.data import PreferenceDataset
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference import RewardTrainer, RewardTrainerConfig
from prefrl.rewards import MLPReward
from prefrl.selection import DisagreementSelector
from prefrl.selection.selectors import ensemble_logits
from prefrl.teachers import SyntheticTeacher
from prefrl.training.config import LoopConfig
from prefrl.training.mixture import (
    EpisodeArchive,
    archive_pairs,
    join_queries,
    newer_older_pairs,
    older_share,
)
from prefrl.training.queries import candidate_pairs
from tests.narrow import present
from tests.training.test_loop import build


@pytest.fixture(scope="module")
def batches():
    env = gym.make("Pendulum-v1")
    return [collect_episodes(env, n_episodes=2, seed=s) for s in range(4)]


def test_archive_keeps_the_newest_steps_up_to_its_bound(batches) -> None:
    archive = EpisodeArchive(max_steps=900)
    for b in batches:  # 400 steps each
        archive.add(b)
    assert archive.steps == 800 and archive.batches == batches[-2:]
    assert present(archive.batch(50)).num_steps == 800 and archive.batch(401) is None
    with pytest.raises(ValueError, match="max_steps"):
        EpisodeArchive(0)


def test_older_half_takes_the_pairs_the_ensemble_disagrees_on_most(batches) -> None:
    rng = np.random.default_rng(0)
    net = MLPReward(gym.spaces.Box(-np.inf, np.inf, (3,)), gym.spaces.Box(-2, 2, (1,)), ensemble_size=3)
    frags, cand = candidate_pairs(batches[0], 40, 0, 20, 25, rng)
    ds = PreferenceDataset()
    ds.add(frags, cand[:8], SyntheticTeacher("oracle").label(frags, cand[:8]))
    RewardTrainer(net, RewardTrainerConfig(epochs=5, val_fraction=0.0)).train(ds)
    old = EpisodeArchive(10_000)
    for b in batches[1:]:
        old.add(b)
    f_old, p_old = archive_pairs(
        net, present(old.batch(25)), 4, 25, 5, "probability", np.random.default_rng(1)
    )
    assert p_old.shape == (4, 2) and f_old.length == 25
    # the chosen pairs are the top 4 of their candidates by the ensemble's disagreement
    f_all, c_all = candidate_pairs(present(old.batch(25)), 40, 0, 20, 25, np.random.default_rng(1))
    scores = DisagreementSelector(net, "probability").scores(f_all, c_all)
    chosen = DisagreementSelector(net, "probability").scores(f_old, p_old)
    assert np.allclose(np.sort(chosen), np.sort(scores)[-4:])


def test_join_shifts_the_older_clips_and_the_split_is_even(batches) -> None:
    rng = np.random.default_rng(2)
    f1, p1 = candidate_pairs(batches[0], 10, 0, 5, 20, rng)
    f2, p2 = candidate_pairs(batches[1], 6, 0, 3, 20, rng)
    frags, pairs = join_queries((f1, p1), (f2, p2))
    assert len(frags) == 16 and pairs.shape == (8, 2)
    np.testing.assert_array_equal(frags.returns()[pairs[5:]], f2.returns()[p2])  # the same clips, shifted
    assert join_queries((f1, p1), (f2, p2[:0]))[0] is f1
    assert [older_share(n, 0.5) for n in (0, 1, 2, 10, 11)] == [0, 0, 1, 5, 6]
    assert older_share(10, 0.0) == 0 and older_share(10, 1.0) == 9  # at least one recent pair


def test_a_run_with_mixture_queries_asks_half_its_rounds_from_older_episodes(tmp_path) -> None:
    import csv
    import json

    from prefrl.cli.main import main

    run = tmp_path / "run"
    args = ["train", "--run-dir", str(run), "--no-progress", "--eval-episodes", "1"]
    args += ["--loop.total-steps", "2400", "--loop.initial-steps", "400", "--loop.iterations", "4"]
    args += ["--loop.total-labels", "16", "--loop.labels-per-round", "4", "--loop.fragment-length", "20"]
    args += ["--loop.archive-share", "0.5", "--agent.batch-size", "32", "--reward.ensemble-size", "2"]
    assert main(args) == 0
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    older = [float(r["labels/archive_pairs"] or 0) for r in rows]
    assert older == [0.0, 2.0, 2.0, 2.0]  # none before any older episodes exist, then half of 4
    assert json.loads((run / "report.json").read_text())["labels_used"] == 16


PICK = LoopConfig(active_selection_oversampling=4, uncertainty_measure="probability")


def test_newer_older_pairs_put_a_newest_clip_first_and_an_older_one_second(batches) -> None:
    rng = np.random.default_rng(3)
    net = MLPReward(gym.spaces.Box(-np.inf, np.inf, (3,)), gym.spaces.Box(-2, 2, (1,)), ensemble_size=3)
    newest, older = batches[0], TrajectoryBatch.concat(batches[1:])
    frags, pairs, newer = newer_older_pairs(net, newest, older, 5, 20, PICK, rng)
    assert pairs.shape == (5, 2) and 0.0 < newer < 1.0
    first = frags.arrays(pairs[:, 0]).obs[:, 0]  # [5, 3]: each clip's first observation
    second = frags.arrays(pairs[:, 1]).obs[:, 0]

    def found(rows: np.ndarray, batch: TrajectoryBatch) -> bool:
        return all((np.abs(batch.obs - r).sum(1) == 0).any() for r in rows)

    assert found(first, newest) and not found(first, older)
    assert found(second, older) and not found(second, newest)
    # the reward's verdict is the mean over the chosen pairs of its members' P(first preferred)
    logits = ensemble_logits(net, frags, pairs)
    assert newer == pytest.approx(float(torch.sigmoid(logits).mean()))
    # chosen by disagreement: the members split on every pair picked
    picked = DisagreementSelector(net, "probability").scores(frags, pairs)
    assert picked.min() > 0


def test_a_run_against_older_clips_logs_both_verdicts(tmp_path) -> None:
    cfg = LoopConfig(total_steps=2000, total_labels=16, iterations=4, initial_steps=400, fragment_length=20,
                     watch_against_older=True)  # fmt: skip
    loop = build(cfg)
    loop.run()
    rows = loop.state.history
    assert "watch/reward_newer" not in rows[0]  # no earlier episodes yet
    for r in rows[1:]:
        assert 0.0 <= r["watch/reward_newer"] <= 1.0 and 0.0 <= r["watch/teacher_newer"] <= 1.0
    # half of each later round (rounded up) put a newest clip first: the teacher's answers on
    # them are the last labels of the round
    per = [int(r["labels/asked"]) for r in rows]
    end = np.cumsum(per)
    for i in range(1, len(rows)):
        half = older_share(per[i], 0.5)  # rounds of 5 put 3 newest clips first
        labels = loop.dataset.labels[end[i] - half : end[i]]
        assert rows[i]["watch/teacher_newer"] == pytest.approx(float(np.mean(labels)))
    assert loop.labels.asked == 16


def test_early_against_older_queries_stop_once_the_warm_up_labels_are_in(tmp_path) -> None:
    # 6 labels a round after the first: newest-vs-older pairs while fewer than 12 are decided,
    # then none (disagreement among the newest clips takes every query)
    cfg = LoopConfig(total_steps=2400, total_labels=24, iterations=4, initial_steps=400, fragment_length=20,
                     query_schedule="constant", active_selection_from=12,
                     watch_against_older_early=True)  # fmt: skip
    loop = build(cfg)
    loop.run()
    rows = loop.state.history
    totals = np.cumsum([int(r["labels/asked"]) for r in rows])
    assert totals[-1] == 24 and not loop.config.watch_against_older
    decided_before = [0, *totals[:-1]]  # an oracle on these clips never ties
    for r, before in zip(rows[1:], decided_before[1:], strict=True):
        assert ("watch/reward_newer" in r) == (before < 12), (before, sorted(r))
    assert any("watch/reward_newer" in r for r in rows) and "watch/reward_newer" not in rows[-1]


def test_early_against_older_queries_yield_to_end_clips() -> None:
    # a round whose clips go to episode ends (ending pays) asks no newest-vs-older pair, even
    # in the warm-up; the same round otherwise does
    cfg = LoopConfig(total_steps=1600, total_labels=12, iterations=2, initial_steps=400, fragment_length=20,
                     active_selection_from=10, watch_against_older_early=True)  # fmt: skip
    loop = build(cfg)
    loop.run()
    assert "watch/reward_newer" in loop.state.history[-1]
    # the same loop, still warming up with a budget past its warm-up
    loop.config = dataclasses.replace(cfg, total_labels=200, active_selection_from=100)
    batch = loop.clips.rollouts(400, None)
    assert "watch/reward_newer" in loop._query(4, batch)
    assert "watch/reward_newer" not in loop._query(4, batch, ends=True)


def test_early_against_older_queries_need_labels_past_the_warm_up() -> None:
    # every label in the warm-up: half of them would check the agent's direction instead of
    # teaching the task, so none do
    cfg = LoopConfig(total_steps=1600, total_labels=12, iterations=2, initial_steps=400, fragment_length=20,
                     active_selection_from=12, watch_against_older_early=True)  # fmt: skip
    loop = build(cfg)
    loop.run()
    assert not any("watch/reward_newer" in r for r in loop.state.history)


def test_early_against_older_queries_leave_a_run_whose_episodes_end_as_it_was() -> None:
    # CartPole's random episodes end within a few dozen steps: the switch asks no newest-vs-older
    # pair, and the run is the one without it, label for label and weight for weight
    cfg = LoopConfig(total_steps=1536, total_labels=16, iterations=3, initial_steps=512, fragment_length=10,
                     active_selection_from=8)  # fmt: skip
    runs = []
    for early in (False, True):
        torch.manual_seed(0)  # the agent's and the nets' first weights, alike in both runs
        run_cfg = dataclasses.replace(cfg, watch_against_older_early=early)
        loop = build(run_cfg, algo="ppo", env_id="CartPole-v1")
        loop.run()
        runs.append(loop)
    plain, early_run = runs
    assert all(r["rollout/terminated"] > 0 for r in early_run.state.history)
    assert not any("watch/reward_newer" in r for r in early_run.state.history)
    assert len(early_run.dataset) == len(plain.dataset) == 16
    np.testing.assert_array_equal(early_run.dataset.labels, plain.dataset.labels)
    for x, y in zip(plain.net.state_dict().values(), early_run.net.state_dict().values(), strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=0)


def test_the_archive_of_older_episodes_survives_a_checkpoint(tmp_path, batches) -> None:
    archive = EpisodeArchive(max_steps=10**6)
    for b in batches:
        archive.add(b)
    archive.save_files(tmp_path)
    back = EpisodeArchive(max_steps=10**6)
    back.load_files(tmp_path)
    assert len(back.batches) == len(batches)
    for x, y in zip(archive.batches, back.batches, strict=True):
        np.testing.assert_array_equal(x.obs, y.obs)
        np.testing.assert_array_equal(x.lengths, y.lengths)
    back.load_files(tmp_path / "older")  # a checkpoint from before the archive was saved: empty
    assert back.batches == []
    (tmp_path / "archive_000.npz").write_bytes(b"not an npz")
    with pytest.raises(ValueError, match=r"archive_000\.npz"):
        EpisodeArchive(max_steps=10).load_files(tmp_path)


def test_a_resumed_run_asks_against_the_same_older_episodes(tmp_path) -> None:
    cfg = LoopConfig(total_steps=1600, total_labels=12, iterations=3, initial_steps=400, fragment_length=20,
                     watch_against_older=True, checkpoint_interval=1)  # fmt: skip
    loop = build(cfg, tmp=tmp_path)
    loop.run()
    kept = loop.clips.archive.batches
    assert len(kept) >= 2
    again = build(cfg, tmp=tmp_path)
    venv = again.agent.get_env()
    assert again.load_checkpoint(lambda path: load_agent("sac", path, venv))
    assert [b.num_steps for b in again.clips.archive.batches] == [b.num_steps for b in kept]
    for x, y in zip(kept, again.clips.archive.batches, strict=True):
        np.testing.assert_array_equal(x.obs, y.obs)
