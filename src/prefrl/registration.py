"""Gymnasium ids of the project's own environments, registered on ``import prefrl``.

Registration names each environment by its import path, so it costs no import of the
environment's module (or of torch) until ``gymnasium.make`` builds one. Without importing
prefrl, ``gymnasium.make("prefrl:prefrl/MovingDot-v0")`` imports it first (Gymnasium's
``module:id`` form).

Procgen's games register as ``procgen/<game>`` (:mod:`prefrl.envs.procgen`) whether or not
Procgen is installed; making one without it fails with one line naming the install command.
"""

from __future__ import annotations

import gymnasium as gym

ENVIRONMENTS: dict[str, str] = {
    "prefrl/GridWorld-v0": "prefrl.envs.gridworld:GridWorldEnv",
    "prefrl/MovingDot-v0": "prefrl.envs.moving_dot:MovingDotEnv",
}
PROCGEN_PREFIX = "procgen/"
PROCGEN_GAMES = (
    "bigfish",
    "bossfight",
    "caveflyer",
    "chaser",
    "climber",
    "coinrun",
    "dodgeball",
    "fruitbot",
    "heist",
    "jumper",
    "leaper",
    "maze",
    "miner",
    "ninja",
    "plunder",
    "starpilot",
)
"""Procgen's 16 games (its ``ENV_NAMES``), each registered as ``procgen/<game>``."""


def register_envs() -> None:
    """Register every id in :data:`ENVIRONMENTS` that is not registered yet (idempotent)."""
    for env_id, entry_point in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point)
    for game in PROCGEN_GAMES:
        if PROCGEN_PREFIX + game not in gym.registry:
            gym.register(
                PROCGEN_PREFIX + game, entry_point="prefrl.envs.procgen:ProcgenEnv", kwargs={"game": game}
            )
