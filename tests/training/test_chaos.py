"""Chaos: ``kill -9`` a running ``prefrl train`` at random moments, resume each time.

After every kill the labels on disk never decrease; in the end the run has spent exactly its
label budget (no query asked twice, none lost) and finishes with a complete run directory.
With the web teacher a labelling bot answers through a real ``prefrl label`` server the
whole time, and at the end the query store and the run agree: every answer the run took is
in its dataset, each once, and no clip file is left that the store does not know.
The fast variants kill 3 times; the ``slow`` ones 20 times in a row.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import sqlalchemy as sa

from prefrl.data import PreferenceDataset
from prefrl.storage import schema as S
from prefrl.storage.store import QueryStore
from prefrl.teachers.human import combine_answers
from tests.web.server import Server

LABELS = 12
ARGS = [
    "--loop.total-steps", "1200", "--loop.iterations", "6", "--loop.initial-steps", "200",
    "--loop.total-labels", str(LABELS), "--loop.fragment-length", "20",
    "--loop.initial-label-frac", "0.25",
    "--agent.net-arch", "16", "16", "--agent.batch-size", "32", "--reward.hidden", "16", "16",
    "--trainer.epochs", "20", "--eval-episodes", "1", "--no-progress",
]  # fmt: skip


def _train(*args: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "prefrl.cli.main", "train", *args]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _labels(run: Path) -> PreferenceDataset | None:
    path = run / "preferences.npz"
    return PreferenceDataset.load(path) if path.exists() else None


def _chaos(tmp_path: Path, kills: int, seed: int, teacher: tuple[str, ...] = ()) -> dict:
    """Run, kill and resume; returns the final report."""
    rng = np.random.default_rng(seed)
    run = tmp_path / "run"
    args = [*ARGS, *teacher]
    proc = _train("--run-dir", str(run), *args)
    seen: dict[int, float] = {}  # pair id -> label, as first seen on disk
    done = False
    for k in range(kills + 1):
        if k < kills:
            time.sleep(float(rng.uniform(1.0, 6.0)))  # start-up is ~3 s: kills land all over the run
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
        err = proc.communicate(timeout=600)[1].decode()
        if proc.returncode == 0:
            done = True
        else:
            assert proc.returncode == -signal.SIGKILL, err[-3000:]
        ds = _labels(run)
        if ds is not None:
            got = dict(zip(ds.pair_ids.tolist(), ds.labels.tolist()))
            assert set(seen) <= set(got), f"kill {k}: labels disappeared"
            assert all(got[i] == v or (np.isnan(got[i]) and np.isnan(v)) for i, v in seen.items())
            seen = got
        if done:
            break
        if (run / "config.json").exists():
            proc = _train("--resume", str(run))
        else:  # killed before the run directory was written: start it again
            proc = _train("--run-dir", str(run), "--force", *args)
    if not done:  # the last resume runs to the end
        proc = _train("--resume", str(run))
        err = proc.communicate(timeout=600)[1].decode()
        assert proc.returncode == 0, err[-3000:]
    report = json.loads((run / "report.json").read_text())
    final = _labels(run)
    assert final is not None and report["queries_asked"] == LABELS
    if not teacher:  # the oracle answers every query at once
        assert len(final) == LABELS == report["labels_used"]
    assert set(seen) <= set(final.pair_ids.tolist())
    assert not list(run.rglob("*.tmp")), "a temporary file was left behind"
    assert "Traceback" not in err and "XDG_RUNTIME_DIR" not in err, err[-3000:]
    return report


@pytest.mark.slow  # real kills of real runs
def test_three_random_kills_lose_no_label_and_ask_none_twice(tmp_path: Path) -> None:
    _chaos(tmp_path, kills=3, seed=0)


@pytest.mark.slow  # ~3 min
def test_twenty_random_kills_in_a_row(tmp_path: Path) -> None:
    _chaos(tmp_path, kills=20, seed=1)


class LabellingBot:
    """A labeller answering every query it is shown through the server's HTTP API, at
    random (left / right / equal, sometimes can't tell), until stopped."""

    def __init__(self, url: str, token: str, seed: int) -> None:
        self.url, self.headers = url, {"Authorization": f"Bearer {token}"}
        self.rng = np.random.default_rng(seed)
        self.answered = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        answers = ["left", "right", "equal", "incomparable"]
        while not self.stopped.is_set():
            try:
                q = httpx.get(self.url + "/api/queries/next", headers=self.headers, timeout=5).json()
                if q.get("query_id") is None:
                    time.sleep(0.2)
                    continue
                answer = answers[int(self.rng.choice(4, p=[0.45, 0.4, 0.1, 0.05]))]
                body = {"query_id": q["query_id"], "answer": answer}
                r = httpx.post(self.url + "/api/labels", headers=self.headers, json=body, timeout=5)
                self.answered += r.status_code == 201
            except httpx.TransportError:
                time.sleep(0.2)
            time.sleep(float(self.rng.uniform(0.0, 0.3)))


@pytest.fixture
def labelled_store(tmp_path: Path) -> Iterator[tuple[Path, LabellingBot]]:
    """A SQLite query store served by ``prefrl label`` with a bot labelling through it."""
    db = tmp_path / "labels.db"
    store = QueryStore(db)
    token = store.add_user("bot")
    store.close()
    server = Server(db).start()
    bot = LabellingBot(server.url, token, seed=0)
    bot.thread.start()
    yield db, bot
    bot.stopped.set()
    bot.thread.join(10)
    server.stop()


def _store_agrees_with_run(db: Path, run: Path) -> None:
    """The run's dataset holds exactly the answers it took from the store, each once, and the
    clip folder holds only files the store knows."""
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as c:
        key = json.loads((run / "config.json").read_text())["run_id"]  # the store knows a run by its id
        run_id = c.execute(sa.select(S.runs.c.id).where(S.runs.c.name == key)).scalar_one()
        q = S.queries.c
        n_queries = c.execute(sa.select(sa.func.count()).where(q.run_id == run_id)).scalar_one()
        taken = c.execute(sa.select(q.id).where(q.run_id == run_id, q.consumed.is_(True))).scalars().all()
        answers: dict[int, list[str]] = {int(i): [] for i in taken}
        for qid, ans in c.execute(
            sa.select(S.labels.c.query_id, S.labels.c.answer).where(S.labels.c.query_id.in_(taken))
        ):
            answers[int(qid)].append(ans)
        known = {f for row in c.execute(sa.select(S.clips.c.video, S.clips.c.arrays)) for f in row if f}
        known |= set(c.execute(sa.select(S.episodes.c.video)).scalars())
    engine.dispose()
    final = _labels(run)
    assert final is not None
    assert n_queries == LABELS, f"{n_queries} queries in the store for a budget of {LABELS}"
    assert sorted(final.answer_keys.tolist()) == sorted(answers), "answers taken and answers kept differ"
    expected = combine_answers(list(answers.values()))
    expected = np.sort(expected[~np.isnan(expected)])
    assert np.array_equal(np.sort(final.labels), expected), (final.labels, expected)
    on_disk = {p.name for p in (db.parent / (db.name + ".clips")).iterdir()}
    assert on_disk <= known, f"orphan clip files: {sorted(on_disk - known)[:5]}"


def _web_chaos(tmp_path: Path, labelled_store: tuple[Path, LabellingBot], kills: int, seed: int) -> None:
    db, bot = labelled_store
    report = _chaos(tmp_path, kills, seed, teacher=("--teacher", "web", "--store", str(db)))
    assert bot.answered > 0 and report["labels_used"] > 0
    _store_agrees_with_run(db, tmp_path / "run")


@pytest.mark.slow  # real kills of real runs
def test_web_teacher_three_random_kills(tmp_path: Path, labelled_store: tuple[Path, LabellingBot]) -> None:
    _web_chaos(tmp_path, labelled_store, kills=3, seed=2)


@pytest.mark.slow  # ~4 min
def test_web_teacher_twenty_random_kills_in_a_row(
    tmp_path: Path, labelled_store: tuple[Path, LabellingBot]
) -> None:
    _web_chaos(tmp_path, labelled_store, kills=20, seed=3)
