"""What the query store is made of besides the store itself: its errors, the records it
returns, where a store string points, and how SQLite connections are set up."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection, make_url


class StoreError(RuntimeError):
    """The store cannot be opened or used as asked."""


class StoreVersionError(StoreError):
    """The database was made by a prefrl with another schema version."""


class UnknownQuery(StoreError):
    """No query has this id."""


class QueryClosed(StoreError):
    """The query expired or its clips were pruned; it takes no more labels."""


class QueryFilled(StoreError):
    """The query already has the answers it needs (its run may have taken them); a further
    answer would never be used, so it is refused."""


class AlreadyLabelled(StoreError):
    """This labeller already answered this query (labels are never overwritten)."""


@dataclass(frozen=True)
class User:
    """A labeller."""

    id: int
    name: str
    is_admin: bool


@dataclass(frozen=True)
class Answered:
    """An answered query: its clips and every labeller's answer (oldest first)."""

    query_id: int
    left_clip: int
    right_clip: int
    answers: tuple[str, ...]


def hash_token(token: str) -> str:
    """SHA-256 hex of a sign-in token; only the hash is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def resolve_store(store: str | Path, clip_dir: str | Path | None = None) -> tuple[str, Path]:
    """``(SQLAlchemy URL, clip folder)`` for a file path or URL.

    A plain path is a SQLite file; its clips go to ``<path>.clips/``. A ``sqlite:///`` URL
    likewise; any other URL (PostgreSQL) needs ``clip_dir`` (a folder that the trainer and
    the server share).
    """
    s = str(store)
    if "://" not in s:
        path = Path(s).expanduser().resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{path}"
        default_clips = path.with_name(path.name + ".clips")
    else:
        u = make_url(s)
        if u.get_backend_name() == "sqlite":
            if not u.database or u.database == ":memory:":
                raise StoreError(f"an in-memory SQLite store cannot be shared: {s!r}; give a file path")
            default_clips = Path(u.database).expanduser().resolve()
            default_clips = default_clips.with_name(default_clips.name + ".clips")
        elif clip_dir is None:
            raise StoreError(
                f"store {u.render_as_string(hide_password=True)!r} is not a SQLite file: pass clip_dir "
                "(--clip-dir), a folder both the trainer and the labelling server can read"
            )
        else:
            default_clips = Path(clip_dir)
        url = s
    clips = Path(clip_dir).expanduser().resolve() if clip_dir is not None else default_clips
    clips.mkdir(parents=True, exist_ok=True)
    return url, clips


def sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # transactions are begun explicitly in _sqlite_begin
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=FULL")
    cur.execute("PRAGMA busy_timeout=60000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def sqlite_begin(conn: Connection) -> None:
    opts = conn.get_execution_options()
    if opts.get("prefrl_read", False):
        conn.exec_driver_sql("BEGIN")
        return
    sync = "FULL" if opts.get("prefrl_durable", True) else "NORMAL"
    if conn.info.get("prefrl_sync") != sync:  # per connection; applies to this transaction's commit
        conn.exec_driver_sql(f"PRAGMA synchronous={sync}")
        conn.info["prefrl_sync"] = sync
    conn.exec_driver_sql("BEGIN IMMEDIATE")
