"""Gymnasium ids of the project's own environments, registered on ``import prefrl``.

Registration names each environment by its import path, so it costs no import of the
environment's module (or of torch) until ``gymnasium.make`` builds one. Without importing
prefrl, ``gymnasium.make("prefrl:prefrl/MovingDot-v0")`` imports it first (Gymnasium's
``module:id`` form).
"""

from __future__ import annotations

import gymnasium as gym

ENVIRONMENTS: dict[str, str] = {
    "prefrl/GridWorld-v0": "prefrl.envs.gridworld:GridWorldEnv",
    "prefrl/MovingDot-v0": "prefrl.envs.moving_dot:MovingDotEnv",
}


def register_envs() -> None:
    """Register every id in :data:`ENVIRONMENTS` that is not registered yet (idempotent)."""
    for env_id, entry_point in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point)
