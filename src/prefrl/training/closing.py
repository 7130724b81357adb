"""The end of a run with people answering: nobody answers for nothing.

A person's answer is the most expensive thing a run handles, so when training is done the
loop stops asking, waits up to ``answer_wait_s`` for the queries still open (saying how
many and where to answer them), takes what arrives, and closes the rest (a teacher with
``close_queries``, such as :class:`~prefrl.teachers.human.StoreTeacher`, expires them, so
the labelling page no longer shows them and refuses late answers). Answers that arrive
before the close are taken; the reward is fitted once more on them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import TextIO

from prefrl.training.callbacks import LoopCallback, ProgressBar
from prefrl.training.labels import Labels
from prefrl.training.progress import StatusLine

POLL_S = 0.5
"""How often the final wait looks for answers."""


def shows_progress(callbacks: Iterable[LoopCallback]) -> bool:
    """Whether one of ``callbacks`` shows the run's progress (a
    :class:`~prefrl.training.callbacks.ProgressBar` that is not disabled), so that a wait may
    rewrite its status line in place."""
    return any(isinstance(cb, ProgressBar) and not cb.disable for cb in callbacks)


def status_line(live: bool, out: TextIO | None = None) -> StatusLine:
    """The status line of a wait on ``out`` (stderr): rewritten in place only on a terminal where
    the run shows its progress (``live``, :func:`shows_progress`); else, with ``--no-progress``
    or in a log file, a plain line at most every
    :data:`~prefrl.training.progress.STATUS_INTERVAL_S` seconds and the last one at the end."""
    status = StatusLine(out)
    status.tty = status.tty and live
    return status


def close_queries(labels: Labels, wait_s: float, live: bool = False, out: TextIO | None = None) -> int:
    """Wait up to ``wait_s`` seconds for the open queries of ``labels``' async teacher, take the
    answers, close the rest; returns the answers added to the dataset (``live``: the run shows
    its progress, see :func:`status_line`)."""
    teacher = labels.async_teacher
    assert teacher is not None
    out = out or sys.stderr
    flush = getattr(teacher, "flush", None)
    if flush is not None:
        flush()  # every query submitted is in front of people
    hint = getattr(teacher, "answer_hint", "")
    where = f"; answer them with: {hint}" if hint else ""
    t0 = time.monotonic()
    added = labels.poll()
    status = status_line(live, out)
    shown = False
    while (n_open := teacher.pending()) > 0 and (waited := time.monotonic() - t0) < wait_s:
        status.show(
            f"prefrl: training done; waiting for {n_open} open queries ({waited:.0f} of {wait_s:.0f} s)"
            + where
        )
        shown = True
        time.sleep(min(POLL_S, max(0.0, wait_s - waited)))
        added += labels.poll()
    status.close()
    close = getattr(teacher, "close_queries", None)
    closed = close() if close is not None else {}
    added += labels.poll()  # answers that landed before the close
    if shown or closed.get("expired"):
        print(
            f"prefrl: {closed.get('expired', 0)} queries expired unanswered; "
            f"{added} answers arrived after training",
            file=out,
            flush=True,
        )
    return added
