"""The query store: runs, clips, queries, labels and labellers in one SQL database.

A SQLite file by default (WAL journal, every write transaction ``BEGIN IMMEDIATE`` so
concurrent writers queue instead of failing; writes of one process also queue on a lock,
which hands over at once instead of SQLite's sleep-and-retry; labels are committed with
``synchronous=FULL``, i.e. fsynced, while leases, which a crash may lose harmlessly, are
not), or any SQLAlchemy URL (``postgresql+psycopg://…``) for shared deployments. Clip
files live in a folder beside the database. The trainer
(:class:`~prefrl.teachers.human.StoreTeacher`) and the labelling web app (:mod:`prefrl.web`)
talk to each other only through this store, so they can run as separate processes, and
either can be killed and restarted without losing a label: a label is committed before
its HTTP request is answered.

Example:
    >>> import tempfile, os
    >>> store = QueryStore(os.path.join(tempfile.mkdtemp(), "labels.db"))
    >>> run = store.ensure_run("demo", instruction="Which clip balances the pole better?")
    >>> store.pending(run)
    0
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from prefrl.data.fragments import Fragments
from prefrl.storage import schema as S
from prefrl.storage.clips import VIDEO_EXT, clip_frames, encode_video, load_fragments, save_fragment
from prefrl.storage.database import StoreDatabase
from prefrl.storage.records import (
    AlreadyLabelled,
    Answered,
    QueryClosed,
    QueryFilled,
    StoreError,
    StoreVersionError,
    UnknownQuery,
    User,
    hash_token,
    resolve_store,
)

__all__ = [
    "AlreadyLabelled",
    "Answered",
    "QueryClosed",
    "QueryFilled",
    "QueryStore",
    "StoreError",
    "StoreVersionError",
    "UnknownQuery",
    "User",
    "hash_token",
    "resolve_store",
]


class LeasedQuery(TypedDict):
    """A query leased to a labeller (:meth:`QueryStore.next_query`): its two clips' videos."""

    query_id: int
    run_id: int
    instruction: str
    left_video: str
    right_video: str


def _new_id(result: sa.CursorResult[tuple[object, ...]]) -> int:
    """The primary key of the row an ``INSERT`` added."""
    key = result.inserted_primary_key
    assert key is not None  # an insert always has one
    return int(key[0])


