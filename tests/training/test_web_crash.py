"""A web run killed at the two moments a random kill rarely hits, driven through the real
labelling server (uvicorn on loopback) with answers posted over HTTP:

- killed while it waits for its last answers (the closing wait): the resumed run waits again,
  and every answer (posted while it was dead, or during the new wait) is taken and fitted;
- killed after a checkpoint, with queries open: the resumed run continues from the checkpoint
  with its labels and its open queries, which are answered and used, not asked again
  (``slow``: about 1.5 times the first on a busy machine).
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
from safetensors.numpy import load_file

from prefrl.data import PreferenceDataset
from prefrl.storage import schema as S
from prefrl.storage.runs import find_run, run_counts
from prefrl.storage.store import QueryStore
from tests.web.server import ThreadServer

ARGS = [
    "--loop.total-steps", "400", "--loop.initial-steps", "200", "--loop.fragment-length", "20",
    "--agent.net-arch", "16", "16", "--agent.batch-size", "32", "--reward.hidden", "16", "16",
    "--trainer.epochs", "5", "--eval-episodes", "1", "--no-progress", "--no-page",
]  # fmt: skip


class Trainer:
    """``prefrl train ARGS`` in a subprocess whose stderr lines are collected as they come."""

    def __init__(self, *args: str) -> None:
        cmd = [sys.executable, "-m", "prefrl.cli.main", "train", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.err: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in iter(self.proc.stderr.readline, b""):
            self.err.append(line.decode(errors="replace"))

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    def wait_for(self, text: str, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.err):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(
                    f"no {text!r} from the trainer (exit {self.proc.returncode}):\n{self.stderr[-3000:]}"
                )
            time.sleep(0.05)

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self._reader.join(10)

    def finish(self, timeout: float = 600.0) -> str:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"the trainer did not finish in {timeout:.0f} s:\n{self.stderr[-3000:]}")
        self._reader.join(10)
        assert self.proc.returncode == 0, self.stderr[-3000:]
        return self.stderr


class Labeller:
    """A person at the labelling page: answers "left" to what the server shows, at most
    ``limit`` queries (then stops), over HTTP; ``answer(query_id)`` answers a given one."""

    def __init__(self, url: str, token: str, limit: int | None = None) -> None:
        self.url, self.headers = url, {"Authorization": f"Bearer {token}"}
        self.limit, self.answered = limit, 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def answer(self, query_id: int) -> None:
        body = {"query_id": query_id, "answer": "left"}
        r = httpx.post(self.url + "/api/labels", headers=self.headers, json=body, timeout=10)
        assert r.status_code == 201, r.text

    def _run(self) -> None:
        while not self.stopped.is_set():
            if self.limit is not None and self.answered >= self.limit:
                time.sleep(0.1)
                continue
            try:
                q = httpx.get(self.url + "/api/queries/next", headers=self.headers, timeout=10).json()
                if q.get("query_id") is None:
                    time.sleep(0.1)
                    continue
                self.answer(int(q["query_id"]))
                self.answered += 1
            except httpx.TransportError:
                time.sleep(0.1)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, ThreadServer, str]]:
    """A SQLite query store served by the labelling app under uvicorn, and a labeller's token."""
    db = tmp_path / "labels.db"
    store = QueryStore(db)
    token = store.add_user("ann")
    store.close()
    server = ThreadServer(db).start()
    yield db, server, token
    server.stop()


def _queries(db: Path, run: Path) -> dict[str, set[int]]:
    """The run's query ids in the store, by status (and ``consumed``: taken by the run)."""
    store = QueryStore(db)
    rid = find_run(store, json.loads((run / "config.json").read_text())["run_id"])
    q = S.queries.c
    with store.read() as c:
        rows = c.execute(sa.select(q.id, q.status, q.consumed).where(q.run_id == rid)).all()
    store.close()
    out: dict[str, set[int]] = {"open": set(), "answered": set(), "expired": set(), "consumed": set()}
    for qid, status, consumed in rows:
        out[status].add(int(qid))
        if consumed:
            out["consumed"].add(int(qid))
    return out


def _counts(db: Path, run: Path) -> dict[str, int]:
    store = QueryStore(db)
    rid = find_run(store, json.loads((run / "config.json").read_text())["run_id"])
    assert rid is not None
    counts = run_counts(store, rid)
    store.close()
    return counts


def _weights(path: Path) -> dict[str, np.ndarray]:
    return load_file(path)


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _checkpoint(run: Path) -> Path:
    return run / "checkpoints" / (run / "checkpoints" / "LATEST").read_text().strip()


