"""The query store over a real SQLite file (and PostgreSQL when configured): schema versions,
labels, recovery, pruning."""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa

from prefrl.storage import schema as S
from prefrl.storage.records import AlreadyLabelled, QueryClosed, StoreError, StoreVersionError, UnknownQuery
from prefrl.storage.store import QueryStore
from prefrl.teachers.human import StoreTeacher, combine_answers
from tests.narrow import present
from tests.storage.backends import Backend
from tests.storage.helpers import make_fragments


def test_store_is_sqlite_wal(tmp_path) -> None:
    store = QueryStore(tmp_path / "s.db")
    with store.read() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL


def test_store_is_versioned(backend: Backend) -> None:
    store = backend.open()
    with store.write() as c:
        c.execute(sa.update(S.meta).where(S.meta.c.key == "schema_version").values(value="999"))
    store.close()
    with pytest.raises(StoreVersionError, match=r"schema version 999.*reads version 2"):
        backend.open()


def test_not_a_store_gives_clear_errors(tmp_path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("hello, I am not a database" * 100)
    with pytest.raises(StoreError, match="cannot open as a prefrl query store"):
        QueryStore(junk)
    with pytest.raises(StoreError, match="clip_dir"):
        QueryStore("postgresql://user:secret@localhost/labels")


def test_fragments_round_trip_through_the_store(backend: Backend) -> None:
    frags = make_fragments(6)
    t = backend.teacher()
    t.submit(frags, np.array([[0, 1], [4, 2]]))
    t.flush()
    uid = t.store.users() or None
    user = t.store.user_for_token(t.store.add_user("ann"))
    assert uid is None and user is not None
    for qid, answer in ((1, "left"), (2, "equal")):
        t.store.add_label(qid, user.id, answer)
    [(got, pairs, labels, _)] = t.poll()
    assert labels.tolist() == [1.0, 0.5]
    want = frags.arrays(np.array([[0, 1], [4, 2]]))
    have = got.arrays(pairs)
    for name in ("obs", "next_obs", "acts", "dones", "rews"):
        np.testing.assert_array_equal(getattr(have, name), getattr(want, name), err_msg=name)
    assert got.episode[pairs].tolist() == [[0, 1], [4, 2]]


def test_poll_returns_each_answer_once_and_all_again_after_restart(backend: Backend) -> None:
    t = backend.teacher(run="r1")
    t.submit(make_fragments(4), np.array([[0, 1], [2, 3]]))
    t.flush()
    user = present(t.store.user_for_token(t.store.add_user("ann")))
    t.store.add_label(1, user.id, "right", 1200)
    assert len(t.poll()[0][2]) == 1
    assert t.poll() == []
    t.store.add_label(2, user.id, "incomparable")
    del t
    again = backend.teacher(run="r1")  # a restarted trainer
    [(_, _, new, _)] = again.poll()
    assert np.isnan(new).tolist() == [True]
    [(_, _, everything, _)] = again.poll(all=True)
    assert everything[0] == 0.0 and np.isnan(everything[1])
    assert backend.teacher(run="other").poll(all=True) == []


def test_labels_are_never_overwritten_and_bad_answers_refused(backend: Backend) -> None:
    t = backend.teacher(labels_per_query=2, ttl_s=3600)
    t.submit(make_fragments(2), np.array([[0, 1]]))
    t.flush()
    a, b = (present(t.store.user_for_token(t.store.add_user(n))) for n in ("a", "b"))
    t.store.add_label(1, a.id, "left")
    assert t.pending() == 1  # needs a second labeller
    with pytest.raises(AlreadyLabelled):
        t.store.add_label(1, a.id, "right")
    with pytest.raises(UnknownQuery):
        t.store.add_label(7, a.id, "left")
    with pytest.raises(ValueError, match="answer must be one of"):
        t.store.add_label(1, b.id, "maybe")
    t.store.add_label(1, b.id, "left")
    assert t.pending() == 0 and t.poll()[0][2].tolist() == [1.0]


def test_expired_queries_are_not_served_nor_labelled(backend: Backend) -> None:
    t = backend.teacher(ttl_s=-1.0)
    t.submit(make_fragments(2), np.array([[0, 1]]))
    t.flush()
    user = present(t.store.user_for_token(t.store.add_user("a")))
    assert t.store.next_query(user.id) is None and t.pending() == 0
    with pytest.raises(QueryClosed):
        t.store.add_label(1, user.id, "left")


def test_prune_removes_old_unlabelled_clips_only(backend: Backend) -> None:
    t = backend.teacher()
    t.submit(make_fragments(8), np.arange(8).reshape(4, 2))
    t.flush()
    user = present(t.store.user_for_token(t.store.add_user("a")))
    t.store.add_label(1, user.id, "left")  # clips 1 and 2 are labelled
    before = sorted(p.name for p in t.store.clip_dir.iterdir())
    assert len(before) == 16  # a video and an .npz per clip
    assert t.store.prune(0) == 6  # everything unlabelled goes
    after = sorted(p.name for p in t.store.clip_dir.iterdir())
    assert len(after) == 4
    assert t.store.next_query(user.id) is None  # queries on pruned clips expired
    [(frags, _, labels, _)] = t.poll(all=True)  # the labelled pair is intact
    assert labels.tolist() == [1.0] and len(frags) == 2


def test_combine_rules() -> None:
    answers = [["left", "left", "right"], ["left", "right"], ["equal", "skip"], ["incomparable"]]
    maj = combine_answers(answers, "majority")
    mean = combine_answers(answers, "mean")
    np.testing.assert_allclose(maj[:3], [1.0, 0.5, 0.5])
    np.testing.assert_allclose(mean[:3], [2 / 3, 0.5, 0.5], rtol=1e-6)
    assert np.isnan(maj[3]) and np.isnan(mean[3])
    with pytest.raises(ValueError, match="majority"):
        combine_answers(answers, "median")  # type: ignore[arg-type]


def test_pixel_observations_are_shown_when_no_frames_rendered(tmp_path) -> None:
    f = make_fragments(2)
    rows = len(f.table_acts)
    pix = np.random.default_rng(0).integers(0, 255, (rows, 3, 12, 12), dtype=np.uint8)  # channel-first
    from prefrl.data.fragments import Fragments

    g = Fragments(pix, f.table_acts, f.table_rews, f.table_dones, f.rows, f.length, f.episode, f.start)
    t = StoreTeacher(tmp_path / "s.db")
    t.submit(g, np.array([[0, 1]]))
    t.flush()
    with pytest.raises(ValueError, match="render=True"):
        t.submit(f.without_frames(), np.array([[0, 1]]))


def test_concurrent_labellers_get_distinct_queries_and_every_label_is_kept(backend: Backend) -> None:
    import threading

    t = backend.teacher()
    t.submit(make_fragments(4), np.array([[0, 1], [2, 3], [1, 2], [3, 0]] * 6))  # 24 queries
    t.flush()
    store = backend.open()  # one store object shared by the threads, as in the server
    users = [present(store.user_for_token(store.add_user(f"u{i}"))) for i in range(6)]
    got: dict[int, list[int]] = {u.id: [] for u in users}
    barrier = threading.Barrier(len(users))

    def label(user_id: int) -> None:
        barrier.wait()
        while (q := store.next_query(user_id, lease_s=60)) is not None:
            store.add_label(q["query_id"], user_id, "left")
            got[user_id].append(q["query_id"])

    threads = [threading.Thread(target=label, args=(u.id,)) for u in users]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    answered = sorted(q for qs in got.values() for q in qs)
    assert answered == list(range(1, 25))  # each query labelled once, none lost
    assert store.queue_length() == 0 and t.pending() == 0
    [(_, pairs, labels, _)] = t.poll()
    assert len(pairs) == 24 and labels.tolist() == [1.0] * 24
