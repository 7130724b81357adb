"""Label statistics and export, read from the query store (for the admin page and the CLI)."""

from __future__ import annotations

import csv
import io
import itertools
import time
from typing import Any

import sqlalchemy as sa

from prefrl.storage import schema as S
from prefrl.storage.store import QueryStore

_VALUE = {"left": 1.0, "right": 0.0, "equal": 0.5}


def label_rows(store: QueryStore, run_id: int | None = None) -> list[dict[str, Any]]:
    """Every label (of run ``run_id``), oldest first: run (its title and id), query, both clips'
    provenance, labeller, answer, timing, and whether the run took it (``used``)."""
    lc, rc = S.clips.alias("lc"), S.clips.alias("rc")
    stmt = (
        sa.select(
            S.labels.c.id.label("label_id"),
            sa.func.coalesce(S.runs.c.title, S.runs.c.name).label("run"),
            S.runs.c.name.label("run_id"),
            S.labels.c.query_id,
            S.queries.c.consumed.label("used"),
            S.users.c.name.label("labeller"),
            S.labels.c.answer,
            S.labels.c.response_ms,
            S.labels.c.created,
            lc.c.episode.label("left_episode"),
            lc.c.start.label("left_start"),
            rc.c.episode.label("right_episode"),
            rc.c.start.label("right_start"),
        )
        .select_from(
            S.labels.join(S.queries, S.queries.c.id == S.labels.c.query_id)
            .join(S.runs, S.runs.c.id == S.queries.c.run_id)
            .join(S.users, S.users.c.id == S.labels.c.user_id)
            .join(lc, lc.c.id == S.queries.c.left_clip)
            .join(rc, rc.c.id == S.queries.c.right_clip)
        )
        .order_by(S.labels.c.id)
    )
    if run_id is not None:
        stmt = stmt.where(S.queries.c.run_id == run_id)
    with store.read() as c:
        return [{**r._mapping, "used": bool(r.used)} for r in c.execute(stmt)]


def export_csv(rows: list[dict[str, Any]]) -> str:
    """Label rows as CSV text (header first)."""
    buf = io.StringIO()
    fields = list(rows[0]) if rows else ["label_id", "run", "query_id", "labeller", "answer"]
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def label_stats(store: QueryStore, run_id: int | None = None, hours: int = 24) -> dict[str, Any]:
    """Labels per labeller, agreement on queries answered by several labellers, labels per hour,
    over the labels of run ``run_id`` (every run: ``None``), the ones :func:`label_rows` exports.

    Agreement: over pairs of labellers who both gave a left/right/equal answer to the same
    query, the fraction that gave the same answer (overall and per labeller).
    """
    rows = label_rows(store, run_id)
    per_user: dict[str, dict[str, Any]] = {}
    by_query: dict[int, list[tuple[str, str]]] = {}
    for r in rows:
        u = per_user.setdefault(r["labeller"], {"labels": 0, "answers": {a: 0 for a in S.ANSWERS}, "ms": []})
        u["labels"] += 1
        u["answers"][r["answer"]] += 1
        if r["response_ms"] is not None:
            u["ms"].append(r["response_ms"])
        if r["answer"] in _VALUE:
            by_query.setdefault(r["query_id"], []).append((r["labeller"], r["answer"]))
    agree = total = 0
    user_agree: dict[str, list[int]] = {}
    for answers in by_query.values():
        for (ua, a), (ub, b) in itertools.combinations(answers, 2):
            same = int(a == b)
            agree, total = agree + same, total + 1
            for who in (ua, ub):
                user_agree.setdefault(who, [0, 0])
                user_agree[who][0] += same
                user_agree[who][1] += 1
    now = time.time()
    per_hour = [0] * hours
    for r in rows:
        age = int((now - r["created"]) // 3600)
        if 0 <= age < hours:
            per_hour[hours - 1 - age] += 1
    labellers = []
    for name, user in sorted(per_user.items()):
        ms = sorted(user["ms"])
        pairs = user_agree.get(name)
        labellers.append(
            {
                "labeller": name,
                "labels": user["labels"],
                "answers": user["answers"],
                "median_response_ms": ms[len(ms) // 2] if ms else None,
                "agreement": None if not pairs else pairs[0] / pairs[1],
                "shared_pairs": 0 if not pairs else pairs[1],
            }
        )
    multi = sum(1 for a in by_query.values() if len(a) >= 2)
    return {
        "labels": len(rows),
        "labels_used": sum(1 for r in rows if r["used"]),
        "labellers": labellers,
        "agreement": None if total == 0 else agree / total,
        "doubly_labelled_queries": multi,
        "labels_per_hour": per_hour,
        "open_queries": store.queue_length(run_id=run_id),
    }
