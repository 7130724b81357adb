"""The JSON API against a real uvicorn server on loopback, over a real SQLite store (and
PostgreSQL when ``PREFRL_TEST_POSTGRES_URL`` is set)."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import numpy as np

from prefrl.teachers.human import StoreTeacher
from tests.storage.backends import Backend
from tests.web.server import Server, ThreadServer


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_label_flow_records_label_and_trainer_sees_it(
    server: ThreadServer, tokens, teacher: StoreTeacher
) -> None:
    h = auth(tokens["ann"])
    q = httpx.get(server.url + "/api/queries/next", headers=h).json()
    assert q["query_id"] == 1 and q["queue"] == 3 and q["instruction"] == "Which clip is redder?"
    clip = httpx.get(server.url + q["left"], headers=h)
    assert clip.status_code == 200 and clip.headers["content-type"] == "video/webm"
    assert clip.content[:4] == b"\x1a\x45\xdf\xa3"  # EBML (WebM) magic
    r = httpx.post(
        server.url + "/api/labels", headers=h, json={"query_id": 1, "answer": "left", "response_ms": 900}
    )
    assert r.status_code == 201 and r.json()["labelled"] == 1 and r.json()["queue"] == 2
    # the trainer process (here: this one) picks it up through the store
    [(frags, pairs, labels, _)] = teacher.poll()
    assert pairs.shape == (1, 2) and labels.tolist() == [1.0] and len(frags) == 2
    # the same labeller may not answer (or overwrite) it again
    again = httpx.post(server.url + "/api/labels", headers=h, json={"query_id": 1, "answer": "right"})
    assert again.status_code == 409


def test_labellers_are_shown_different_queries(server: ThreadServer, tokens) -> None:
    a = httpx.get(server.url + "/api/queries/next", headers=auth(tokens["ann"])).json()
    b = httpx.get(server.url + "/api/queries/next", headers=auth(tokens["bob"])).json()
    assert a["query_id"] != b["query_id"]
    # asking again keeps one's own lease
    assert (
        httpx.get(server.url + "/api/queries/next", headers=auth(tokens["ann"])).json()["query_id"]
        == a["query_id"]
    )


def test_unauthorised_requests_are_refused(server: ThreadServer, tokens) -> None:
    u = server.url
    name = httpx.get(u + "/api/queries/next", headers=auth(tokens["ann"])).json()["left"]
    for headers in ({}, auth("not-a-token"), {"Authorization": "Basic YWJjOmRlZg=="}, auth("x" * 5000)):
        assert httpx.get(u + "/api/queries/next", headers=headers).status_code == 401
        assert (
            httpx.post(u + "/api/labels", headers=headers, json={"query_id": 1, "answer": "left"}).status_code
            == 401
        )
        assert httpx.get(u + name, headers=headers).status_code == 401
    # non-admins cannot read stats or export labels
    assert httpx.get(u + "/api/admin/stats", headers=auth(tokens["ann"])).status_code == 403
    assert httpx.get(u + "/api/admin/export", headers=auth(tokens["ann"])).status_code == 403


def test_expired_token_is_refused(server: ThreadServer, teacher: StoreTeacher) -> None:
    token = teacher.store.add_user("old", expires_in_s=-1.0)
    r = httpx.get(server.url + "/api/queries/next", headers=auth(token))
    assert r.status_code == 401 and "expired" in r.json()["detail"]


def test_bad_requests_get_clean_4xx(server: ThreadServer, tokens) -> None:
    u, h = server.url, auth(tokens["ann"])

    def post(headers: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
        return httpx.post(u + "/api/labels", headers={**h, **(headers or {})}, **kw)

    assert post(json={"query_id": 999, "answer": "left"}).status_code == 404
    assert post(json={"query_id": 1, "answer": "better"}).status_code == 422
    assert post(json={"query_id": "one", "answer": "left"}).status_code == 422
    assert post(json={"answer": "left"}).status_code == 422
    assert post(json={"query_id": 1, "answer": "left", "extra": 1}).status_code == 422
    assert post(json=[1, 2]).status_code == 422
    assert post(content=b"{not json", headers={"content-type": "application/json"}).status_code == 422
    big = post(json={"query_id": 1, "answer": "left", "pad": "x" * 100_000})
    assert big.status_code == 413

    def chunks() -> object:  # no Content-Length: the body streams in until it is too large
        for _ in range(50):
            yield b"x" * 10_000

    streamed = post(content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413, streamed.text
    # NaN / Infinity (not JSON, but Python's json writes them): a short 422, never a 500
    for body in (b'{"query_id": NaN, "answer": "left"}', b'{"query_id": 1, "answer": Infinity}'):
        r = post(content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422 and len(r.text) < 600, (body, r.status_code, r.text)
    js = {"content-type": "application/json"}
    r = httpx.post(u + "/api/session", content=b'{"token": NaN}', headers=js)
    assert r.status_code == 422 and "token" in r.json()["detail"], r.text
    for path in (
        "/clips/../labels.db", "/clips/..%2flabels.db", "/clips/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/clips/00000000000000000000000000000000.webm", "/clips/labels.db", "/clips/x.npz",
    ):  # fmt: skip
        r = httpx.get(u + path, headers=h)
        assert r.status_code in (404, 400), (path, r.status_code)
        assert b"SQLite" not in r.content
    # nothing crashed: the server still answers
    assert httpx.get(u + "/api/me", headers=h).status_code == 200


def test_two_labellers_answering_at_once_are_both_recorded(backend: Backend) -> None:
    from tests.storage.helpers import make_fragments

    t = backend.teacher(labels_per_query=2)
    t.submit(make_fragments(2), np.array([[0, 1]]))
    t.flush()
    tok = [t.store.add_user(f"u{i}") for i in range(2)]
    srv = ThreadServer(backend.store, clip_dir=backend.clip_dir).start()
    try:
        barrier = threading.Barrier(2)
        codes: list[int] = []

        def answer(token: str, a: str) -> None:
            barrier.wait()
            codes.append(
                httpx.post(
                    srv.url + "/api/labels", headers=auth(token), json={"query_id": 1, "answer": a}
                ).status_code
            )

        threads = [threading.Thread(target=answer, args=(k, a)) for k, a in zip(tok, ("left", "equal"))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        srv.stop()
    assert codes == [201, 201]
    [(_, _, labels, _)] = t.poll()
    assert labels.tolist() == [0.75]  # majority tie -> mean of left (1) and equal (0.5)


def test_label_survives_server_kill_and_server_resumes(
    process_server: Server, tokens, teacher: StoreTeacher, backend: Backend
) -> None:
    server, h = process_server, auth(tokens["ann"])
    q = httpx.get(server.url + "/api/queries/next", headers=h).json()
    assert (
        httpx.post(
            server.url + "/api/labels", headers=h, json={"query_id": q["query_id"], "answer": "right"}
        ).status_code
        == 201
    )
    server.kill()  # SIGKILL right after the answer
    server.start()
    assert httpx.get(server.url + "/api/me", headers=h).json()["labelled"] == 1
    nxt = httpx.get(server.url + "/api/queries/next", headers=h).json()
    assert nxt["query_id"] not in (None, q["query_id"])
    # a trainer restarted on the same store + run gets the label
    fresh = backend.teacher()
    [(_, pairs, labels, _)] = fresh.poll(all=True)
    assert labels.tolist() == [0.0] and pairs.shape == (1, 2)


def test_admin_sees_stats_and_exports(server: ThreadServer, tokens) -> None:
    for name, answer in (("ann", "left"), ("bob", "left")):
        q = httpx.get(server.url + "/api/queries/next", headers=auth(tokens[name])).json()
        httpx.post(
            server.url + "/api/labels",
            headers=auth(tokens[name]),
            json={"query_id": q["query_id"], "answer": answer},
        )
    s = httpx.get(server.url + "/api/admin/stats", headers=auth(tokens["root"])).json()
    assert s["labels"] == 2 and {u["labeller"] for u in s["labellers"]} == {"ann", "bob"}
    assert sum(s["labels_per_hour"]) == 2
    rows = httpx.get(server.url + "/api/admin/export", headers=auth(tokens["root"])).json()
    assert [r["answer"] for r in rows] == ["left", "left"]
    csv = httpx.get(server.url + "/api/admin/export?format=csv", headers=auth(tokens["root"]))
    assert csv.text.splitlines()[0].startswith("label_id,") and len(csv.text.splitlines()) == 3


def test_cookie_sign_in_for_the_page(server: ThreadServer, tokens) -> None:
    with httpx.Client(base_url=server.url) as c:
        assert c.post("/api/session", json={"token": "wrong"}).status_code == 401
        assert c.post("/api/session", json={"token": tokens["bob"]}).status_code == 200
        assert c.get("/api/me").json()["name"] == "bob"
        assert "prefrl labelling" in c.get("/").text
