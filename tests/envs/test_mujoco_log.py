"""MuJoCo's warnings go to Python logging: no ``MUJOCO_LOG.TXT`` in the user's folder, no
deprecation notice on stderr for Gymnasium's own model files (issue 47)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mujoco", reason="MuJoCo is not installed")

RUN = """
import logging, sys
logging.basicConfig(stream=sys.stdout, level=logging.DEBUG, format="LOG %(levelname)s %(name)s %(message)s")
for name in ("matplotlib", "PIL", "absl", "OpenGL"):
    logging.getLogger(name).setLevel(logging.WARNING)
from prefrl.agents.sb3 import make_env
env = make_env("HalfCheetah-v5", render=True)  # its XML sets the deprecated settotalmass
env.reset(seed=0)
for _ in range(5):
    env.step(env.action_space.sample())
frame = env.render()
env.close()
import mujoco  # a simulation that blows up: a warning people must still see
xml = '<mujoco><worldbody><body><freejoint/><geom size=".1"/></body></worldbody></mujoco>'
model = mujoco.MjModel.from_xml_string(xml)
data = mujoco.MjData(model)
data.qvel[:] = 1e20
mujoco.mj_step(model, data)
print("frame", frame.shape)
"""

QUIET = """
from prefrl.agents.sb3 import make_env
for _ in range(2):
    env = make_env("HalfCheetah-v5")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    env.close()
print("done")
"""


def run_in(cwd: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``python -W default -c code`` in ``cwd`` (DeprecationWarnings shown, as a user sees them)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    return subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_mujoco_task_leaves_no_log_file_and_prints_no_deprecation(tmp_path: Path) -> None:
    out = run_in(tmp_path, QUIET)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "done"
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()  # before: one line per environment made
    assert list(tmp_path.iterdir()) == []
    # before: "WARNING: compiler attribute 'settotalmass' is deprecated ..." twice
    assert "deprecated" not in out.stderr.lower() and "DeprecationWarning" not in out.stderr, out.stderr
    assert "WARNING" not in out.stderr, out.stderr


def test_mujoco_warnings_are_log_records_deprecations_at_debug(tmp_path: Path) -> None:
    out = run_in(tmp_path, RUN)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "frame (480, 480, 3)" in out.stdout  # rendering (headless) is unaffected
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    logs = [line for line in out.stdout.splitlines() if line.startswith("LOG ") and "prefrl.mujoco" in line]
    deprecated = [line for line in logs if "settotalmass" in line]
    assert deprecated and all(line.startswith("LOG DEBUG prefrl.mujoco MuJoCo: ") for line in deprecated)
    unstable = [line for line in logs if "unstable" in line]
    assert unstable and unstable[0].startswith("LOG WARNING prefrl.mujoco MuJoCo: Nan, Inf or huge value")
    assert "settotalmass" not in out.stderr and "unstable" not in out.stderr  # logged, not printed


def test_a_callback_installed_first_is_kept(tmp_path: Path) -> None:
    code = (
        "import mujoco\n"
        "from prefrl.envs.mujoco_log import route_mujoco_warnings\n"
        "def mine(message): pass\n"
        "mujoco.set_mju_user_warning(mine)\n"
        "print(route_mujoco_warnings(), mujoco.get_mju_user_warning() is mine)\n"
        "mujoco.set_mju_user_warning(None)\n"
        "print(route_mujoco_warnings(), route_mujoco_warnings())\n"
    )
    out = run_in(tmp_path, code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "True", "True"]
