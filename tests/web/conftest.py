"""Fixtures: a query store with queries and labellers, and a live server over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from prefrl.teachers.human import StoreTeacher
from tests.storage.helpers import make_fragments
from tests.web.server import Server, ThreadServer


@pytest.fixture
def teacher(tmp_path: Path) -> StoreTeacher:
    """A store with 3 queries over 6 fragments (run 'default')."""
    t = StoreTeacher(tmp_path / "labels.db", instruction="Which clip is redder?")
    t.submit(make_fragments(6), np.array([[0, 1], [2, 3], [4, 5]]))
    return t


@pytest.fixture
def tokens(teacher: StoreTeacher) -> dict[str, str]:
    """Two labellers and an admin."""
    s = teacher.store
    return {"ann": s.add_user("ann"), "bob": s.add_user("bob"), "root": s.add_user("root", admin=True)}


@pytest.fixture
def server(teacher: StoreTeacher, tokens: dict[str, str]) -> Iterator[ThreadServer]:
    """A real uvicorn server in a thread (see ``process_server`` for one that can be killed)."""
    srv = ThreadServer(teacher.store.url.removeprefix("sqlite:///")).start()
    yield srv
    srv.stop()


@pytest.fixture
def process_server(teacher: StoreTeacher, tokens: dict[str, str]) -> Iterator[Server]:
    """``prefrl label`` in a subprocess, so that tests can SIGKILL it."""
    srv = Server(teacher.store.url.removeprefix("sqlite:///")).start()
    yield srv
    srv.stop()
