"""The project's own Gymnasium environments (``prefrl/GridWorld-v0``, ``prefrl/MovingDot-v0``;
registered by ``import prefrl``), DeepMind Control ids (:mod:`prefrl.envs.dmc`), Procgen's games
as ``procgen/<game>`` (:mod:`prefrl.envs.procgen`, registered by ``import prefrl`` too), the Atari
preprocessing and the ``--env.*`` config section (:mod:`prefrl.envs.config`).
"""

from prefrl.envs import gridworld, moving_dot  # noqa: F401  (register the project's environments)
