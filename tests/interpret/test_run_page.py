"""``prefrl report RUN``: the run's HTML page, written by ``prefrl train`` too, and seen in Chromium."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from prefrl.cli.main import main as prefrl_main
from prefrl.data import PreferenceDataset
from prefrl.data.fragments import Fragments
from prefrl.interpret.run_page import FreshClips, disagreements, label_counts
from tests.web.browser import chromium_path, launch

TINY = (
    "--loop.total-steps 600 --loop.initial-steps 200 --loop.iterations 2 --loop.total-labels 4 "
    "--eval-episodes 1 --no-progress --agent.buffer-size 2000 --threads 1"
).split()
WEBM_MAGIC = b"\x1a\x45\xdf\xa3"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A tiny real Pendulum run by ``prefrl train`` and what it printed."""
    import contextlib
    import io

    run = tmp_path_factory.mktemp("runs") / "pend"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert prefrl_main(["train", "--run-dir", str(run), *TINY]) == 0
    return run, out.getvalue()


def test_train_writes_the_page_and_names_it_in_its_report(trained: tuple[Path, str]) -> None:
    run, printed = trained
    page = run / "report" / "index.html"
    assert page.exists() and (run / "report" / "policy.webm").read_bytes()[:4] == WEBM_MAGIC
    assert json.loads((run / "report.json").read_text())["files"]["page"] == str(page)
    assert f"page         {page}" in printed