class QueryStore(StoreDatabase):
    """Runs, clips, queries, labels and labellers (see :mod:`prefrl.storage.schema`).

    Args:
        store: a SQLite file path or a SQLAlchemy URL.
        clip_dir: the clip folder; defaults to ``<sqlite file>.clips`` (required for other URLs).
        count_ttl_s: how long :meth:`counts` may reuse its count of open queries (counting
            tens of thousands of rows on every request is what limits a busy server);
            labels given through this store object update it at once.
    """

    TOKEN_TTL_S = 10.0
    """Known tokens are remembered this long (their expiry is still checked every time)."""

    def __init__(
        self, store: str | Path, clip_dir: str | Path | None = None, count_ttl_s: float = 1.0
    ) -> None:
        self.count_ttl_s = count_ttl_s
        self._cache_lock = threading.Lock()
        self._open_counts: dict[int | None, tuple[float, int]] = {}  # run id (None: all) -> (time, count)
        self._tokens: dict[str, tuple[float, User, float | None]] = {}  # hash -> (time, user, expires)
        super().__init__(store, clip_dir)

    # ------------------------------------------------------------------ runs
    def ensure_run(self, name: str, instruction: str | None = None, title: str | None = None) -> int:
        """Store id of the run whose id is ``name``, created if new (with ``title``, the name
        people see; default ``name``); ``instruction`` (if given) replaces the stored one."""
        with self.write() as c:
            rid = c.execute(sa.select(S.runs.c.id).where(S.runs.c.name == name)).scalar()
            if rid is None:
                ins = sa.insert(S.runs).values(
                    name=name, title=title or name, instruction=instruction or "", created=time.time()
                )
                return _new_id(c.execute(ins))
            if instruction is not None:
                c.execute(sa.update(S.runs).where(S.runs.c.id == rid).values(instruction=instruction))
            return int(rid)

    # ----------------------------------------------------------------- clips
    def add_clips(
        self, run_id: int, fragments: Fragments, idx: Sequence[int], fps: float = 15.0
    ) -> list[int]:
        """Encode fragments ``idx`` to video + ``.npz`` in the clip folder; returns clip ids."""
        idx = [int(i) for i in idx]
        frames = clip_frames(fragments, np.asarray(idx, dtype=np.int64))  # [n, L, H, W, 3]
        rows = []
        for k, i in enumerate(idx):
            name = run_prefix(run_id) + secrets.token_hex(16)
            size = encode_video(frames[k], self.clip_dir / (name + VIDEO_EXT), fps=fps)
            size += save_fragment(fragments, i, self.clip_dir / (name + ".npz"))
            rows.append(
                dict(
                    run_id=run_id,
                    name=name,
                    video=name + VIDEO_EXT,
                    arrays=name + ".npz",
                    bytes=size,
                    episode=int(fragments.episode[i]),
                    start=int(fragments.start[i]),
                    length=fragments.length,
                    created=time.time(),
                )
            )
        ids = []
        with self.write() as c:
            for r in rows:  # one by one: inserted ids are portable across backends
                ids.append(_new_id(c.execute(sa.insert(S.clips).values(**r))))
        return ids

    def load_clip_fragments(self, clip_ids: Sequence[int]) -> Fragments:
        """Rebuild the fragments of ``clip_ids`` (in order) from their ``.npz`` files."""
        with self.read() as c:
            rows = c.execute(
                sa.select(S.clips.c.id, S.clips.c.arrays).where(S.clips.c.id.in_([int(i) for i in clip_ids]))
            ).all()
        files = {r.id: r.arrays for r in rows}
        missing = [i for i in clip_ids if files.get(int(i)) is None]
        if missing:
            raise StoreError(f"{self.where}: clips {missing[:5]} have no stored arrays (pruned or unknown)")
        return load_fragments([self.clip_dir / files[int(i)] for i in clip_ids])

    def sweep_run(self, run_id: int) -> int:
        """Delete what a killed trainer of ``run_id`` left behind: clips no query refers to
        (encoded before their queries were stored) and any file in the clip folder named for
        this run that the store does not know (e.g. a half-written ``.part.webm``).

        Only safe while no trainer of this run is writing clips. Returns the files deleted.
        """
        q, cl = S.queries.c, S.clips.c
        with self.write() as c:
            used = (
                sa.select(q.left_clip)
                .where(q.run_id == run_id)
                .union(sa.select(q.right_clip).where(q.run_id == run_id))
            )
            c.execute(sa.delete(S.clips).where(cl.run_id == run_id, cl.id.not_in(used)))
            known = {
                f
                for row in c.execute(sa.select(cl.video, cl.arrays).where(cl.run_id == run_id))
                for f in row
                if f is not None
            }
            known |= set(
                c.execute(sa.select(S.episodes.c.video).where(S.episodes.c.run_id == run_id)).scalars()
            )
        gone = 0
        for path in self.clip_dir.glob(run_prefix(run_id) + "*"):
            if path.name not in known and path.is_file():
                path.unlink(missing_ok=True)
                gone += 1
        return gone

    def query_count(self, run_id: int) -> int:
        """Queries ``run_id`` has enqueued (open, answered or expired)."""
        with self.read() as c:
            n = sa.select(sa.func.count()).select_from(S.queries).where(S.queries.c.run_id == run_id)
            return int(c.execute(n).scalar() or 0)

    def clip_path(self, file_name: str, run_id: int | None = None) -> Path | None:
        """Path of a clip or episode video known to the store (of run ``run_id``), or ``None``."""
        cl, ep = S.clips.c, S.episodes.c
        with self.read() as c:
            stmt = sa.select(cl.id).where(cl.video == file_name)
            known = c.execute(stmt if run_id is None else stmt.where(cl.run_id == run_id)).first()
            if known is None:
                stmt = sa.select(ep.id).where(ep.video == file_name)
                known = c.execute(stmt if run_id is None else stmt.where(ep.run_id == run_id)).first()
        path = self.clip_dir / file_name
        return path if known is not None and path.is_file() else None

    def prune(self, max_bytes: int) -> int:
        """Delete the oldest clips that no label refers to until clip files fit ``max_bytes``.

        Their open queries become ``expired``. Clips with labels are never deleted.
        Returns the number of clips pruned.
        """
        with self.read() as c:
            total = c.execute(sa.select(sa.func.coalesce(sa.func.sum(S.clips.c.bytes), 0))).scalar() or 0
            if total <= max_bytes:
                return 0
            labelled = (
                sa.select(S.queries.c.left_clip.label("cid"))
                .where(S.queries.c.n_labels > 0)
                .union(sa.select(S.queries.c.right_clip).where(S.queries.c.n_labels > 0))
            )
            rows = c.execute(
                sa.select(S.clips.c.id, S.clips.c.name, S.clips.c.bytes)
                .where(S.clips.c.video.is_not(None), S.clips.c.id.not_in(labelled))
                .order_by(S.clips.c.id)
            ).all()
        victims, freed = [], 0
        for r in rows:
            if total - freed <= max_bytes:
                break
            victims.append(r.id)
            freed += r.bytes
        if not victims:
            return 0
        with self.write() as c:
            # a label may have arrived meanwhile: re-check inside the transaction
            c.execute(
                sa.update(S.queries)
                .where(
                    S.queries.c.status == "open",
                    S.queries.c.n_labels == 0,
                    sa.or_(S.queries.c.left_clip.in_(victims), S.queries.c.right_clip.in_(victims)),
                )
                .values(status="expired")
            )
            still = c.execute(sa.select(labelled.subquery().c.cid)).scalars().all()
            victims = [v for v in victims if v not in set(still)]
            names = c.execute(sa.select(S.clips.c.name).where(S.clips.c.id.in_(victims))).scalars().all()
            c.execute(
                sa.update(S.clips).where(S.clips.c.id.in_(victims)).values(video=None, arrays=None, bytes=0)
            )
        with self._cache_lock:
            self._open_counts.clear()
        for n in names:
            for ext in (VIDEO_EXT, ".npz"):
                (self.clip_dir / (n + ext)).unlink(missing_ok=True)
        return len(victims)

    # --------------------------------------------------------------- queries
    def add_queries(
        self,
        run_id: int,
        left: Sequence[int],
        right: Sequence[int],
        priority: Sequence[float] | None = None,
        ttl_s: float | None = None,
        labels_needed: int = 1,
    ) -> list[int]:
        """Enqueue pairs of clips; returns query ids."""
        if len(left) != len(right):
            raise ValueError(f"left and right clip lists differ in length: {len(left)} vs {len(right)}")
        if labels_needed < 1:
            raise ValueError(f"labels_needed must be >= 1, got {labels_needed}")
        now = time.time()
        prio = [0.0] * len(left) if priority is None else [float(p) for p in priority]
        ids = []
        with self.write() as c:
            for a, b, p in zip(left, right, prio):
                q = sa.insert(S.queries).values(
                    run_id=run_id,
                    left_clip=int(a),
                    right_clip=int(b),
                    priority=p,
                    status="open",
                    n_labels=0,
                    labels_needed=labels_needed,
                    created=now,
                    expires=None if ttl_s is None else now + ttl_s,
                    consumed=False,
                )
                ids.append(_new_id(c.execute(q)))
        self._count_changed(run_id, None)
        return ids

    def _servable(self, now: float, run_id: int | None) -> list[sa.ColumnElement[bool]]:
        q = S.queries.c
        cond = [q.status == "open", sa.or_(q.expires.is_(None), q.expires > now)]
        if run_id is not None:
            cond.append(q.run_id == run_id)
        return cond

    def next_query(
        self, user_id: int, run_id: int | None = None, lease_s: float = 30.0
    ) -> LeasedQuery | None:
        """Lease the best open query this labeller has not answered; ``None`` when there is none.

        Highest priority first, then oldest. A leased query is not shown to other labellers
        for ``lease_s`` seconds (unless it needs several labels and this one answered).
        """
        now = time.time()
        q = S.queries.c
        mine = sa.select(S.labels.c.query_id).where(S.labels.c.user_id == user_id)
        free = sa.or_(q.lease_until.is_(None), q.lease_until < now, q.lease_user == user_id)
        cols = (q.id, q.run_id, q.left_clip, q.right_clip)
        # a lease is not worth an fsync: if a crash undoes it, the query is simply shown again
        with self.write(durable=False) as c:
            # the query this labeller already holds (e.g. the page was reloaded), else the best free one
            # (only the lease index's columns in SQL, so that no planner scans a run's open queries)
            held = c.execute(
                sa.select(*cols, q.expires).where(
                    q.lease_user == user_id, q.status == "open", q.lease_until >= now
                )
            ).all()
            row: Any = next(  # a Row of the held query's columns, or of the free one's
                (
                    r
                    for r in held
                    if (run_id is None or r.run_id == run_id) and (r.expires is None or r.expires > now)
                ),
                None,
            )
            if row is None:
                row = c.execute(
                    sa.select(*cols)
                    .where(*self._servable(now, run_id), free, q.id.not_in(mine))
                    .order_by(q.priority.desc(), q.id)
                    .limit(1)
                    .with_for_update(skip_locked=True)
                ).first()
            if row is None:
                return None
            c.execute(
                sa.update(S.queries)
                .where(q.id == row.id)
                .values(lease_user=user_id, lease_until=now + lease_s)
            )

            def video(clip: int) -> sa.ScalarSelect[str]:
                return sa.select(S.clips.c.video).where(S.clips.c.id == clip).scalar_subquery()

            info = c.execute(
                sa.select(
                    S.runs.c.instruction,
                    video(row.left_clip).label("left"),
                    video(row.right_clip).label("right"),
                ).where(S.runs.c.id == row.run_id)
            ).one()
        return {
            "query_id": row.id,
            "run_id": row.run_id,
            "instruction": info.instruction or "",
            "left_video": info.left,
            "right_video": info.right,
        }

    def queue_length(self, user_id: int | None = None, run_id: int | None = None) -> int:
        """Open, unexpired queries (for ``user_id``: those it has not answered). Exact."""
        with self.read() as c:
            return self._queue_length(c, user_id, run_id, time.time(), cached=False)

    def counts(self, user_id: int, run_id: int | None = None) -> tuple[int, int]:
        """``(labels given by user_id, queue length for it)`` in one read, for the web app.

        The open-query count is reused for up to ``count_ttl_s`` seconds (queries added or
        expired by other processes show up that much later); everything else is exact.
        """
        with self.read() as c:
            stmt = sa.select(sa.func.count()).select_from(S.labels).where(S.labels.c.user_id == user_id)
            labelled = int(c.execute(stmt).scalar() or 0)
            return labelled, self._queue_length(c, user_id, run_id, time.time(), cached=True)

    def _queue_length(
        self, c: Connection, user_id: int | None, run_id: int | None, now: float, cached: bool
    ) -> int:
        n = self._open_count(c, run_id, now, cached)
        if user_id is not None:  # minus the open ones it answered (queries that need several labels)
            q = S.queries.c
            answered_open = sa.exists().where(q.id == S.labels.c.query_id, *self._servable(now, run_id))
            stmt = (
                sa.select(sa.func.count())
                .select_from(S.labels)
                .where(S.labels.c.user_id == user_id, answered_open)
            )  # driven by the user's labels, not by the (many) open queries
            n -= int(c.execute(stmt).scalar() or 0)
        return max(0, n)

    def _open_count(self, c: Connection, run_id: int | None, now: float, cached: bool) -> int:
        """Open, unexpired queries (of ``run_id``): counts that indexes answer."""
        if cached:
            with self._cache_lock:
                hit = self._open_counts.get(run_id)
            if hit is not None and 0 <= now - hit[0] < self.count_ttl_s:
                return hit[1]
        q = S.queries.c
        count = sa.select(sa.func.count()).select_from(S.queries)
        run = [q.run_id == run_id] if run_id is not None else []
        n = int(c.execute(count.where(q.status == "open", *run)).scalar() or 0)
        expired = [q.status == "open", q.expires.is_not(None), q.expires <= now, *run]
        n -= int(c.execute(count.where(*expired)).scalar() or 0)
        with self._cache_lock:
            self._open_counts[run_id] = (now, n)
        return n

    def _count_changed(self, run_id: int, delta: int | None) -> None:
        """Queries of ``run_id`` opened (+) or closed (-) here: adjust cached counts (None: drop them)."""
        with self._cache_lock:
            for key in (run_id, None):
                hit = self._open_counts.get(key)
                if hit is not None:
                    if delta is None:
                        del self._open_counts[key]
                    else:
                        self._open_counts[key] = (hit[0], hit[1] + delta)

    def pending(self, run_id: int) -> int:
        """Queries of ``run_id`` still waiting for labels (not expired)."""
        return self.queue_length(run_id=run_id)

    # ---------------------------------------------------------------- labels
    def add_label(
        self,
        query_id: int,
        user_id: int,
        answer: str,
        response_ms: int | None = None,
        run_id: int | None = None,
    ) -> int:
        """Record one answer; committed before this returns. Returns the label id.

        ``run_id``: only a query of this run takes it (another run's query is unknown here).

        Raises:
            ValueError: ``answer`` is not one of :data:`~prefrl.storage.schema.ANSWERS`.
            UnknownQuery, QueryClosed, AlreadyLabelled: as named.
            QueryFilled: the query already has the answers it needs (nobody would use this one).
        """
        if answer not in S.ANSWERS:
            raise ValueError(f"answer must be one of {S.ANSWERS}, got {answer!r}")
        now = time.time()
        q = S.queries.c
        try:
            with self.write() as c:  # one transaction, fsynced before this returns
                row = c.execute(
                    sa.select(q.run_id, q.status, q.expires, q.n_labels, q.labels_needed)
                    .where(q.id == query_id)
                    .with_for_update()
                ).first()
                if row is None or (run_id is not None and row.run_id != run_id):
                    raise UnknownQuery(
                        f"no query with id {query_id}" + ("" if run_id is None else " in this run")
                    )
                if row.status == "expired" or (
                    row.status == "open" and row.expires is not None and row.expires < now
                ):
                    raise QueryClosed(f"query {query_id} has expired")
                mine = sa.select(S.labels.c.id).where(
                    S.labels.c.query_id == query_id, S.labels.c.user_id == user_id
                )
                if row.status != "open" and c.execute(mine).first() is None:
                    raise QueryFilled(
                        f"query {query_id} already has the {row.n_labels} answer(s) it needs; "
                        "your answer was not recorded"
                    )
                # a second answer of the same labeller fails the (query, user) unique constraint
                ins = sa.insert(S.labels).values(
                    query_id=query_id, user_id=user_id, answer=answer, response_ms=response_ms, created=now
                )
                label_id = _new_id(c.execute(ins))
                closes = row.status == "open" and row.n_labels + 1 >= row.labels_needed
                values: dict[str, Any] = dict(n_labels=q.n_labels + 1, lease_user=None, lease_until=None)
                if closes:
                    values.update(status="answered", answered=now)
                c.execute(sa.update(S.queries).where(q.id == query_id).values(**values))
        except sa.exc.IntegrityError as e:  # this labeller already answered it (perhaps just now)
            raise AlreadyLabelled(f"you already answered query {query_id}") from e
        if closes:
            self._count_changed(row.run_id, -1)
        return label_id

    def take_answered(self, run_id: int, include_consumed: bool = False) -> list[Answered]:
        """Answered queries of ``run_id`` not yet consumed (all with ``include_consumed``); marks them."""
        q = S.queries.c
        cond = [q.run_id == run_id, q.status == "answered"]
        if not include_consumed:
            cond.append(q.consumed.is_(False))
        with self.write() as c:
            rows = c.execute(sa.select(q.id, q.left_clip, q.right_clip).where(*cond).order_by(q.id)).all()
            if not rows:
                return []
            ids = [r.id for r in rows]
            answers: dict[int, list[str]] = {i: [] for i in ids}
            for qid, ans in c.execute(
                sa.select(S.labels.c.query_id, S.labels.c.answer)
                .where(S.labels.c.query_id.in_(ids))
                .order_by(S.labels.c.id)
            ):
                answers[qid].append(ans)
            c.execute(sa.update(S.queries).where(q.id.in_(ids)).values(consumed=True))
        return [Answered(r.id, r.left_clip, r.right_clip, tuple(answers[r.id])) for r in rows]

    # ----------------------------------------------------------------- users
    def add_user(self, name: str, admin: bool = False, expires_in_s: float | None = None) -> str:
        """Create a labeller; returns its sign-in token (shown once, only its hash is stored)."""
        name = name.strip()
        if not name or len(name) > 100:
            raise ValueError(f"a labeller name must have 1 to 100 characters, got {name!r}")
        if expires_in_s is not None and not -math.inf < expires_in_s < math.inf:
            raise ValueError(f"a token's lifetime must be a finite number of seconds, got {expires_in_s}")
        token = secrets.token_urlsafe(24)
        now = time.time()
        try:
            with self.write() as c:
                c.execute(
                    sa.insert(S.users).values(
                        name=name,
                        token_sha256=hash_token(token),
                        is_admin=admin,
                        created=now,
                        expires=None if expires_in_s is None else now + expires_in_s,
                    )
                )
        except sa.exc.IntegrityError as e:
            raise StoreError(f"a labeller named {name!r} already exists in {self.where}") from e
        return token

    def user_for_token(self, token: str) -> User | None:
        """The labeller holding ``token``; ``None`` if unknown or expired."""
        key, now = hash_token(token), time.time()
        with self._cache_lock:
            hit = self._tokens.get(key)
        if hit is None or not 0 <= now - hit[0] < self.TOKEN_TTL_S:
            with self.read() as c:
                r = c.execute(sa.select(S.users).where(S.users.c.token_sha256 == key)).first()
            if r is None:
                return None
            hit = (now, User(r.id, r.name, bool(r.is_admin)), r.expires)
            with self._cache_lock:
                if len(self._tokens) > 10_000:
                    self._tokens.clear()
                self._tokens[key] = hit
        expires = hit[2]
        return None if expires is not None and not expires >= now else hit[1]  # NaN: expired

    def users(self) -> list[User]:
        """Every labeller."""
        with self.read() as c:
            return [
                User(r.id, r.name, bool(r.is_admin)) for r in c.execute(sa.select(S.users).order_by("id"))
            ]

    def labelled_count(self, user_id: int) -> int:
        """Labels this labeller has given."""
        with self.read() as c:
            stmt = sa.select(sa.func.count()).select_from(S.labels).where(S.labels.c.user_id == user_id)
            return int(c.execute(stmt).scalar() or 0)


def run_prefix(run_id: int) -> str:
    """File names in the clip folder start with their run, so a run's leftovers can be found."""
    return f"r{int(run_id)}-"
