"""scripts/install.sh: a training run installs prefrl alone, the tests add the [dev] tools (issue 47).

The scripts run for real (bash, the stamp file, the order of the steps) against a venv whose
``python`` and ``prefrl`` only write down how they were called, so no package is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTEST = "python -m pytest -q -n auto --dist worksteal"  # the suite on every core (pytest-xdist)

FAKE = """#!/bin/sh
echo "$(basename "$0") $*" >> "$(dirname "$0")/../calls.log"
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the three scripts beside a pyproject.toml, and a venv that records its calls."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    for name in ("install.sh", "train.sh", "test.sh"):
        shutil.copy2(REPO / "scripts" / name, root / "scripts" / name)
    (root / "pyproject.toml").write_text("[project]\nname = 'prefrl'\n")
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "prefrl"):
        (bin_dir / name).write_text(FAKE)
        (bin_dir / name).chmod(0o755)
    old = os.path.getmtime(root / "pyproject.toml") - 100
    os.utime(root / "pyproject.toml", (old, old))
    return root


def run(repo: Path, script: str, **env: str) -> list[str]:
    """Run ``bash scripts/<script>``; returns the calls the fake venv saw (and forgets them)."""
    venv = repo.parent / "venv"
    full = {k: v for k, v in os.environ.items() if k != "PREFRL_INSTALL"}
    full.update(PREFRL_VENV=str(venv), **env)
    out = subprocess.run(
        ["bash", str(repo / "scripts" / script)], env=full, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    log = venv / "calls.log"
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def installs(calls: list[str]) -> list[str]:
    return [
        c.split("install -q ")[1] for c in calls if " -m pip install -q " in c and "--upgrade pip" not in c
    ]


def stamp(repo: Path) -> str:
    return (repo.parent / "venv" / ".prefrl-installed").read_text().strip()


def test_train_installs_the_package_alone_and_test_upgrades_it_to_dev(repo: Path) -> None:
    root = str(repo)
    calls = run(repo, "train.sh")
    assert installs(calls) == ["torch==2.13.0", f"-e {root}"]  # CPU torch first, no [dev] extra
    assert calls[-1] == "prefrl train" and stamp(repo) == "train"
    assert run(repo, "train.sh") == ["prefrl train"]  # installed once
    calls = run(repo, "test.sh")
    assert installs(calls) == ["torch==2.13.0", f"-e {root}[dev]"]  # the test tools come now
    assert calls[-1] == PYTEST and stamp(repo) == "dev"
    assert run(repo, "test.sh") == [PYTEST]
    assert run(repo, "train.sh") == ["prefrl train"]  # a dev venv serves a training run as it is


def test_a_changed_pyproject_reinstalls_what_the_venv_had(repo: Path) -> None:
    run(repo, "test.sh")
    os.utime(repo / "pyproject.toml")  # newer than the stamp
    assert installs(run(repo, "train.sh")) == ["torch==2.13.0", f"-e {repo}[dev]"]  # keeps the tools
    assert stamp(repo) == "dev"


def test_install_alone_is_dev_as_ci_needs_and_an_old_empty_stamp_counts_as_dev(repo: Path) -> None:
    assert installs(run(repo, "install.sh")) == ["torch==2.13.0", f"-e {repo}[dev]"]  # .ci/run: ruff, mypy
    (repo.parent / "venv" / ".prefrl-installed").write_text("")  # written before the split
    assert run(repo, "test.sh") == [PYTEST] and run(repo, "install.sh") == []


def test_a_wrong_choice_is_named(repo: Path) -> None:
    env = {**os.environ, "PREFRL_VENV": str(repo.parent / "venv"), "PREFRL_INSTALL": "full"}
    script = str(repo / "scripts" / "install.sh")
    out = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip() == "scripts/install.sh: PREFRL_INSTALL must be 'dev' or 'train', got 'full'"
