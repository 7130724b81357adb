"""The labeller process of the preference wrapper.

It copies finished segments out of the shared segment ring
(:mod:`prefrl.preference_env.ring`), pairs each new segment with a recent one
(:class:`~prefrl.selection.RecentPairs`), asks the teacher and forwards every answer to the
trainer process (:mod:`prefrl.preference_env.trainer_process`) on an unbounded queue.
Started by :mod:`prefrl.preference_env.runtime` through
:func:`~prefrl.preference_env.workers.run_worker`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from prefrl.preference_env import shared_memory as sh
from prefrl.preference_env.ring import Segment, SegmentRing, recv_slots, send_slots
from prefrl.preference_env.shared_memory import SharedBoard
from prefrl.preference_env.workers import Guard, RingLink, Stop, fragments_to_message, segments_to_fragments
from prefrl.selection.pairing import RecentPairs
from prefrl.teachers import Answers, AsyncTeacher, Teacher
from prefrl.teachers.spec import is_async, make_teacher


@dataclass
class LabellerSettings:
    """What the labeller needs of :class:`~prefrl.preference_env.config.PreferenceEnvConfig`."""

    teacher: Any  # a spec string, a Teacher or an AsyncTeacher (must pickle)
    run: str
    seed: int
    pool_size: int
    pairs_per_fragment: float
    total_labels: int | None


def labeller(
    board: SharedBoard, guard: Guard, settings: LabellerSettings, link: RingLink, prefs: Any
) -> None:
    """Pair incoming segments and label them; forward ``(fragments, pairs, labels)`` to the trainer."""
    prefs.cancel_join_thread()  # never block exit on a trainer that stopped reading
    ring = SegmentRing.attach_ring(link.name, link.spec)
    try:
        _label(board, guard, settings, ring, link, prefs)
    finally:
        ring.close()


def _take_segments(ring: SegmentRing, link: RingLink) -> list[Segment]:
    """Copy out the segments handed over since the last call (waiting up to 0.1 s) and free their slots."""
    try:
        slots = recv_slots(link.ready, timeout=0.1)
    except (EOFError, OSError):  # the environment process closed its end or died
        raise Stop from None
    new = [ring.read(s) for s in slots]
    if slots:
        send_slots(link.free, slots)
    return new


def _ref(seg: Segment, chosen: list[Segment], where: dict[int, int]) -> int:
    """Index of ``seg`` in ``chosen``, appending it the first time."""
    if id(seg) not in where:
        where[id(seg)] = len(chosen)
        chosen.append(seg)
    return where[id(seg)]


def _label(
    board: SharedBoard,
    guard: Guard,
    settings: LabellerSettings,
    ring: SegmentRing,
    link: RingLink,
    prefs: Any,
) -> None:
    """The labeller's loop: each batch of new segments gives ``pairs [p, 2]`` over the ``m``
    segments they use, sent as ``(fragments_to_message(fragments of m), pairs, labels [p])``."""
    teacher = make_teacher(settings.teacher, run=settings.run, seed=settings.seed)
    answers_later = cast(AsyncTeacher, teacher) if is_async(teacher) else None
    pairing = RecentPairs[Segment](
        pool_size=settings.pool_size,
        pairs_per_item=settings.pairs_per_fragment,
        budget=settings.total_labels,
        rng=np.random.default_rng(settings.seed),
    )
    while True:
        guard.check()
        new = _take_segments(ring, link)
        board.ints[sh.SEGMENTS_LABELLED] += len(new)
        chosen: list[Segment] = []  # each segment once per batch, however many pairs use it
        where: dict[int, int] = {}
        idx = [(_ref(a, chosen, where), _ref(b, chosen, where)) for a, b in pairing.add(new)]
        if chosen:
            frags = segments_to_fragments(chosen)
            pairs = np.asarray(idx, dtype=np.int64).reshape(-1, 2)
            if answers_later is not None:
                answers_later.submit(frags, pairs)
            else:
                labels = np.asarray(cast(Teacher, teacher).label(frags, pairs), dtype=np.float32)
                prefs.put((fragments_to_message(frags), pairs, labels))
                board.ints[sh.PAIRS_LABELLED] += len(pairs)
        if answers_later is not None:
            for batch in answers_later.poll():
                ans = Answers(*batch)
                labels = np.asarray(ans.labels, dtype=np.float32)
                prefs.put((fragments_to_message(ans.fragments), np.asarray(ans.pairs), labels))
                board.ints[sh.PAIRS_LABELLED] += len(ans.pairs)
            board.ints[sh.PENDING] = int(answers_later.pending())
