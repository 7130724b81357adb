"""A run's life in the query store: which run a name means, whether a new run may take it,
how a run ends (its open queries closed, so nobody answers for nothing) and what it asked.

A run is known to the store by its id (``runs.name``: the id written once into the run's
``config.json``), never by the folder it lives in; ``runs.title`` is that folder's name,
what people type (``prefrl label --run TITLE``) and see.

Example:
    >>> import tempfile, os
    >>> from prefrl.storage.store import QueryStore
    >>> store = QueryStore(os.path.join(tempfile.mkdtemp(), "labels.db"))
    >>> rid = store.ensure_run("3f9c0a7d5e1b2c4d", title="pendulum")
    >>> find_run(store, "pendulum") == find_run(store, "3f9c0a7d5e1b2c4d") == rid
    True
    >>> run_counts(store, rid)["asked"]
    0
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from prefrl.storage import schema as S
from prefrl.storage.store import QueryStore


def find_run(store: QueryStore, key: str) -> int | None:
    """Store id of the run whose id is ``key``, else of the newest run titled ``key``; ``None``
    when there is none."""
    r = S.runs.c
    with store.read() as c:
        rid = c.execute(sa.select(r.id).where(r.name == key)).scalar()
        if rid is None:
            rid = c.execute(sa.select(sa.func.max(r.id)).where(r.title == key)).scalar()
    return None if rid is None else int(rid)


def queries_under(store: QueryStore, keys: Sequence[str | None]) -> int:
    """Queries of every run whose id or title is one of ``keys``."""
    r, q = S.runs.c, S.queries.c
    runs = sa.select(r.id).where(sa.or_(r.name.in_(keys), r.title.in_(keys)))
    with store.read() as c:
        stmt = sa.select(sa.func.count()).select_from(S.queries).where(q.run_id.in_(runs))
        return int(c.execute(stmt).scalar() or 0)


def runs_under(store: QueryStore, keys: Sequence[str | None]) -> list[tuple[str, str, int]]:
    """``(id, title, queries)`` of every run with queries whose id or title is one of ``keys``,
    newest first."""
    r, q = S.runs.c, S.queries.c
    n = sa.func.count(q.id)
    stmt = sa.select(r.name, r.title, n).join(S.queries, q.run_id == r.id)
    stmt = stmt.where(sa.or_(r.name.in_(keys), r.title.in_(keys))).group_by(r.id).order_by(r.id.desc())
    with store.read() as c:
        return [(str(a), str(t or a), int(k)) for a, t, k in c.execute(stmt)]


def finish_run(store: QueryStore, run_id: int, keep_partial: bool = True) -> dict[str, int]:
    """Close a run's open queries: one that has some of its answers becomes answered (the run
    takes the answers it has; with ``keep_partial=False``, for a run that is gone, it expires
    too), one without any expires (no longer served, no longer answerable).

    One write transaction, so an answer lands either before it (and is taken) or after it
    (and is refused). Returns ``{"answered": n, "expired": n}`` closed now.
    """
    q = S.queries.c
    now = time.time()
    open_ = [q.run_id == run_id, q.status == "open"]
    with store.write() as c:
        part = (
            0
            if not keep_partial
            else c.execute(
                sa.update(S.queries)
                .where(*open_, q.n_labels > 0)
                .values(status="answered", answered=now, lease_user=None, lease_until=None)
            ).rowcount
        )
        gone = c.execute(
            sa.update(S.queries).where(*open_).values(status="expired", lease_user=None, lease_until=None)
        ).rowcount
    store._count_changed(run_id, None)
    return {"answered": int(part or 0), "expired": int(gone or 0)}


def run_counts(store: QueryStore, run_id: int) -> dict[str, Any]:
    """What run ``run_id`` asked and what became of it.

    ``asked``: queries stored; ``answered``: those with the answers they need (or closed with
    some at the run's end); ``used``: answered ones the run has taken; ``expired``: closed
    without an answer; ``open``: still waiting; ``answers``: labels given to its queries
    (one per labeller); ``answers_used``: those on queries the run took.
    """
    q, lab = S.queries.c, S.labels.c
    with store.read() as c:
        rows = c.execute(
            sa.select(q.status, q.consumed, sa.func.count(), sa.func.coalesce(sa.func.sum(q.n_labels), 0))
            .where(q.run_id == run_id)
            .group_by(q.status, q.consumed)
        ).all()
        answers = c.execute(
            sa.select(sa.func.count())
            .select_from(S.labels.join(S.queries, q.id == lab.query_id))
            .where(q.run_id == run_id)
        ).scalar()
    out = dict(asked=0, answered=0, used=0, expired=0, open=0, answers=int(answers or 0), answers_used=0)
    for status, consumed, n, n_labels in rows:
        out["asked"] += int(n)
        if status in ("answered", "expired", "open"):
            out[status] += int(n)
        if status == "answered" and consumed:
            out["used"] += int(n)
            out["answers_used"] += int(n_labels)
    return out
