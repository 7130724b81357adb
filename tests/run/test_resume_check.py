"""A resume checks every file it reads first: a bad one stops it with one line naming the file
and the field, no traceback, no file changed and no TensorBoard file added."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from prefrl.cli.main import main

ARGS = ["--env.id", "Pendulum-v1", "--loop.total-steps", "300", "--loop.iterations", "2",
        "--loop.initial-steps", "100", "--loop.total-labels", "4", "--loop.fragment-length", "10",
        "--agent.net-arch", "8", "--eval-episodes", "1", "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("resume") / "run"
    assert main(["train", "--run-dir", str(run), *ARGS]) == 0
    return run


def _snapshot(run: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in run.rglob("*")
        if p.is_file()
    }


def _state(run: Path) -> Path:
    return run / "checkpoints" / (run / "checkpoints" / "LATEST").read_text().strip() / "state.json"


def _edit_state(**fields: object) -> Callable[[Path], Path]:
    def edit(run: Path) -> Path:
        path = _state(run)
        path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))
        return path

    return edit


def _nan_label(run: Path) -> Path:
    path = run / "preferences.npz"
    with np.load(path, allow_pickle=False) as f:
        arrays = dict(f)
    arrays["labels"] = arrays["labels"].copy()
    arrays["labels"][0] = np.nan
    np.savez(path.with_suffix(".tmp.npz"), **arrays)
    path.with_suffix(".tmp.npz").replace(path)
    return path


def _binary_metrics(run: Path) -> Path:
    path = run / "metrics.csv"
    path.write_bytes(bytes(range(256)) * 4)
    return path


def _ckpt(run: Path) -> Path:
    return _state(run).parent


def _garbage_buffer(run: Path) -> Path:
    path = _ckpt(run) / "replay_buffer.npz"
    assert path.exists()
    path.write_bytes(b"not a zip file" * 64)
    return path


def _short_buffer(run: Path) -> Path:
    """A readable buffer file whose arrays disagree with its own row count."""
    path = _ckpt(run) / "replay_buffer.npz"
    with np.load(path, allow_pickle=False) as f:
        arrays = dict(f)
    arrays["rewards"] = arrays["rewards"][:1]
    np.savez(path.with_suffix(".tmp.npz"), **arrays)
    path.with_suffix(".tmp.npz").replace(path)
    return path


def _other_env_policy(run: Path) -> Path:
    """The checkpoint's policy replaced by one of another environment (2 observations, not 3)."""
    from prefrl.agents.policy_io import save_agent
    from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env

    path = _ckpt(run) / "policy.zip"
    venv = make_vec_env("MountainCarContinuous-v0", 1)
    save_agent(make_agent(AgentConfig(algo="sac", net_arch=[8]), venv), path)
    venv.close()
    return path


CASES = {
    "rng": (_edit_state(rng={"bit_generator": "PCG64", "state": "garbage"}), "rng"),
    "iteration_text": (_edit_state(iteration="abc"), "iteration"),
    "iteration_negative": (_edit_state(iteration=-7), "iteration"),
    "queries_huge": (_edit_state(queries_asked=10**9), "queries_asked"),
    "queries_negative": (_edit_state(queries_asked=-100), "queries_asked"),
    "nan_label": (_nan_label, "labels"),
    "binary_metrics": (_binary_metrics, "metrics.csv"),
    "garbage_buffer": (_garbage_buffer, "replay_buffer.npz"),
    "short_buffer": (_short_buffer, "rewards"),
    "other_env_policy": (_other_env_policy, "observation"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_stops_resume_with_one_line_and_changes_nothing(
    finished_run: Path, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, field = CASES[case]
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    bad = edit(run)
    before = _snapshot(run)
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(bad) in lines[0] and field in lines[0], err
    assert _snapshot(run) == before  # nothing rewritten, no TensorBoard file added


class _AnsweredAfterTheKill:
    """A web teacher's side of a resume: one answer came in after the process was killed."""

    def __init__(self, fragments: object, asked: int) -> None:
        self.fragments, self.asked = fragments, asked

    def submit(self, fragments: object, pairs: np.ndarray) -> None:
        raise AssertionError("nothing is asked before the checkpoint loaded")

    def poll(self, all: bool = False) -> list[tuple[object, np.ndarray, np.ndarray, np.ndarray]]:
        return [(self.fragments, np.array([[0, 1]]), np.array([1.0]), np.array([10**6]))]

    def pending(self) -> int:
        return 0

    def resume(self) -> int:
        return self.asked


def test_a_checkpoint_whose_policy_fails_to_load_takes_no_answer_and_writes_nothing(tmp_path: Path) -> None:
    """The agent is loaded before the labels are restored: answers that came in after the kill
    are taken (and saved) only by a resume that goes on."""
    from prefrl.training.config import LoopConfig
    from tests.training.test_loop import build

    cfg = LoopConfig(total_steps=400, total_labels=4, iterations=2, initial_steps=200, fragment_length=10)
    first = build(cfg, tmp=tmp_path)
    first.run()
    first.save_checkpoint()
    before = _snapshot(tmp_path)
    again = build(cfg, teacher=_AnsweredAfterTheKill(first.dataset.fragments, 4), tmp=tmp_path)

    def broken(path: Path) -> object:
        raise ValueError(f"{path}: field 'observation_space' differs")

    with pytest.raises(ValueError, match="observation_space"):
        again.load_checkpoint(broken)
    assert _snapshot(tmp_path) == before
