"""A web run's budget is the answers it uses: every answer given before its run closed its
queries is used, the rest of the queries expire (the page stops serving them, late answers
are refused), and the report's counts add up. A run is known to the store by its id, not by
its folder's name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import sqlalchemy as sa

from prefrl.data import PreferenceDataset
from prefrl.run.config import TrainConfig
from prefrl.run.resolve import resolve_identity
from prefrl.run.setup import prepare_run_dir
from prefrl.storage import schema as S
from prefrl.storage.runs import find_run, run_counts
from prefrl.storage.store import QueryStore
from prefrl.teachers.human import StoreTeacher
from prefrl.training.budget import queries_due
from tests.narrow import present
from tests.storage.helpers import make_fragments
from tests.training.test_chaos import LabellingBot
from tests.web.server import Server


def test_lost_submits_are_asked_again_spread_over_the_remaining_iterations() -> None:
    alloc = np.array([6, 2, 2, 2, 2, 2])
    # 4 of iteration 0's 6 queries died with the process; 5 iterations are left
    due = [queries_due(alloc, 1, 2)]
    asked = 2 + due[0]
    for i in range(2, 6):
        due.append(queries_due(alloc, i, asked))
        asked += due[-1]
    assert asked == alloc.sum() and max(due) <= 3, due  # not 2 + 4 at once


def _web_cfg(run_dir: Path, store: Path, **kw: Any) -> TrainConfig:
    cfg = TrainConfig(run_dir=str(run_dir), teacher="web", store=str(store), **kw)
    return resolve_identity(cfg)  # its id (a new one with --force), as prefrl train resolves it


def test_a_new_run_never_takes_the_answers_of_an_older_run_of_the_same_name(tmp_path: Path) -> None:
    db = tmp_path / "labels.db"
    first = _web_cfg(tmp_path / "a" / "pendulum", db)
    prepare_run_dir(first)
    assert (
        first.run_id
        and json.loads((tmp_path / "a/pendulum/config.json").read_text())["run_id"] == first.run_id
    )
    old = StoreTeacher(str(db), run=first.run_id, title="pendulum")
    old.submit(make_fragments(4), np.array([[0, 1], [2, 3]])).result()
    user = old.store.add_user("ann")
    old.store.add_label(1, present(old.store.user_for_token(user)).id, "left")
    # the same name in another folder: refused, naming both ways on
    with pytest.raises(FileExistsError, match=r"--resume .*--force"):
        prepare_run_dir(_web_cfg(tmp_path / "b" / "pendulum", db))
    assert not (tmp_path / "b" / "pendulum").exists()
    # --force on the same folder: a new id; the old run's open query is closed, its answer stays its own
    again = _web_cfg(tmp_path / "a" / "pendulum", db, force=True)
    prepare_run_dir(again)
    assert again.run_id not in (None, first.run_id)
    new = StoreTeacher(str(db), run=again.run_id, title="pendulum")
    assert new.poll(all=True) == [] and new.pending() == 0
    assert run_counts(old.store, old.run_id) == dict(
        asked=2, answered=1, used=0, expired=1, open=0, answers=1, answers_used=0
    )
    assert find_run(old.store, "pendulum") == new.run_id  # `prefrl label --run pendulum` serves the new one


ARGS = [
    "--loop.total-steps", "700", "--loop.iterations", "3", "--loop.initial-steps", "200",
    "--loop.fragment-length", "20", "--loop.answer-wait-s", "4",
    "--agent.net-arch", "16", "16", "--agent.batch-size", "32", "--reward.hidden", "16", "16",
    "--trainer.epochs", "5", "--eval-episodes", "1", "--no-progress",
]  # fmt: skip


def _train(*args: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "prefrl.cli.main", "train", *args]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _check_every_answer_used(db: Path, run: Path, report: dict, labels: int) -> None:
    """Answers used = answers given (all before the run closed its queries); counts add up."""
    run_id = json.loads((run / "config.json").read_text())["run_id"]
    store = QueryStore(db)
    rid = find_run(store, run_id)
    assert rid is not None
    counts = run_counts(store, rid)
    q = S.queries.c
    with store.read() as c:
        taken = set(c.execute(sa.select(q.id).where(q.run_id == rid, q.consumed.is_(True))).scalars())
        labelled = set(
            c.execute(
                sa.select(S.labels.c.query_id)
                .join(S.queries, q.id == S.labels.c.query_id)
                .where(q.run_id == rid)
            ).scalars()
        )
    store.close()
    assert report["queries"] == counts
    assert counts["asked"] == labels == counts["answered"] + counts["expired"] and counts["open"] == 0
    assert counts["used"] == counts["answered"] and counts["answers_used"] == counts["answers"] > 0
    assert labelled <= taken, "an answer was given that the run did not take"
    ds = PreferenceDataset.load(run / "preferences.npz")
    assert set(ds.answer_keys.tolist()) == taken and report["labels_used"] == len(ds)


def _web_runs(tmp_path: Path, n_runs: int, kills: int, labels: int) -> None:
    args = [*ARGS, "--loop.total-labels", str(labels)]
    db = tmp_path / "labels.db"
    store = QueryStore(db)
    token = store.add_user("bot")
    store.close()
    server = Server(db).start()
    bot = LabellingBot(server.url, token, seed=0)
    bot.thread.start()
    rng = np.random.default_rng(0)
    try:
        for k in range(n_runs):
            run = tmp_path / f"run{k}"
            proc = _train("--run-dir", str(run), "--teacher", "web", "--store", str(db), *args)
            for _ in range(kills if k == 0 else 0):  # the first run is killed and resumed
                time.sleep(float(rng.uniform(3.0, 8.0)))
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                proc.communicate(timeout=600)
                if not (run / "config.json").exists():
                    proc = _train(
                        "--run-dir", str(run), "--force", "--teacher", "web", "--store", str(db), *args
                    )
                else:
                    proc = _train("--resume", str(run))
            try:
                err = proc.communicate(timeout=1200)[1].decode()
            except subprocess.TimeoutExpired:
                proc.kill()
                err = proc.communicate()[1].decode()
                pytest.fail(f"run {k} did not finish in 20 minutes; its stderr:\n{err[-3000:]}")
            assert proc.returncode == 0, err[-3000:]
            report = json.loads((run / "report.json").read_text())
            _check_every_answer_used(db, run, report, labels)
        # after its run ended, no query is served and a late answer is refused
        h = {"Authorization": f"Bearer {token}"}
        bot.stopped.set()
        bot.thread.join(10)
        assert httpx.get(server.url + "/api/queries/next", headers=h).json()["query_id"] is None
    finally:
        bot.stopped.set()
        server.stop()


def test_a_web_run_uses_every_answer_given(tmp_path: Path) -> None:
    """The default suite's variant: one run of 4 labels (the ones below take minutes)."""
    _web_runs(tmp_path, n_runs=1, kills=0, labels=4)


@pytest.mark.slow  # three runs, the first killed and resumed: about 3 minutes of CPU
def test_three_web_runs_use_every_answer_given(tmp_path: Path) -> None:
    _web_runs(tmp_path, n_runs=3, kills=1, labels=6)


@pytest.mark.slow  # the runs: 60 labels each, the first killed three times
@pytest.mark.timeout(2700)  # minutes on a busy 2-core machine
def test_three_web_runs_of_60_labels_use_every_answer_given(tmp_path: Path) -> None:
    _web_runs(tmp_path, n_runs=3, kills=3, labels=60)
