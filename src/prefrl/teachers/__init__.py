"""Teachers answer pairs of fragments: simulated ones from true rewards, or people."""

from typing import Protocol

import numpy as np

from prefrl.data.fragments import Fragments
from prefrl.teachers.synthetic import PRESETS, SyntheticTeacher, TeacherConfig


class Teacher(Protocol):
    """Labels pairs ``[B, 2]`` of fragments: ``[B]`` P(first preferred), NaN = no answer."""

    def label(self, fragments: Fragments, pairs: np.ndarray) -> np.ndarray: ...


__all__ = ["PRESETS", "SyntheticTeacher", "Teacher", "TeacherConfig"]
