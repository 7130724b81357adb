"""Fixtures: a query store with queries and labellers, and a live server over it.

Each store-backed test runs on a SQLite file and, when ``PREFRL_TEST_POSTGRES_URL`` is set,
on PostgreSQL (see :mod:`tests.storage.backends`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from prefrl.teachers.human import StoreTeacher
from tests.storage.backends import Backend, backend
from tests.storage.helpers import make_fragments
from tests.web.server import Server, ThreadServer

__all__ = ["backend"]


@pytest.fixture
def teacher(backend: Backend) -> StoreTeacher:
    """A store with 3 queries over 6 fragments (run 'default')."""
    t = backend.teacher(instruction="Which clip is redder?")
    t.submit(make_fragments(6), np.array([[0, 1], [2, 3], [4, 5]]))
    t.flush()
    return t


@pytest.fixture
def tokens(teacher: StoreTeacher) -> dict[str, str]:
    """Two labellers and an admin."""
    s = teacher.store
    return {"ann": s.add_user("ann"), "bob": s.add_user("bob"), "root": s.add_user("root", admin=True)}


@pytest.fixture
def server(backend: Backend, teacher: StoreTeacher, tokens: dict[str, str]) -> Iterator[ThreadServer]:
    """A real uvicorn server in a thread (see ``process_server`` for one that can be killed)."""
    srv = ThreadServer(backend.store, clip_dir=backend.clip_dir).start()
    yield srv
    srv.stop()


@pytest.fixture
def process_server(backend: Backend, teacher: StoreTeacher, tokens: dict[str, str]) -> Iterator[Server]:
    """``prefrl label`` in a subprocess, so that tests can SIGKILL it."""
    srv = Server(backend.store, None, "--clip-dir", str(backend.clip_dir)).start()
    yield srv
    srv.stop()
