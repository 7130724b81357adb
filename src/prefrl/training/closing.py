"""The end of a run with people answering: nobody answers for nothing.

A person's answer is the most expensive thing a run handles, so when training is done the
loop stops asking, waits up to ``answer_wait_s`` for the queries still open (saying how
many and where to answer them), takes what arrives, and closes the rest (a teacher with
``close_queries``, such as :class:`~prefrl.teachers.human.StoreTeacher`, expires them, so
the labelling page no longer shows them and refuses late answers). Answers that arrive
before the close are taken; the reward is fitted once more on them.

Re-asking after a crash is spread too: :func:`queries_due` hands the queries a killed
process never got into the store back over the remaining iterations, not in one lump.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, TextIO

import numpy as np

from prefrl.training.callbacks import ProgressBar
from prefrl.training.progress import StatusLine

POLL_S = 0.5
"""How often the final wait looks for answers."""


def queries_due(alloc: np.ndarray, i: int, asked: int) -> int:
    """Queries to ask at iteration ``i`` of ``len(alloc)``: its share ``alloc[i]`` plus an even
    part of those earlier iterations should have asked but did not (after a crash), so the
    budget is reached by the last iteration without one lump of catching up.

    Example:
        >>> queries_due(np.array([10, 5, 5, 5, 5]), 1, 4)  # 6 lost in a kill, 4 iterations left
        7
        >>> queries_due(np.array([10, 5, 5, 5, 5]), 4, 22)  # the last iteration asks the rest
        8
    """
    n = len(alloc)
    behind = int(alloc[:i].sum()) - asked
    if behind <= 0:  # on schedule (or ahead: ask only what is still owed up to now)
        return max(0, int(alloc[: i + 1].sum()) - asked)
    return int(alloc[i]) + math.ceil(behind / max(1, n - i))


def status_line(loop: Any, out: TextIO | None = None) -> StatusLine:
    """The status line of a wait of ``loop`` (a :class:`~prefrl.training.loop.PreferenceLoop`)
    on ``out`` (stderr): rewritten in place only on a terminal where the run shows its progress
    (a :class:`~prefrl.training.callbacks.ProgressBar` that is not disabled); else, with
    ``--no-progress`` or in a log file, a plain line at most every
    :data:`~prefrl.training.progress.STATUS_INTERVAL_S` seconds and the last one at the end."""
    status = StatusLine(out)
    status.tty = status.tty and any(isinstance(cb, ProgressBar) and not cb.disable for cb in loop.callbacks)
    return status


def close_queries(loop: Any, out: TextIO | None = None) -> int:
    """Wait for the open queries of ``loop``'s async teacher (``loop``: a
    :class:`~prefrl.training.loop.PreferenceLoop`), take the answers, close the rest; returns the
    answers added to the dataset."""
    teacher = loop.async_teacher
    assert teacher is not None
    out = out or sys.stderr
    flush = getattr(teacher, "flush", None)
    if flush is not None:
        flush()  # every query submitted is in front of people
    wait_s = loop.config.answer_wait_s
    hint = getattr(teacher, "answer_hint", "")
    where = f"; answer them with: {hint}" if hint else ""
    t0 = time.monotonic()
    added = loop._poll()
    status = status_line(loop, out)
    shown = False
    while (n_open := teacher.pending()) > 0 and (waited := time.monotonic() - t0) < wait_s:
        status.show(
            f"prefrl: training done; waiting for {n_open} open queries ({waited:.0f} of {wait_s:.0f} s)"
            + where
        )
        shown = True
        time.sleep(min(POLL_S, max(0.0, wait_s - waited)))
        added += loop._poll()
    status.close()
    close = getattr(teacher, "close_queries", None)
    closed = close() if close is not None else {}
    added += loop._poll()  # answers that landed before the close
    if shown or closed.get("expired"):
        print(
            f"prefrl: {closed.get('expired', 0)} queries expired unanswered; "
            f"{added} answers arrived after training",
            file=out,
            flush=True,
        )
    return added
