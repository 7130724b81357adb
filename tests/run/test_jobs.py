"""The benchmark drivers' child processes (prefrl.run.jobs): each job's output lands in its own
log, a failing job is named, and the others still run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from prefrl.run.jobs import run_jobs


def test_each_job_logs_and_a_failure_is_named_while_the_rest_run(tmp_path: Path) -> None:
    py = sys.executable
    jobs = [
        ("a", [py, "-c", "print('alpha')"]),
        ("bad", [py, "-c", "import sys; print('beta'); sys.exit(3)"]),
        ("c", [py, "-c", "import os; print(os.environ['MARK'])"]),
    ]
    (tmp_path / "a.log").write_text("before\n")  # a resumed job appends to its log
    failed = run_jobs(jobs, tmp_path, parallel=2, env={**os.environ, "MARK": "gamma"}, poll_s=0.05)
    assert failed == ["bad"]
    assert (tmp_path / "a.log").read_text() == "before\nalpha\n"
    assert (tmp_path / "bad.log").read_text() == "beta\n"
    assert (tmp_path / "c.log").read_text() == "gamma\n"  # the environment given reaches the child


def test_no_parallel_slot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="parallel must be >= 1"):
        run_jobs([], tmp_path, parallel=0, env={})


def test_the_runs_still_to_do_are_those_without_a_result_file(tmp_path: Path) -> None:
    from prefrl.run.jobs import unfinished

    (tmp_path / "true-seed0.json").write_text("{}")
    (tmp_path / "learned-seed1").mkdir()  # started, no result yet: resumed
    todo = unfinished(tmp_path, ["learned", "true"], range(0, 2))
    assert todo == [("learned", 0), ("learned", 1), ("true", 1)]
