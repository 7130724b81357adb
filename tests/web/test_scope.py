"""A server started for one run serves, accepts and counts only that run's queries; an answer
nobody would use is refused; tokens can be revoked and renewed, failed sign-ins are throttled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import sqlalchemy as sa

from prefrl.cli.main import main
from prefrl.storage import schema as S
from prefrl.storage.runs import find_run
from prefrl.storage.store import QueryStore
from prefrl.teachers.human import StoreTeacher
from tests.narrow import present
from tests.storage.helpers import make_fragments
from tests.web.server import ThreadServer


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def two_runs(tmp_path: Path) -> Iterator[tuple[str, StoreTeacher, StoreTeacher, dict[str, str]]]:
    """Runs ``a1`` (titled A) and ``b1`` (titled B), two queries each, and two labellers."""
    db = str(tmp_path / "labels.db")
    a = StoreTeacher(db, run="a1", title="A")
    b = StoreTeacher(db, run="b1", title="B")
    for t in (a, b):
        t.submit(make_fragments(4), np.array([[0, 1], [2, 3]])).result()
    tokens = {
        "ann": a.store.add_user("ann"),
        "bob": a.store.add_user("bob"),
        "root": a.store.add_user("root", admin=True),
    }
    yield db, a, b, tokens
    a.close()
    b.close()


def test_a_server_for_one_run_neither_serves_nor_accepts_another_runs_queries(two_runs) -> None:
    db, _, b, tok = two_runs
    srv = ThreadServer(db, run="A").start()
    try:
        u, h = srv.url, auth(tok["ann"])
        q = httpx.get(u + "/api/queries/next", headers=h).json()
        assert q["query_id"] in (1, 2) and q["queue"] == 2  # run A's queries are 1 and 2
        # run B's query 3 and its clip are unknown here
        r = httpx.post(u + "/api/labels", headers=h, json={"query_id": 3, "answer": "left"})
        assert r.status_code == 404
        with b.store.read() as c:
            b_clip = (
                c.execute(sa.select(S.clips.c.video).where(S.clips.c.run_id == b.run_id)).scalars().first()
            )
        assert httpx.get(u + f"/clips/{b_clip}", headers=h).status_code == 404
        assert (
            httpx.post(
                u + "/api/labels", headers=h, json={"query_id": q["query_id"], "answer": "left"}
            ).status_code
            == 201
        )
        b.store.add_label(3, 2, "right")  # bob answers run B elsewhere
        # the admin's stats count what the export exports: run A's labels
        root = auth(tok["root"])
        stats = httpx.get(u + "/api/admin/stats", headers=root).json()
        rows = httpx.get(u + "/api/admin/export", headers=root).json()
        assert stats["labels"] == len(rows) == 1 and rows[0]["run"] == "A" and rows[0]["run_id"] == "a1"
        assert stats["open_queries"] == 1
    finally:
        srv.stop()


def test_an_answer_to_a_query_that_has_its_answers_is_refused(two_runs) -> None:
    db, a, _, tok = two_runs
    srv = ThreadServer(db).start()
    try:
        u = srv.url
        assert (
            httpx.post(
                u + "/api/labels", headers=auth(tok["ann"]), json={"query_id": 1, "answer": "left"}
            ).status_code
            == 201
        )
        assert len(a.poll()[0].labels) == 1  # the trainer took it
        late = httpx.post(
            u + "/api/labels", headers=auth(tok["bob"]), json={"query_id": 1, "answer": "right"}
        )
        assert late.status_code == 409 and "not recorded" in late.json()["detail"]
        with a.store.read() as c:
            assert c.execute(sa.select(sa.func.count()).select_from(S.labels)).scalar() == 1
    finally:
        srv.stop()


def test_a_boolean_is_not_a_query_id_and_failed_sign_ins_are_throttled(two_runs) -> None:
    db, _, _, tok = two_runs
    srv = ThreadServer(db, max_failures=3, failure_window_s=60.0).start()
    try:
        u, h = srv.url, auth(tok["ann"])
        for bad in (True, "1", 1.0):
            r = httpx.post(u + "/api/labels", headers=h, json={"query_id": bad, "answer": "left"})
            assert r.status_code == 422, bad
        for _ in range(3):
            assert httpx.post(u + "/api/session", json={"token": "guess"}).status_code == 401
        r = httpx.post(u + "/api/session", json={"token": "guess"})
        assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
        assert httpx.get(u + "/api/me", headers=auth("guess")).status_code == 429
        # a valid token is never refused: failing from someone's address cannot lock them out
        assert httpx.post(u + "/api/session", json={"token": tok["ann"]}).status_code == 200
        assert httpx.get(u + "/api/me", headers=h).status_code == 200
    finally:
        srv.stop()


def test_tokens_can_be_revoked_and_renewed(two_runs, capsys) -> None:
    db, _, _, tok = two_runs
    assert main(["label", "renew", "--store", db, "ann", "--expires-days", "1"]) == 0
    new = capsys.readouterr().out.strip()
    store = QueryStore(db)
    assert store.user_for_token(tok["ann"]) is None and present(store.user_for_token(new)).name == "ann"
    assert main(["label", "revoke", "--store", db, "ann"]) == 0
    assert QueryStore(db).user_for_token(new) is None
    assert main(["label", "revoke", "--store", db, "nobody"]) == 2
    assert main(["label", "users", "--store", db]) == 0
    listing = capsys.readouterr().out
    assert "ann\tlabeller\t0 labels\ttoken revoked or expired" in listing
    assert "bob\tlabeller\t0 labels\ttoken active" in listing


def test_a_version_1_store_opens_with_its_runs_titled_by_their_names(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    StoreTeacher(str(db), run="pendulum").submit(make_fragments(2), np.array([[0, 1]])).result()
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as c:  # what a store of prefrl's schema version 1 looked like
        c.exec_driver_sql("ALTER TABLE runs DROP COLUMN title")
        c.exec_driver_sql("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    engine.dispose()
    store = QueryStore(db)
    assert find_run(store, "pendulum") == 1 and store.query_count(1) == 1
    with store.read() as c:
        assert c.execute(sa.select(S.runs.c.title)).scalar() == "pendulum"
        assert c.execute(sa.select(S.meta.c.value).where(S.meta.c.key == "schema_version")).scalar() == "2"
