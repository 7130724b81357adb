"""The lines a run's start or resume refuses with: each names what is wrong and the command
that goes on (a reused run name, a blank run id, a --resume path that is not a run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prefrl.cli.main import main
from prefrl.run.config import TrainConfig
from prefrl.run.resolve import resolve_identity
from prefrl.run.setup import prepare_run_dir
from prefrl.teachers.human import StoreTeacher
from tests.narrow import present
from tests.storage.helpers import make_fragments

TINY = ["--env.id", "Pendulum-v1", "--loop.total-steps", "300", "--loop.iterations", "1",
        "--loop.initial-steps", "100", "--loop.total-labels", "2", "--loop.fragment-length", "10",
        "--agent.net-arch", "8", "--eval-episodes", "1", "--no-progress", "--no-page"]  # fmt: skip


def _web_cfg(run_dir: Path, store: Path, **kw: Any) -> TrainConfig:
    cfg = TrainConfig(run_dir=str(run_dir), teacher="web", store=str(store), **kw)
    return resolve_identity(cfg)


@pytest.fixture
def asked(tmp_path: Path) -> tuple[Path, str]:
    """A web run ``a/pendulum`` that has asked two queries: ``(store, its id)``."""
    db = tmp_path / "labels.db"
    first = _web_cfg(tmp_path / "a" / "pendulum", db)
    prepare_run_dir(first)
    assert first.run_id is not None
    teacher = StoreTeacher(str(db), run=first.run_id, title="pendulum")
    teacher.submit(make_fragments(4), np.array([[0, 1], [2, 3]])).result()
    teacher.close()
    return db, first.run_id


def _refusal(cfg: TrainConfig) -> str:
    with pytest.raises(FileExistsError) as e:
        prepare_run_dir(cfg)
    msg = str(e.value)
    assert "\n" not in msg and present(cfg.run_id) not in msg, (
        msg
    )  # the refused run's own id means nothing yet
    return msg


def test_a_fresh_run_in_the_folder_of_a_run_is_told_to_resume_that_run(
    tmp_path: Path, asked: tuple[Path, str]
) -> None:
    db, old_id = asked
    run = tmp_path / "a" / "pendulum"
    msg = _refusal(_web_cfg(run, db))
    assert f"2 queries of run {old_id}" in msg and f"--resume {run}" in msg and "--force" in msg, msg


def test_a_fresh_run_of_a_reused_name_elsewhere_is_not_told_to_resume_its_own_empty_folder(
    tmp_path: Path, asked: tuple[Path, str]
) -> None:
    db, old_id = asked
    run = tmp_path / "b" / "pendulum"
    msg = _refusal(_web_cfg(run, db))
    assert f"run {old_id} (folder 'pendulum')" in msg, msg
    assert f"--resume {run}" not in msg and "another --run-dir name" in msg and "--force" in msg, msg
    assert not run.exists()
    # the ways it names work: another name, or --force under this one
    prepare_run_dir(_web_cfg(tmp_path / "b" / "pendulum2", db))
    prepare_run_dir(_web_cfg(run, db, force=True))
    assert json.loads((run / "config.json").read_text())["run_id"] != old_id


def test_a_fresh_run_given_the_id_of_another_run_is_told_to_pick_another_id(
    tmp_path: Path, asked: tuple[Path, str]
) -> None:
    db, old_id = asked
    cfg = _web_cfg(tmp_path / "c" / "cartpole", db, run_id=old_id)
    with pytest.raises(FileExistsError) as e:
        prepare_run_dir(cfg)
    assert f"run {old_id} (folder 'pendulum'), the id given to this run" in str(e.value)
    assert "another --run-id" in str(e.value) and "--resume " + str(cfg.run_dir) not in str(e.value)


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_run_id_is_refused_in_one_line(
    tmp_path: Path, blank: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match=r"--run-id .*blank"):
        resolve_identity(TrainConfig(run_dir=str(tmp_path / "r"), run_id=blank))
    capsys.readouterr()
    assert main(["train", "--run-dir", str(tmp_path / "r"), "--run-id", blank, *TINY]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--run-id" in err[0] and "blank" in err[0], err
    assert not (tmp_path / "r").exists()


def test_resume_of_what_is_not_a_run_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")  # (a run folder only by its config.json: enough here)
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("not a run")
    cases = {
        tmp_path / "nothing": "no such directory",
        tmp_path / "file.txt": "a file, not a run directory",
        run / "config.json": f"a file, not a run directory; did you mean --resume {run}",
        tmp_path / "empty": "not a run directory, it has no config.json",
        tmp_path: f"not a run directory, it has no config.json; runs in it: {run}",
    }
    seen = set()
    for path, says in cases.items():
        capsys.readouterr()
        assert main(["train", "--resume", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"--resume {path}: {says}" in err[0], (path, err)
        seen.add(err[0])
    assert len(seen) == len(cases)
