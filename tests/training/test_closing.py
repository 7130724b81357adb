"""The waits of a web run print a status that suits where it goes: rewritten in place only on
a terminal that shows the run's progress; with ``--no-progress`` or in a log file, a few plain
lines (not one line of carriage-return redraws)."""

from __future__ import annotations

import io
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from prefrl.storage.store import QueryStore
from prefrl.teachers.human import StoreTeacher
from prefrl.training.callbacks import LoopCallback, ProgressBar
from prefrl.training.closing import close_queries, shows_progress, status_line
from prefrl.training.config import LoopConfig
from prefrl.training.loop import PreferenceLoop
from tests.storage.helpers import make_fragments
from tests.training.test_loop import build
from tests.training.test_progress import Terminal


def _web_loop(tmp_path: Path, callbacks: list[LoopCallback], wait_s: float = 2.0) -> PreferenceLoop:
    """A loop on Pendulum whose web teacher has two queries open."""
    cfg = LoopConfig(total_steps=400, total_labels=2, iterations=1, initial_steps=200, fragment_length=10,
                     answer_wait_s=wait_s)  # fmt: skip
    teacher = StoreTeacher(tmp_path / "labels.db", run="r")
    loop = build(cfg, teacher=teacher, tmp=tmp_path / "run")
    loop.callbacks = callbacks
    teacher.submit(make_fragments(4, length=10), np.array([[0, 1], [2, 3]])).result()
    return loop


def _close(loop: PreferenceLoop, out: io.StringIO) -> int:
    """What the loop does when training is done: wait for the open queries, close the rest."""
    return close_queries(loop.labels, loop.config.answer_wait_s, shows_progress(loop.callbacks), out)


def _answer_later(db: Path, query_id: int, after_s: float) -> threading.Thread:
    """A labeller answering ``query_id`` after ``after_s`` seconds (its own store connection)."""

    def answer() -> None:
        time.sleep(after_s)
        store = QueryStore(db)
        user = store.user_for_token(store.add_user(f"ann{query_id}"))
        assert user is not None
        store.add_label(query_id, user.id, "left")
        store.close()

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    return t


def test_the_final_wait_writes_plain_lines_to_a_log_file(tmp_path: Path) -> None:
    loop = _web_loop(tmp_path, [ProgressBar()])
    out = io.StringIO()
    answered = _answer_later(tmp_path / "labels.db", 1, 0.8)
    assert _close(loop, out) == 1
    answered.join()
    text = out.getvalue()
    assert "\r" not in text, text
    lines = text.splitlines()
    assert lines[0].startswith("prefrl: training done; waiting for 2 open queries (0 of 2 s)")
    assert "answer them with: prefrl label serve" in lines[0]
    assert "waiting for 1 open queries" in lines[-2]  # the latest status, written at the end
    assert lines[-1] == "prefrl: 1 queries expired unanswered; 1 answers arrived after training"
    assert len(lines) == 3 and len(loop.dataset) == 1


@pytest.mark.parametrize("progress", [False, True])
def test_the_final_wait_redraws_in_place_only_where_progress_is_shown(tmp_path: Path, progress: bool) -> None:
    loop = _web_loop(tmp_path, [ProgressBar(disable=not progress)], wait_s=1.2)
    term = Terminal()
    _close(loop, term)
    text = term.getvalue()
    if progress:  # a live line on the terminal, ended before the summary
        assert text.startswith("\rprefrl: training done") and text.count("\r") >= 2, text
        assert "\nprefrl: 2 queries expired unanswered" in text
    else:  # --no-progress: plain lines, as in a log
        assert "\r" not in text and text.splitlines()[0].startswith("prefrl: training done; waiting for 2")
        assert text.splitlines()[-1].startswith("prefrl: 2 queries expired unanswered")


def test_the_wait_for_the_first_label_writes_plain_lines_with_no_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = _web_loop(tmp_path, [ProgressBar(disable=True)])
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    answered = _answer_later(tmp_path / "labels.db", 2, 1.5)
    loop.labels.wait_for_first(status_line(shows_progress(loop.callbacks)))  # as the loop waits
    answered.join()
    assert len(loop.dataset) == 1
    text = term.getvalue()
    assert "\r" not in text and text.startswith("waiting for labels: 2 queries pending"), text
