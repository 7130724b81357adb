"""A headless MuJoCo renderer where there is no display.

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
