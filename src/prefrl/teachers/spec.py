"""One way to name a teacher, for the CLI, the loop and the preference wrapper.

A teacher *spec* is a simulated preset (``"oracle"``, ``"noisy"``, ``"mistake"``, ``"skip"``,
``"myopic"``, ``"equal"``; see :mod:`prefrl.teachers.synthetic`), ``"terminal"`` (a person at
this terminal), ``"web"`` (people in the web app, with a query store) or ``"store:PATH_OR_URL"``
(the same with the store named inline), or an object that already is a teacher.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import numpy as np

from prefrl.teachers import AsyncTeacher, Teacher
from prefrl.teachers.synthetic import PRESETS, SyntheticTeacher, TeacherConfig

TeacherName = Literal["oracle", "noisy", "mistake", "skip", "myopic", "equal", "terminal", "web"]
TEACHER_NAMES: tuple[str, ...] = (*PRESETS, "terminal", "web")
AnyTeacher: TypeAlias = Teacher | AsyncTeacher


def check_teacher_spec(spec: object, store: str | None = None) -> None:
    """Raise ``ValueError`` naming the choices when ``spec`` names no teacher (objects pass)."""
    if not isinstance(spec, str):
        is_async(spec)  # raises TypeError for an object that is no teacher
        return
    if spec.startswith("store:"):
        if not spec[len("store:") :]:
            raise ValueError("teacher 'store:' needs a path or URL after the colon")
        return
    if spec not in TEACHER_NAMES:
        raise ValueError(
            f"unknown teacher {spec!r}: use a preset {list(PRESETS)}, 'terminal', 'web' (with a store) "
            "or 'store:PATH_OR_URL', or a Teacher / AsyncTeacher object"
        )
    if spec == "web" and store is None:
        raise ValueError("teacher 'web' needs a query store (--store PATH_OR_URL, or 'store:PATH_OR_URL')")


def make_teacher(
    spec: str | AnyTeacher,
    *,
    run: str = "default",
    title: str | None = None,
    seed: int = 0,
    store: str | None = None,
) -> AnyTeacher:
    """The teacher ``spec`` names (see module docstring); objects are returned as they are.

    Args:
        spec: a teacher name, ``"store:PATH_OR_URL"`` or a teacher object.
        run: run id under which a human teacher files its queries in the store.
        title: the run's name people see (default: ``run``).
        seed: seed of a simulated teacher's random generator.
        store: the query store of ``"web"``.
    """
    check_teacher_spec(spec, store)
    if not isinstance(spec, str):
        return spec
    if spec in PRESETS:
        return SyntheticTeacher(TeacherConfig.preset(spec), rng=np.random.default_rng(seed))
    from prefrl.teachers import human  # imports the store and video encoding: only when needed

    if spec == "terminal":
        return human.TerminalTeacher()
    if spec.startswith("store:"):
        store = spec[len("store:") :]
    assert store is not None
    return human.StoreTeacher(store, run=run, title=title)


def is_async(teacher: object) -> bool:
    """Whether ``teacher`` answers later (an :class:`AsyncTeacher`) rather than at once.

    Raises:
        TypeError: ``teacher`` is neither kind.
    """
    if isinstance(teacher, Teacher):
        return False
    if isinstance(teacher, AsyncTeacher):
        return True
    raise TypeError(
        f"teacher {type(teacher).__name__} is neither a Teacher (a label method) nor an "
        "AsyncTeacher (submit, poll, pending and resume methods)"
    )
