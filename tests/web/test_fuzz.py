"""Fuzz the labelling server's HTTP API (Hypothesis): no request, however malformed, gets a
5xx, and none leaves a traceback in the server's log.

Requests go to a real ``prefrl label`` process on loopback over a real SQLite store with
queries in it, signed in as nobody, a labeller or an admin, with random JSON (NaN and
Infinity included), random bytes, random clip names and random query strings.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prefrl.teachers.human import StoreTeacher
from tests.storage.helpers import make_fragments
from tests.web.server import Server

ROUTES = [
    ("POST", "/api/session"), ("DELETE", "/api/session"), ("GET", "/api/me"), ("GET", "/api/status"),
    ("GET", "/api/queries/next"), ("POST", "/api/labels"), ("GET", "/api/admin/stats"),
    ("GET", "/api/admin/export"), ("GET", "/"), ("GET", "/admin"), ("PUT", "/api/labels"),
    ("POST", "/api/queries/next"), ("GET", "/api/labels"),
]  # fmt: skip
ANSWERS = ["left", "right", "equal", "incomparable", "skip"]

scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats()  # NaN, +-Infinity too
    | st.text(max_size=40) | st.sampled_from(ANSWERS)
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
label_like = st.fixed_dictionaries(
    {},
    optional={
        "query_id": st.integers(-5, 10) | json_values,
        "answer": st.sampled_from(ANSWERS) | json_values,
        "response_ms": st.integers(-(2**40), 2**40) | json_values,
        "token": json_values,
    },
)
bodies = st.one_of(
    st.none(),
    label_like.map(lambda d: json.dumps(d).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=300),
)
CONTENT_TYPES = [None, "application/json", "text/plain", "application/x-www-form-urlencoded"]
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("fuzz")
    teacher = StoreTeacher(tmp / "labels.db", instruction="Which clip is redder?")
    teacher.submit(make_fragments(8), np.array([[0, 1], [2, 3], [4, 5], [6, 7]]))
    teacher.flush()
    tokens = {"ann": teacher.store.add_user("ann"), "root": teacher.store.add_user("root", admin=True)}
    teacher.close()
    server = Server(tmp / "labels.db", None, log=tmp / "server.log").start()
    yield server, tokens
    server.stop()
    log = (tmp / "server.log").read_text()
    assert "Traceback" not in log, log[-3000:]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    route=st.sampled_from(ROUTES),
    who=st.sampled_from([None, "ann", "root", "garbage"]),
    garbage=header_text,
    body=bodies,
    content_type=st.sampled_from(CONTENT_TYPES),
    query=st.dictionaries(st.sampled_from(["format", "run", "x"]), st.text(max_size=20), max_size=2),
)
def test_no_request_gets_a_server_error(
    live: tuple[Server, dict[str, str]], route: tuple[str, str], who: str | None, garbage: str,
    body: bytes | None, content_type: str | None, query: dict[str, str],
) -> None:  # fmt: skip
    server, tokens = live
    method, path = route
    headers = {}
    if who is not None:
        headers["Authorization"] = f"Bearer {tokens[who] if who in tokens else garbage}".strip()
    if content_type is not None:
        headers["Content-Type"] = content_type
    r = httpx.request(method, server.url + path, params=query, content=body, headers=headers, timeout=10)
    assert r.status_code < 500, (method, path, body, r.status_code, r.text[:300])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(max_size=80), who=st.sampled_from([None, "ann"]))
def test_no_clip_name_gets_a_server_error(
    live: tuple[Server, dict[str, str]], name: str, who: str | None
) -> None:
    server, tokens = live
    headers = {"Authorization": f"Bearer {tokens[who]}"} if who else {}
    url = server.url + "/clips/" + urllib.parse.quote(name, safe="")
    r = httpx.get(url, headers=headers, timeout=10)
    assert r.status_code < 500 and (r.status_code != 200 or r.headers["content-type"] == "video/webm")


def test_the_fuzzed_store_still_serves(live: tuple[Server, dict[str, str]], tmp_path: Path) -> None:
    """After the fuzzing (runs after it: pytest keeps file order), a labeller still labels."""
    server, tokens = live
    h = {"Authorization": f"Bearer {tokens['ann']}"}
    q = httpx.get(server.url + "/api/queries/next", headers=h, timeout=10).json()
    if q.get("query_id") is not None:
        body = {"query_id": q["query_id"], "answer": "left"}
        r = httpx.post(server.url + "/api/labels", headers=h, json=body, timeout=10)
        assert r.status_code in (201, 409, 410)
