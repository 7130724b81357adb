"""Teachers answer pairs of fragments: simulated ones from true rewards, or people.

Two protocols:

- :class:`Teacher` answers at once (synthetic teachers, the terminal labeller).
- :class:`AsyncTeacher` takes queries now and answers later (people labelling in the
  web app through the query store). The training loop submits queries, keeps training
  the agent, and collects whatever answers have arrived at each reward update.
"""

from typing import Protocol, runtime_checkable

import numpy as np

from prefrl.data.fragments import Fragments
from prefrl.teachers.synthetic import PRESETS, SyntheticTeacher, TeacherConfig


@runtime_checkable
class Teacher(Protocol):
    """Labels pairs ``[B, 2]`` of fragments: ``[B]`` P(first preferred), NaN = no answer."""

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class AsyncTeacher(Protocol):
    """Takes queries now, answers later.

    ``submit`` enqueues pairs ``[B, 2]`` of ``fragments``; ``poll`` returns the answers
    that arrived since the last call as ``(fragments, pairs [B', 2], labels [B'])``
    batches (labels may be NaN for "incomparable" / skipped answers, which are not
    trained on); ``pending`` counts queries asked but not yet answered.
    """

    def submit(self, fragments: Fragments, pairs: np.ndarray) -> None: ...

    def poll(self) -> list[tuple[Fragments, np.ndarray, np.ndarray]]: ...

    def pending(self) -> int: ...


__all__ = ["PRESETS", "AsyncTeacher", "SyntheticTeacher", "Teacher", "TeacherConfig"]
