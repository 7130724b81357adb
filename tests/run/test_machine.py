"""Where a result was measured: the processor, PyTorch's kernels and the code's commit, which
decide whether two runs of one seed can repeat each other."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from prefrl.run.machine import cpu_model, machine_label, machine_record, source_commit

ROOT = Path(__file__).resolve().parents[2]


def test_the_record_names_the_kernels_torch_runs_and_the_versions() -> None:
    rec = machine_record()
    assert rec["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert (rec["torch"], rec["numpy"]) == (torch.__version__, np.__version__)
    assert isinstance(rec["cpus"], int) and rec["cpus"] >= 1
    assert rec["cpu"] == cpu_model() and rec["cpu"]
    json.dumps(rec)  # it goes into each cell's result.json as it is


def test_linux_processors_are_told_apart_by_family_and_model() -> None:
    info = Path("/proc/cpuinfo")
    if not info.exists() or "cpu family" not in info.read_text():
        pytest.skip("no /proc/cpuinfo with family numbers here")
    lines = info.read_text().splitlines()
    fam = next(line.split(":")[1].strip() for line in lines if line.startswith("cpu family"))
    assert f"(family {fam}, model " in cpu_model()


def test_the_commit_is_the_checkouts_own() -> None:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    head = subprocess.run([git, "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    got = source_commit()
    assert got is not None and head.stdout.startswith(got.removesuffix("-dirty"))
    assert len(got.removesuffix("-dirty")) >= 12


def test_the_label_names_processor_kernels_and_cores() -> None:
    rec = {"cpu": "AMD EPYC (family 25, model 17)", "cpu_capability": "AVX512", "cpus": 2}
    assert machine_label(rec) == "AMD EPYC (family 25, model 17), AVX512, 2 cores"
    assert machine_label({}) == "unknown, ?, ? cores"  # a record missing fields still reads


def test_an_installed_copy_inside_another_repository_names_no_commit(tmp_path: Path, monkeypatch) -> None:
    """A package installed into a venv inside someone's project is not that project's commit."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("no git")
    import prefrl.run.machine as machine

    repo = tmp_path / "project"
    pkg = repo / ".venv" / "prefrl" / "run"
    pkg.mkdir(parents=True)
    copy = pkg / "machine.py"
    copy.write_text((ROOT / "src/prefrl/run/machine.py").read_text())
    subprocess.run([git, "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("x")
    subprocess.run([git, "-C", str(repo), "add", "README"], check=True)
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "t")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "t@t")
    subprocess.run([git, "-C", str(repo), "commit", "-qm", "x"], check=True)
    monkeypatch.setattr(machine, "__file__", str(copy))
    assert machine.source_commit() is None
