"""MuJoCo's warnings as Python log records, not lines on stderr and a ``MUJOCO_LOG.TXT`` file.

MuJoCo reports a warning by printing it to stderr and appending it to ``MUJOCO_LOG.TXT`` in
the working directory, unless a callback is installed (``mujoco.set_mju_user_warning``).
Gymnasium's own model files trigger one on every environment created: HalfCheetah's
``<compiler settotalmass=...>`` makes MuJoCo 3.x say "compiler attribute 'settotalmass' is
deprecated and will be removed in a future release", so a HalfCheetah run printed it a dozen
times and left a log file in whatever folder it was started from.

:func:`route_mujoco_warnings` installs a callback that sends MuJoCo's warnings to the
``prefrl.mujoco`` logger: deprecation notices about the model files (which a user cannot act
on) at ``DEBUG``, every other warning (an unstable simulation, a full contact buffer) at
``WARNING``, which Python prints when no logging is configured. A callback someone else
installed first (dm_control's, which logs through absl, or a user's) is kept.
"""

from __future__ import annotations

import logging

LOGGER = logging.getLogger("prefrl.mujoco")


def log_mujoco_warning(message: str) -> None:
    """MuJoCo's warning callback: one log record per warning (deprecations at ``DEBUG``)."""
    level = logging.DEBUG if "deprecated" in message else logging.WARNING
    LOGGER.log(level, "MuJoCo: %s", message.strip())


def route_mujoco_warnings() -> bool:
    """Send MuJoCo's warnings to Python logging (call before a MuJoCo model is compiled).

    Returns whether this module's callback is in place: ``False`` when MuJoCo is not
    installed or another callback was installed first (it is kept). Safe to call often.
    """
    try:
        import mujoco  # type: ignore[import-untyped]
    except ImportError:
        return False
    current = mujoco.get_mju_user_warning()
    if current is None:
        mujoco.set_mju_user_warning(log_mujoco_warning)
        return True
    return current is log_mujoco_warning
