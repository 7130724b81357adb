"""End to end: a person labels in headless Chromium; the labels reach the store and train a reward model."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from prefrl.data import PreferenceDataset
from prefrl.preference import RewardTrainer, RewardTrainerConfig
from prefrl.rewards import MLPReward
from prefrl.teachers.human import StoreTeacher
from tests.narrow import present
from tests.storage.helpers import make_fragments
from tests.web.browser import chromium_path, launch
from tests.web.server import ThreadServer

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
)
pytestmark = pytest.mark.skipif(
    chromium_path() is None,
    reason="Debian chromium is not installed (.ci/run installs it: apt-get install chromium)",
)


def signed_in(pw, tmp_path, url: str, token: str):
    """A fresh Chromium profile with the labelling page open and signed in: ``(context, page)``."""
    ctx = launch(pw, tmp_path / "chromium-profile")
    page = ctx.new_page()
    page.goto(url + "/")
    page.fill("#token", token)
    page.click("#signin-form button")
    return ctx, page


def test_label_in_browser_by_clicks_and_keys_then_train(tmp_path) -> None:
    frags = make_fragments(12, seed=1)
    pairs = np.arange(12).reshape(6, 2)
    teacher = StoreTeacher(tmp_path / "labels.db", instruction="Pick the redder clip.")
    qids = teacher.submit(frags, pairs).result()  # once the clips are encoded and the queries stored
    truth = frags.returns()
    better = {q: ("left" if truth[a] > truth[b] else "right") for q, (a, b) in zip(qids, pairs)}
    token = teacher.store.add_user("ann")
    srv = ThreadServer(tmp_path / "labels.db").start()
    try:
        with sync_api.sync_playwright() as pw:
            ctx, page = signed_in(pw, tmp_path, srv.url, token)
            answered = []
            for k in range(6):
                page.wait_for_selector("#query:not(.hidden)")
                qid = int(page.get_attribute("#query", "data-query-id"))
                assert qid not in answered
                if k == 0:  # the clips really play in Chromium, in sync
                    page.wait_for_function(
                        "() => ['left','right'].every(id => { const v = document.getElementById(id);"
                        " return v.readyState >= 2 && v.videoWidth > 0; })",
                        timeout=15_000,
                    )
                    assert "redder" in page.inner_text("#instruction")
                    assert page.inner_text("#queue") == "6"
                want = better[qid]
                if k % 2 == 0:
                    page.click(f"#btn-{want}")  # by clicking
                else:
                    page.keyboard.press("ArrowLeft" if want == "left" else "d")  # by keys
                answered.append(qid)
                page.wait_for_function(f"() => document.getElementById('labelled').textContent === '{k + 1}'")
                page.wait_for_function(f"() => document.getElementById('query').dataset.queryId !== '{qid}'")
            page.wait_for_selector("#empty:not(.hidden)")
            assert page.inner_text("#queue") == "0"
            ctx.close()
    finally:
        srv.stop()
    # the labels are in the database …
    [(fragments, got_pairs, labels, _)] = StoreTeacher(tmp_path / "labels.db").poll()
    assert len(labels) == 6
    rows = teacher.store.engine.connect().exec_driver_sql("SELECT query_id, answer FROM labels").all()
    assert {q: a for q, a in rows} == better
    # … and a reward model trains on them: it ranks every labelled pair as the person did
    ds = PreferenceDataset()
    ds.add(fragments, got_pairs, labels)
    net = MLPReward(spaces.Box(-5, 5, (3,)), spaces.Box(-5, 5, (1,)), hidden=(16,))
    # (no clip here ends in a termination, so the absorbing-state value has nothing to learn)
    trained = [p for name, p in net.named_parameters() if name != "absorbing_reward"]
    before = [p.detach().clone() for p in trained]
    RewardTrainer(net, RewardTrainerConfig(epochs=300, val_fraction=0.0, batch_size=8)).train(ds)
    assert all(not torch.equal(a, b) for a, b in zip(before, trained))
    arr = present(ds.fragments).arrays(ds.pairs)  # [6, 2, L, ...]
    r, _ = net.predict(arr.obs, arr.acts, arr.next_obs, arr.dones)
    ret = r.sum(-1)  # [6, 2]
    assert np.array_equal(ret[:, 0] > ret[:, 1], ds.labels > 0.5)


def test_page_recovers_when_the_server_goes_down_and_comes_back(tmp_path) -> None:
    """A click while the server is down shows a message and leaves the page usable; once the
    server is back (same port) the same query is answered with one more click."""
    from tests.web.server import Server

    frags = make_fragments(6, seed=2)
    teacher = StoreTeacher(tmp_path / "labels.db")
    teacher.submit(frags, np.arange(6).reshape(3, 2)).result()
    token = teacher.store.add_user("bo")
    srv = Server(tmp_path / "labels.db").start()
    try:
        with sync_api.sync_playwright() as pw:
            ctx, page = signed_in(pw, tmp_path, srv.url, token)
            page.wait_for_selector("#query:not(.hidden)")
            qid = page.get_attribute("#query", "data-query-id")
            srv.kill()  # the server dies while the labeller looks at the clips
            page.click("#btn-left")
            page.wait_for_function(
                "() => document.getElementById('message').textContent.includes('Cannot reach the server')"
            )
            assert page.inner_text("#labelled") == "0"
            page.click("#btn-left")  # not frozen: a second try is made (and fails the same way)
            page.wait_for_timeout(300)
            assert "not saved" in page.inner_text("#message")
            srv = Server(tmp_path / "labels.db", srv.port).start()  # back, on the same address
            page.click("#btn-left")
            page.wait_for_function("() => document.getElementById('labelled').textContent === '1'")
            page.wait_for_function(f"() => document.getElementById('query').dataset.queryId !== '{qid}'")
            ctx.close()
    finally:
        srv.kill()
    rows = teacher.store.engine.connect().exec_driver_sql("SELECT query_id, answer FROM labels").all()
    assert rows == [(int(qid), "left")]
