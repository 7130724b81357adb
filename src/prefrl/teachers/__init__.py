"""Teachers answer pairs of fragments: simulated ones from true rewards, or people.

Two protocols:

- :class:`Teacher` answers at once (synthetic teachers, the terminal labeller).
- :class:`AsyncTeacher` takes queries now and answers later (people labelling in the
  web app through the query store). The training loop submits queries, keeps training
  the agent, and collects whatever answers have arrived at each reward update.
"""

from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from prefrl.data.fragments import Fragments
from prefrl.teachers.synthetic import PRESETS, SyntheticTeacher, TeacherConfig


@runtime_checkable
class Teacher(Protocol):
    """Labels pairs ``[B, 2]`` of fragments: ``[B]`` P(first preferred), NaN = no answer."""

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray: ...


class Answers(NamedTuple):
    """A batch of answers from an :class:`AsyncTeacher`."""

    fragments: Fragments
    pairs: np.ndarray
    """``[B, 2]`` indices into ``fragments``."""
    labels: np.ndarray
    """``[B]`` P(first preferred); NaN for "incomparable" / skipped (not trained on)."""
    keys: np.ndarray | None = None
    """``[B]`` int64 ids of the answers where they are kept (e.g. query-store ids), so that
    an answer handed over twice (after a crash) is added once; ``None``: no ids."""


@runtime_checkable
class AsyncTeacher(Protocol):
    """Takes queries now, answers later.

    ``submit`` enqueues pairs ``[B, 2]`` of ``fragments``; ``poll`` returns the answers
    that arrived since the last call as :class:`Answers` batches, or with ``all=True``
    every answer given so far; ``pending`` counts queries asked but not yet answered.
    ``resume`` is called once when a run restarts after a crash: it tidies what the killed
    process left half-written and returns how many queries the run has asked (those the
    teacher holds, which are the ones answers can still come for).
    """

    def submit(self, fragments: Fragments, pairs: np.ndarray) -> object: ...

    def poll(self, all: bool = False) -> list[Answers]: ...

    def pending(self) -> int: ...

    def resume(self) -> int: ...


__all__ = ["PRESETS", "Answers", "AsyncTeacher", "SyntheticTeacher", "Teacher", "TeacherConfig"]
