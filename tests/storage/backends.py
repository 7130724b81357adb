"""Store backends the store and web tests run on: a SQLite file, and PostgreSQL when
``PREFRL_TEST_POSTGRES_URL`` names a database (e.g.
``postgresql+psycopg://prefrl:prefrl@127.0.0.1:5432/prefrl_test``; each test gets its own
schema in it, dropped afterwards)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from prefrl.storage.store import QueryStore
from prefrl.teachers.human import StoreTeacher

POSTGRES_ENV = "PREFRL_TEST_POSTGRES_URL"


@dataclass(frozen=True)
class Backend:
    """Where a test's query store lives: a SQLite path or a database URL, and a clip folder."""

    name: str
    store: str
    clip_dir: Path

    def open(self) -> QueryStore:
        return QueryStore(self.store, self.clip_dir)

    def teacher(self, **kwargs: Any) -> StoreTeacher:
        return StoreTeacher(self.store, clip_dir=self.clip_dir, **kwargs)

    def cli_args(self) -> list[str]:
        return ["--store", self.store, "--clip-dir", str(self.clip_dir)]


def make_backend(name: str, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty store of kind ``name`` ("sqlite" or "postgres"), removed afterwards."""
    if name == "sqlite":
        yield Backend("sqlite", str(tmp_path / "labels.db"), tmp_path / "labels.db.clips")
        return
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        pytest.skip(f"PostgreSQL store tests need {POSTGRES_ENV}=postgresql+psycopg://user:pw@host/db")
    schema = "t_" + secrets.token_hex(6)
    admin = sa.create_engine(base)
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = sa.make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield Backend("postgres", url.render_as_string(hide_password=False), tmp_path / "clips")
    finally:
        with admin.begin() as c:
            c.exec_driver_sql("SET lock_timeout = '20s'")
            c.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Each test once on a SQLite file and once on PostgreSQL (skipped without the URL)."""
    yield from make_backend(request.param, tmp_path)