def test_a_web_run_killed_in_its_closing_wait_waits_again_and_uses_every_answer(
    tmp_path: Path, served: tuple[Path, ThreadServer, str]
) -> None:
    db, server, token = served
    run, labels = tmp_path / "run", 6
    web = ["--teacher", "web", "--store", str(db), "--loop.answer-wait-s", "300"]
    bot = Labeller(server.url, token, limit=labels - 2)  # two queries stay open to the end
    trainer = Trainer("--run-dir", str(run), *web, *ARGS, "--loop.iterations", "3",
                      "--loop.total-labels", str(labels))  # fmt: skip
    try:
        trainer.wait_for("prefrl: training done; waiting for")
        deadline = time.monotonic() + 120
        while bot.answered < labels - 2:
            assert time.monotonic() < deadline, trainer.stderr[-3000:]
            time.sleep(0.05)
    finally:
        bot.stopped.set()
    trainer.kill()
    assert "\r" not in trainer.stderr  # --no-progress into a pipe: plain lines
    ckpt = _checkpoint(run)
    assert json.loads((ckpt / "state.json").read_text())["iteration"] == 3  # training was done
    trained = _weights(ckpt / "reward.safetensors")
    assert _same(_weights(run / "reward.safetensors"), trained)  # nothing arrived in the wait
    first, last = sorted(_queries(db, run)["open"])
    bot.answer(first)  # while the trainer is dead

    again = Trainer("--resume", str(run))
    again.wait_for("waiting for 1 open queries")  # the answer given meanwhile was taken first
    bot.answer(last)
    err = again.finish()
    assert "prefrl: 0 queries expired unanswered" in err, err[-3000:]
    queries = _queries(db, run)
    assert len(queries["answered"]) == labels and queries["consumed"] == queries["answered"]
    ds = PreferenceDataset.load(run / "preferences.npz")
    assert sorted(ds.answer_keys.tolist()) == sorted(queries["answered"])  # each answer once
    assert ds.labels[np.isin(ds.answer_keys, [first, last])].tolist() == [1.0, 1.0]
    report = json.loads((run / "report.json").read_text())
    assert report["queries"] == _counts(db, run) and report["labels_used"] == labels
    assert report["queries"]["expired"] == 0 and report["queries"]["answers_used"] == labels
    # the reward was fitted again on the two late answers
    assert not _same(_weights(run / "reward.safetensors"), trained)


@pytest.mark.slow  # two runs of three iterations, clips encoded for people: minutes on a busy machine
def test_a_web_run_resumed_from_a_checkpoint_keeps_its_labels_and_open_queries(
    tmp_path: Path, served: tuple[Path, ThreadServer, str]
) -> None:
    db, server, token = served
    run, labels, iterations = tmp_path / "run", 8, 3
    web = ["--teacher", "web", "--store", str(db), "--loop.answer-wait-s", "120"]
    bot = Labeller(server.url, token, limit=2)  # answers two of the first five, then is away
    trainer = Trainer("--run-dir", str(run), *web, *ARGS, "--loop.iterations", str(iterations),
                      "--loop.total-labels", str(labels), "--loop.initial-label-frac", "0.6")  # fmt: skip
    latest = run / "checkpoints" / "LATEST"
    deadline = time.monotonic() + 300
    while not latest.exists():  # the first checkpoint: after iteration 0, whose 5 queries are in the store
        assert trainer.proc.poll() is None and time.monotonic() < deadline, trainer.stderr[-3000:]
        time.sleep(0.05)
    trainer.kill()
    state = json.loads((_checkpoint(run) / "state.json").read_text())
    assert state["iteration"] == 1 and state["queries_asked"] == 5, state  # killed in iteration 1
    before = PreferenceDataset.load(run / "preferences.npz")
    asked = _queries(db, run)
    open_before = asked["open"]
    assert (
        len(open_before) >= 3 and len(before) >= 1 and set(before.answer_keys.tolist()) <= asked["consumed"]
    )

    again = Trainer("--resume", str(run))
    bot.limit = None  # back: answers what is open, then what the resumed run asks
    try:
        err = again.finish()
    finally:
        bot.stopped.set()
    assert "starting over" not in err
    after = PreferenceDataset.load(run / "preferences.npz")
    keep = np.isin(after.answer_keys, before.answer_keys)
    assert sorted(after.answer_keys[keep].tolist()) == sorted(before.answer_keys.tolist())  # labels kept
    np.testing.assert_array_equal(after.labels[keep], np.ones(int(keep.sum())))
    queries = _queries(db, run)
    assert open_before <= queries["consumed"], "a query open at the kill was not answered and used"
    assert sum(len(queries[s]) for s in ("open", "answered", "expired")) == labels  # none asked twice
    report = json.loads((run / "report.json").read_text())
    assert report["resumed"] and report["queries_asked"] == labels and report["labels_used"] == labels
    assert report["queries"] == _counts(db, run) and report["queries"]["expired"] == 0
    assert sorted(after.answer_keys.tolist()) == sorted(queries["consumed"])
