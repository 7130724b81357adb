"""The query store's database: one SQL engine, its transactions and its schema version.

:class:`StoreDatabase` opens a SQLite file or any SQLAlchemy URL, creates or migrates the
store's tables (:mod:`prefrl.storage.schema`), and hands out transactions: writes of one
process queue on a lock (SQLite has one writer at a time), reads run beside them under WAL.
:class:`~prefrl.storage.store.QueryStore` builds the store's operations on it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url

from prefrl.storage import schema as S
from prefrl.storage.records import StoreError, StoreVersionError, resolve_store, sqlite_begin, sqlite_connect


class StoreDatabase:
    """A query store's SQL database: engine, transactions, schema creation and migration.

    Args:
        store: a SQLite file path or a SQLAlchemy URL.
        clip_dir: the clip folder; defaults to ``<sqlite file>.clips`` (required for other URLs).
    """

    def __init__(self, store: str | Path, clip_dir: str | Path | None = None) -> None:
        self.url, self.clip_dir = resolve_store(store, clip_dir)
        self.where = make_url(self.url).render_as_string(hide_password=True)
        self.is_sqlite = make_url(self.url).get_backend_name() == "sqlite"
        kwargs: dict[str, Any] = {"pool_pre_ping": not self.is_sqlite}
        if not self.is_sqlite:  # the web app serves requests from up to 40 threads
            kwargs.update(pool_size=20, max_overflow=20)
        if self.is_sqlite:
            kwargs["connect_args"] = {"timeout": 60, "check_same_thread": False}
        self.engine = sa.create_engine(self.url, **kwargs)
        # SQLite has one writer at a time: threads of this process queue here (FIFO hand-over)
        # rather than in SQLite's busy handler, which sleeps up to 100 ms between retries
        self._write_lock: AbstractContextManager[Any] = threading.Lock() if self.is_sqlite else nullcontext()
        if self.is_sqlite:
            event.listen(self.engine, "connect", sqlite_connect)
            event.listen(self.engine, "begin", sqlite_begin)
        try:
            self._init_schema()
        except sa.exc.DatabaseError as e:
            raise StoreError(f"{self.where}: cannot open as a prefrl query store ({e.orig})") from e

    @contextmanager
    def write(self, durable: bool = True) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite), committed on exit.

        ``durable=False``: the commit does not wait for its fsync (SQLite ``synchronous=NORMAL``,
        PostgreSQL ``synchronous_commit=off``); a power cut may undo it, a killed process
        never does (SQLite), or a crash of the database server may (PostgreSQL).
        """
        with self._write_lock, self.engine.connect() as conn:
            if not durable:
                conn = conn.execution_options(prefrl_durable=False)
            with conn.begin():
                if not durable and conn.dialect.name == "postgresql":
                    conn.exec_driver_sql("SET LOCAL synchronous_commit = off")
                yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only transaction (concurrent with writers under WAL)."""
        with self.engine.connect().execution_options(prefrl_read=True) as conn, conn.begin():
            yield conn

    def _init_schema(self) -> None:
        with self.write() as c:
            if c.dialect.name == "postgresql":  # a trainer and a server may create a new store at once
                c.exec_driver_sql("SELECT pg_advisory_xact_lock(7297601)")
            tables = set(sa.inspect(c).get_table_names())
            if "meta" not in tables:
                if tables & {"queries", "labels", "clips"}:
                    raise StoreError(f"{self.where} has tables {sorted(tables)} but is not a prefrl store")
                S.metadata.create_all(c)
                c.execute(sa.insert(S.meta).values(key="schema_version", value=str(S.SCHEMA_VERSION)))
                return
            v = c.execute(sa.select(S.meta.c.value).where(S.meta.c.key == "schema_version")).scalar()
            if v is not None and v.isdigit() and 1 <= int(v) < S.SCHEMA_VERSION:
                S.migrate(c, int(v))
                return
        if v != str(S.SCHEMA_VERSION):
            raise StoreVersionError(
                f"{self.where} was made with query-store schema version {v}, but this prefrl reads "
                f"version {S.SCHEMA_VERSION}. Open it with the prefrl version that made it (and "
                "`prefrl label export` its labels), or start a new store."
            )

    def close(self) -> None:
        """Release database connections."""
        self.engine.dispose()
