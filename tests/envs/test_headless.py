"""MuJoCo tasks render on a machine without a display (clips for people, videos, run pages)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from prefrl.envs import headless

UNSET = ("DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL", "PYOPENGL_PLATFORM")


def run_without_display(code: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in a fresh process with no display and no renderer chosen."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


RENDER = """
from prefrl.agents.sb3 import make_env
env = make_env("HalfCheetah-v5", render=True)
env.reset(seed=0)
frame = env.render()
env.close()
import os
print(os.environ["MUJOCO_GL"], frame.shape, float(frame.std()))
"""


def test_gymnasium_mujoco_task_renders_without_a_display() -> None:
    out = run_without_display(RENDER)
    assert out.returncode == 0, out.stderr[-2000:]  # before: GLFW could not open a window
    backend, *_, std = out.stdout.split()
    assert backend in ("egl", "osmesa") and float(std) > 0


WRAPPED = """
import gymnasium as gym
from prefrl.preference_env import PreferenceEnv
env = PreferenceEnv(gym.make("HalfCheetah-v5", render_mode="rgb_array"), record_frames=True)
env.reset(seed=0)
for _ in range(3):
    env.step(env.action_space.sample())
env.close()
import os
print(os.environ["MUJOCO_GL"])
"""


def test_the_wrapper_records_frames_of_a_mujoco_task_without_a_display() -> None:
    out = run_without_display(WRAPPED)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] in ("egl", "osmesa")


def test_a_users_backend_or_display_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    assert headless.choose_mujoco_renderer() == "osmesa"
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setenv("DISPLAY", ":0")
    assert headless.choose_mujoco_renderer() is None and "MUJOCO_GL" not in os.environ


PENDULUM = """
from prefrl.agents.sb3 import make_env
env = make_env("Pendulum-v1", render=True)
env.reset(seed=0)
frame = env.render()
env.close()
import os
print(os.environ["SDL_VIDEODRIVER"], frame.shape, float(frame.std()))
"""


def test_pygame_tasks_render_off_screen_from_the_library_too() -> None:
    """Issue 47: only the CLI chose SDL's dummy driver; from Python (a notebook) Pendulum's first
    frame printed "error: XDG_RUNTIME_DIR is invalid or not set in the environment."."""
    env = {k: v for k, v in os.environ.items() if k not in (*UNSET, "XDG_RUNTIME_DIR", "SDL_VIDEODRIVER")}
    out = subprocess.run(
        [sys.executable, "-c", PENDULUM], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    driver, *_, std = out.stdout.split()
    assert driver == "dummy" and float(std) > 0
    assert "XDG_RUNTIME_DIR" not in out.stderr, out.stderr


def test_a_users_sdl_driver_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("SDL_AUDIODRIVER", raising=False)  # restored afterwards
    monkeypatch.setenv("SDL_VIDEODRIVER", "offscreen")
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    assert headless.choose_headless_renderers() == "osmesa"
    assert os.environ["SDL_VIDEODRIVER"] == "offscreen" and not headless.choose_sdl_dummy_drivers()