def test_report_page_has_curves_labels_fresh_clips_video_and_pairs(
    trained: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = trained
    assert prefrl_main(["report", str(run), "--out", str(tmp_path), "--pairs", "3", "--episodes", "1"]) == 0
    page = tmp_path / "index.html"
    assert capsys.readouterr().out.strip() == str(page)
    text = page.read_text()
    for section in ("summary", "training", "labels", "fresh", "video", "pairs"):
        assert f"<section id='{section}'>" in text
    # training curves, learned-vs-true scatter and one filmstrip per pair, all inline
    assert text.count("src='data:image/png;base64,") == 2 + 3
    assert "<video src='policy.webm'" in text and (tmp_path / "policy.webm").read_bytes()[:4] == WEBM_MAGIC
    labels = PreferenceDataset.load(run / "preferences.npz").labels
    assert f"<th>labels used</th><td>{len(labels)}</td>" in text
    assert "<th>tie share</th>" in text


def test_both_accuracies_are_named_for_what_they_measure_in_one_format(
    trained: tuple[Path, str], tmp_path: Path
) -> None:
    """Issue 47: the page showed 0.918 in its summary and 83% under the fresh clips, unexplained."""
    from prefrl.interpret.run_page import AGREEMENT, HELDOUT

    run, _ = trained
    assert prefrl_main(["report", str(run), "--out", str(tmp_path), "--no-video", "--pairs", "0"]) == 0
    text = (tmp_path / "index.html").read_text()
    heldout = json.loads((run / "report.json").read_text())["reward_accuracy"]
    # the summary's number is report.json's (what prefrl train printed), as a percentage
    assert f"<th>{HELDOUT}</th><td>{heldout:.1%}</td>" in text
    assert "<th>reward accuracy</th>" not in text  # the old, unexplained row
    summary = text.split("<section id='summary'>")[1].split("</section>")[0]
    assert "true return" in summary.split(f"<p class='note'>{HELDOUT}:")[1]  # says what ranks the pairs
    fresh = text.split("<section id='fresh'>")[1].split("</section>")[0]
    cell = re.search(rf"<th>{AGREEMENT}</th><td>(\d+\.\d)%</td>", fresh)
    assert cell is not None, fresh.split("<img")[0]  # same format: one decimal and a percent sign
    assert f"<p class='note'>{AGREEMENT}:" in fresh and "true return" in fresh and HELDOUT in fresh
    # every accuracy on the page is a percentage with one decimal: no bare 0.xyz fractions
    tables = re.findall(r"<td>([^<]*)</td>", summary + fresh)
    assert not [t for t in tables if re.fullmatch(r"0\.\d+", t)], tables


def test_the_video_is_shown_at_least_400_pixels_wide(trained: tuple[Path, str]) -> None:
    """Pendulum's frames, shrunk to 192 pixels high, made a 166-pixel video: too small to see."""
    from prefrl.interpret.run_page import video_display_width

    text = (trained[0] / "report" / "index.html").read_text()
    width = re.search(r"<video src='policy.webm' width='(\d+)'", text)
    assert width is not None and int(width.group(1)) >= 400, text[text.find("<video") :][:200]
    assert int(width.group(1)) % 166 == 0  # a whole multiple of the encoded frames: crisp pixels
    assert "image-rendering:pixelated" in text
    assert video_display_width(166) == 498 and video_display_width(480) == 480
    assert video_display_width(64) == 448 and video_display_width(400) == 400


def test_no_video_and_no_pairs(trained: tuple[Path, str], tmp_path: Path) -> None:
    run, _ = trained
    assert prefrl_main(["report", str(run), "--out", str(tmp_path), "--no-video", "--pairs", "0"]) == 0
    text = (tmp_path / "index.html").read_text()
    assert "<video" not in text and not (tmp_path / "policy.webm").exists()
    assert "<section id='pairs'>" not in text and "<section id='fresh'>" in text


def test_help_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        prefrl_main(["report", "--help"])
    assert e.value.code == 0
    helptext = capsys.readouterr().out
    assert "--no-video" in helptext and "--pairs" in helptext
    assert prefrl_main(["report", str(tmp_path / "missing")]) == 2
    assert "is this a prefrl run directory" in capsys.readouterr().err


def test_disagreements_put_the_worst_inverted_pair_first() -> None:
    n, length = 4, 3
    rows = n * length
    obs, acts = np.zeros((rows + 1, 1), np.float32), np.zeros((rows, 1), np.float32)
    starts = np.arange(n) * length
    frags = Fragments(obs, acts, None, np.zeros(rows, bool), starts, length, np.arange(n), np.zeros(n, int))
    teacher = np.array([0.0, 1.0, 2.0, 10.0])
    learned = np.array([0.0, 1.0, 2.0, -5.0])  # clip 3 is the teacher's best and the model's worst
    clips = FreshClips(frags, np.array(["policy"] * n), teacher, learned, teacher, None)
    pairs, probs, acc = disagreements(clips, 2, seed=0)
    assert pairs[0, 0] == 3 and probs[0] < 0.01  # the teacher's choice first, the model doubts it
    assert probs[0] <= probs[1] and 0.0 <= acc < 1.0


def test_label_counts() -> None:
    assert label_counts(np.array([1, 0, 0.5, 1, 0.7])) == {
        "first preferred": 2, "second preferred": 1, "equally good": 1, "other": 1,
    }  # fmt: skip


@pytest.mark.skipif(
    chromium_path() is None, reason="Debian chromium is not installed (apt-get install chromium)"
)
def test_page_loads_in_chromium_without_console_errors(trained: tuple[Path, str], tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    page_path = trained[0] / "report" / "index.html"
    with sync_api.sync_playwright() as pw:
        ctx = launch(pw, tmp_path / "profile")
        page = ctx.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        page.wait_for_function(
            "() => { const v = document.querySelector('video');"
            " return v.readyState >= 2 && v.videoWidth > 0; }",
            timeout=15_000,
        )
        sizes = page.evaluate("() => [...document.images].map(i => [i.alt, i.complete, i.naturalWidth])")
        shown = page.evaluate("() => document.querySelector('video').getBoundingClientRect().width")
        ctx.close()
    assert not errors, errors
    assert shown >= 400  # the 166-pixel frames are enlarged on screen
    assert [s[0] for s in sizes[:2]] == ["training curves", "learned vs true return"]
    assert len(sizes) >= 3 and all(done and width > 100 for _, done, width in sizes), sizes


def test_replayed_frames_are_the_frames_rendered_while_collecting(trained: tuple[Path, str]) -> None:
    from prefrl.interpret.run_page import PageConfig, fresh_clips, load_policy, video_stride, with_frames
    from prefrl.rewards.io import load_reward_net
    from prefrl.storage.checkpoint import read_json

    run, _ = trained
    cfg = PageConfig(run, pairs=3, episodes=1)
    conf = read_json(run / "config.json", "run config")
    net, agent = load_reward_net(run / "reward.safetensors").eval(), load_policy(run, conf)
    clips, pairs, _, _ = with_frames(cfg, conf, net, agent)  # only the shown frames, by replay
    full = fresh_clips(cfg, conf, net, agent, render=True)  # every frame, while collecting
    assert clips.recorded is not None and len(pairs) == 3  # it did replay
    np.testing.assert_array_equal(clips.learned, full.learned)  # the same clips
    np.testing.assert_array_equal(clips.fragments.frames(pairs), full.fragments.frames(pairs))
    assert clips.policy_frames is not None and full.policy_frames is not None
    k = video_stride(len(full.policy_frames))  # the frames the video keeps
    np.testing.assert_array_equal(clips.policy_frames[::k], full.policy_frames[::k])
    assert clips.policy_frames.std() > 0


def test_long_episodes_keep_every_kth_frame_in_the_video_at_a_lower_rate() -> None:
    from prefrl.interpret.run_page import VIDEO_FRAMES, video_stride

    assert video_stride(200) == 1 and video_stride(VIDEO_FRAMES) == 1
    assert video_stride(1000) == 2 and len(range(0, 1000, video_stride(1000))) <= VIDEO_FRAMES


def test_the_report_and_the_page_say_where_the_run_watch_fired(trained: tuple[Path, str]) -> None:
    run, printed = trained
    watch = json.loads((run / "report.json").read_text())["watch"]
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    fired = [int(float(r["step"])) for r in rows if r.get("watch/alarm") == "1.0"]
    assert watch["alarms"] == fired and watch["iterations"] == sum(bool(r.get("watch/alarm")) for r in rows)
    assert watch["iterations"] > 0
    assert f"run watch                   : {watch['text']}" in printed
    summary = (run / "report" / "index.html").read_text().split("<section id='summary'>")[1]
    assert "run watch" in summary and html.escape(watch["text"]) in summary.split("</section>")[0]
