"""Headless renderers where there is no display: SDL's dummy drivers, EGL or OSMesa for MuJoCo.

Gymnasium's classic-control and Box2D environments (Pendulum, CartPole, LunarLander) draw their
frames with pygame, that is SDL. Without a display SDL still probes its video back-ends (X11,
then Wayland, which looks for ``XDG_RUNTIME_DIR``) and prints "error: XDG_RUNTIME_DIR is
invalid or not set in the environment." on the first frame: into every notebook cell that
renders, and first thing in a headless ``prefrl train``. SDL's ``dummy`` video (and audio)
driver draws off-screen without probing; :func:`choose_headless_renderers` picks it, with the
MuJoCo back-end below, wherever prefrl asks an environment for frames.

MuJoCo tasks render through an OpenGL context: GLFW (a window) unless ``MUJOCO_GL`` names
another backend. On a server without a display GLFW cannot start, and Gymnasium's MuJoCo
environments (HalfCheetah, Hopper, ...) then fail at their first ``render()``: no clips for
people to label, no policy videos, no run page. dm_control reads the variable once, when it
is imported, and PyOpenGL reads ``PYOPENGL_PLATFORM`` once, so the choice must be made
before either is imported or any frame is drawn. :func:`choose_mujoco_renderer` makes it:
EGL where its library is installed, else OSMesa (software). A user's own ``MUJOCO_GL``
always wins, and with a display MuJoCo's default (GLFW) is kept.
"""

from __future__ import annotations

import os
import sys


def has_display() -> bool:
    """Whether an X11 or Wayland display is set (a window can be opened)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def choose_mujoco_renderer() -> str | None:
    """Set ``MUJOCO_GL`` (and ``PYOPENGL_PLATFORM``) to a headless backend where there is no
    display and the user named none; returns the backend in use (``None``: MuJoCo's default)."""
    if "MUJOCO_GL" in os.environ or has_display():
        return os.environ.get("MUJOCO_GL")
    import ctypes.util

    os.environ["MUJOCO_GL"] = "egl" if ctypes.util.find_library("EGL") else "osmesa"
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    return os.environ["MUJOCO_GL"]


def choose_sdl_dummy_drivers() -> bool:
    """On Linux without a display, render pygame (SDL) environments off-screen: set
    ``SDL_VIDEODRIVER`` and ``SDL_AUDIODRIVER`` to ``dummy`` unless the user set them.
    Returns whether the dummy video driver is in use. SDL reads them when pygame's display
    starts, at an environment's first ``render()``."""
    if sys.platform.startswith("linux") and not has_display():
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    return os.environ.get("SDL_VIDEODRIVER") == "dummy"


def choose_headless_renderers() -> str | None:
    """Before frames are asked of an environment, on Linux without a display: SDL's dummy
    drivers for pygame-based ones (:func:`choose_sdl_dummy_drivers`) and a headless MuJoCo
    back-end (:func:`choose_mujoco_renderer`). Returns the MuJoCo back-end in use (``None``:
    MuJoCo's default). A user's own settings, a display, macOS and Windows are left alone."""
    if not sys.platform.startswith("linux"):
        return os.environ.get("MUJOCO_GL")
    choose_sdl_dummy_drivers()
    return choose_mujoco_renderer()
