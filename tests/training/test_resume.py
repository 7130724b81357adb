"""Kill ``prefrl train`` mid-run, resume it: it continues where it stopped and loses no label."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from prefrl.data import PreferenceDataset
from tests.narrow import present, section

ARGS = [
    "--loop.total-steps", "700", "--loop.iterations", "5", "--loop.initial-steps", "200",
    "--loop.total-labels", "10", "--loop.fragment-length", "20", "--loop.initial-label-frac", "0.2",
    "--agent.net-arch", "16", "16", "--agent.batch-size", "32", "--reward.hidden", "16", "16",
    "--trainer.epochs", "2", "--eval-episodes", "1", "--no-progress",
]  # fmt: skip


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "prefrl.cli.main", "train", *args]


def test_kill_and_resume_loses_no_label(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        _cli("--run-dir", str(run), *ARGS), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    latest = run / "checkpoints" / "LATEST"
    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None:
            if latest.exists() and (run / "checkpoints" / "labels.json").exists():
                state = (run / "checkpoints" / "labels.json").read_text()
                if (
                    '"labels": ' in state
                    and int(state.split('"labels": ')[1].split(",")[0].split("}")[0]) >= 4
                ):
                    break
            time.sleep(0.05)
        assert proc.poll() is None, (
            f"training ended before it could be killed: {present(proc.stderr).read()!r}"
        )
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    before = PreferenceDataset.load(run / "preferences.npz")
    assert len(before) >= 4
    import json

    ckpt_dir = run / "checkpoints" / (run / "checkpoints" / "LATEST").read_text().strip()
    wall_before = json.loads((ckpt_dir / "state.json").read_text())["wall_s"]
    assert wall_before > 0
    broken = tmp_path / "broken"
    shutil.copytree(run, broken)
    res = subprocess.run(_cli("--resume", str(run)), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    after = PreferenceDataset.load(run / "preferences.npz")
    idx = np.searchsorted(after.pair_ids, before.pair_ids)
    np.testing.assert_array_equal(after.pair_ids[idx], before.pair_ids)  # every label survived
    np.testing.assert_array_equal(after.labels[idx], before.labels)
    assert len(after) == 10  # and the budget was not asked twice

    report = json.loads((run / "report.json").read_text())
    assert report["env_steps"] == 700 and (run / "policy.zip").exists()
    # the time taken counts the first process's training too, not only the resumed one
    assert report["resumed"] and report["wall_s"] >= report["train_wall_s"] > wall_before
    # metrics.csv accounts for every query asked, also those of an iteration the kill cut short
    import csv

    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert sum(float(r.get("labels/asked") or 0) for r in rows) == 10, [r.get("labels/asked") for r in rows]

    # a corrupt checkpoint is a clear error, not a silent restart
    ckpt = broken / "checkpoints" / (broken / "checkpoints" / "LATEST").read_text().strip()
    (ckpt / "reward.safetensors").write_bytes(b"garbage")
    res = subprocess.run(_cli("--resume", str(broken)), capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "corrupt checkpoint" in res.stderr and "reward.safetensors" in res.stderr


def test_trainer_state_is_saved_without_pickle(tmp_path) -> None:
    import pytest
    import torch

    from prefrl.storage.checkpoint import load_tensor_state, save_tensor_state

    generator = torch.Generator().manual_seed(1).get_state()
    state = {"trainer": {"optimizer": {"exp_avg": torch.arange(3.0), "steps": 7, "lr": 0.003},
                         "generator": generator, "calls": 2},
             "torch_rng": torch.get_rng_state()}  # fmt: skip
    save_tensor_state(state, tmp_path / "t.safetensors")
    back = load_tensor_state(tmp_path / "t.safetensors")
    trainer = section(back, "trainer")
    assert section(trainer, "optimizer")["steps"] == 7 and trainer["calls"] == 2
    assert torch.equal(section(trainer, "optimizer")["exp_avg"], torch.arange(3.0))
    assert torch.equal(trainer["generator"], generator)
    (tmp_path / "bad.safetensors").write_bytes(b"\x00" * 20)
    with pytest.raises(ValueError, match=r"bad\.safetensors"):
        load_tensor_state(tmp_path / "bad.safetensors")


def test_kill_before_the_first_checkpoint_keeps_every_label(tmp_path: Path) -> None:
    """Killed during the first iteration (labels given, no checkpoint yet): the resumed run starts
    over but keeps those labels and asks none of them again."""
    run = tmp_path / "run"
    slow_first = [*ARGS, "--trainer.epochs", "600"]  # the first reward training takes seconds
    proc = subprocess.Popen(_cli("--run-dir", str(run), *slow_first), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip
    prefs, latest = run / "preferences.npz", run / "checkpoints" / "LATEST"
    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None and not prefs.exists():
            time.sleep(0.05)
        time.sleep(0.3)  # (the file is written by rename: complete once it exists)
        assert proc.poll() is None and not latest.exists(), "no window between the labels and the checkpoint"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert not latest.exists()
    before = PreferenceDataset.load(prefs)
    assert len(before) >= 1
    res = subprocess.run(_cli("--resume", str(run)), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert f"starting over with the {len(before)} labels" in res.stderr
    after = PreferenceDataset.load(prefs)
    idx = np.searchsorted(after.pair_ids, before.pair_ids)
    np.testing.assert_array_equal(after.pair_ids[idx], before.pair_ids)
    np.testing.assert_array_equal(after.labels[idx], before.labels)
    import json

    report = json.loads((run / "report.json").read_text())
    assert len(after) == 10 and report["queries_asked"] == 10  # the budget, each label asked once


def test_resume_takes_back_answers_a_killed_trainer_took_and_tidies_its_leftovers(tmp_path: Path) -> None:
    """The moments a random kill rarely hits, set up on purpose: answers taken from the store
    but not yet saved, queries counted but never stored, a half-encoded clip, a clip whose
    query was never written."""
    from prefrl.storage.checkpoint import CheckpointDir
    from prefrl.teachers.human import StoreTeacher
    from prefrl.training.config import LoopConfig
    from tests.storage.helpers import make_fragments
    from tests.training.test_loop import build

    db, run = tmp_path / "labels.db", tmp_path / "run"
    frags = make_fragments(6, length=20)
    killed = StoreTeacher(db, run="run")
    killed.submit(frags, np.array([[0, 1], [2, 3], [4, 5]]))
    killed.flush()
    user = killed.store.user_for_token(killed.store.add_user("ann"))
    assert user is not None
    for qid, answer in ((1, "left"), (2, "right")):
        killed.store.add_label(qid, user.id, answer)
    assert len(killed.poll()[0].labels) == 2  # taken (marked consumed) and then the kill
    clip_dir = killed.store.clip_dir
    stored = set(os.listdir(clip_dir))
    (clip_dir / f"r{killed.run_id}-{'0' * 32}.part.webm").write_bytes(b"half a video")
    killed.store.add_clips(killed.run_id, frags, [0])  # its query was never stored
    (clip_dir / f"r{killed.run_id + 1}-{'1' * 32}.webm").write_bytes(b"another run's")
    CheckpointDir(run).write_labels_state({"queries_asked": 5, "labels": 0})  # 2 never reached the store

    cfg = LoopConfig(total_steps=800, total_labels=8, iterations=3, initial_steps=200, fragment_length=20)
    loop = build(cfg, teacher=StoreTeacher(db, run="run"), tmp=run)
    assert loop.load_checkpoint() is False
    assert loop.state.queries_asked == 3  # the 2 lost in encoding are asked again
    assert sorted(loop.dataset.labels.tolist()) == [0.0, 1.0]
    assert loop.dataset.answer_keys.tolist() == [1, 2]
    assert set(os.listdir(clip_dir)) == stored | {f"r{killed.run_id + 1}-{'1' * 32}.webm"}
    assert PreferenceDataset.load(run / "preferences.npz").answer_keys.tolist() == [1, 2]
    assert loop._poll(all=True) == 0  # a second take-back adds nothing twice


def test_a_run_from_before_an_option_existed_resumes_and_a_foreign_checkpoint_is_refused(
    tmp_path: Path,
) -> None:
    """A run whose config.json predates an option (here ``agent.cnn``) resumes: its checkpoints
    hold the hash of the file as written, not of today's defaults. A checkpoint from another
    config is still refused."""
    import json

    from prefrl.cli.main import main
    from prefrl.run.config import IGNORED_ON_RESUME
    from prefrl.storage.checkpoint import config_hash

    run = tmp_path / "run"
    assert main(["train", "--run-dir", str(run), *ARGS]) == 0
    cfg = json.loads((run / "config.json").read_text())
    del cfg["agent"]["cnn"]  # as an older prefrl wrote it
    (run / "config.json").write_text(json.dumps(cfg))
    ckpt = run / "checkpoints" / (run / "checkpoints" / "LATEST").read_text().strip()
    state = json.loads((ckpt / "state.json").read_text())
    state["config_hash"] = config_hash({k: v for k, v in cfg.items() if k not in IGNORED_ON_RESUME})
    (ckpt / "state.json").write_text(json.dumps(state))
    report = run / "report.json"
    report.unlink()
    assert main(["train", "--resume", str(run)]) == 0
    assert json.loads(report.read_text())["resumed"]

    state["config_hash"] = "0123456789abcdef"  # a checkpoint written under another config
    (ckpt / "state.json").write_text(json.dumps(state))
    assert main(["train", "--resume", str(run)]) == 2
