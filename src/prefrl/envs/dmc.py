"""DeepMind Control Suite tasks as ordinary Gymnasium ids (``dm_control/walker-walk-v0``).

Shimmy wraps each dm_control task as a Gymnasium environment: 1,000-step episodes that end
by truncation (a time limit, never termination), actions in a ``Box``, and observations as a
``Dict`` of named float64 arrays (``orientations``, ``height``, ``velocity`` ...).
:func:`register_dmc` registers those ids on first use, choosing a headless MuJoCo renderer
when no display is set (EGL, else OSMesa), so clips for people and policy videos render on
a server.

prefrl gives every DMC task (and any environment whose observations are a ``Dict`` of
``Box`` arrays) one flat ``float32`` vector per step, :class:`FlattenBoxDict`: the keys in
sorted order, each array flattened, as the BPref family's ``dmc2gym`` does. The agent, the
reward model, replay relabelling, checkpoints and evaluation then all see the same plain
vector, so nothing downstream needs a dictionary path.

Example:
    >>> register_dmc()
    True
    >>> env = FlattenBoxDict(gym.make("dm_control/cartpole-balance-v0"))
    >>> env.observation_space
    Box(-inf, inf, (5,), float32)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype.name
    ((5,), 'float32')
    >>> env.close()
"""

from __future__ import annotations

import logging
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from prefrl.envs.headless import choose_mujoco_renderer

PREFIX = "dm_control/"


def is_dmc_id(env_id: str) -> bool:
    """Whether ``env_id`` names a DeepMind Control task through Shimmy (``dm_control/...``)."""
    return env_id.startswith(PREFIX)


def register_dmc() -> bool:
    """Register Shimmy's ``dm_control/...`` ids; ``False`` when shimmy or dm_control is missing."""
    if any(is_dmc_id(k) for k in gym.registry):
        return True
    choose_mujoco_renderer()  # before dm_control is imported: it reads MUJOCO_GL once
    try:
        import dm_control.suite  # noqa: F401  (shimmy registers the DMC ids only with it)
        import shimmy
    except ImportError:
        return False
    gym.register_envs(shimmy)
    logging.getLogger("absl").addFilter(_quiet_model_compiler)
    return any(is_dmc_id(k) for k in gym.registry)


def _quiet_model_compiler(record: logging.LogRecord) -> bool:
    """Drop MuJoCo's deprecation notice for an attribute of DMC's own model files (one line per
    environment created: a log of a long run would be mostly that)."""
    return "settotalmass" not in record.getMessage()


def is_box_dict(space: spaces.Space[Any]) -> bool:
    """Whether ``space`` is a ``Dict`` whose every entry is a ``Box`` (what DMC tasks observe)."""
    return isinstance(space, spaces.Dict) and all(isinstance(s, spaces.Box) for s in space.spaces.values())


class FlattenBoxDict(gym.ObservationWrapper):
    """A ``Dict`` of ``Box`` observations as one ``float32`` vector ``[sum of entry sizes]``.

    Entries are concatenated in sorted key order (Gymnasium's ``Dict`` order), each flattened
    in C order; bounds are carried over, so ``observation_space.contains(obs)`` holds.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not is_box_dict(space):
            raise ValueError(f"FlattenBoxDict needs a Dict of Box observations, got {space}")
        assert isinstance(space, spaces.Dict)
        self._keys = list(space.spaces)
        boxes = [cast(spaces.Box, space.spaces[k]) for k in self._keys]  # is_box_dict checked
        low = np.concatenate([np.asarray(b.low, np.float64).reshape(-1) for b in boxes])
        high = np.concatenate([np.asarray(b.high, np.float64).reshape(-1) for b in boxes])
        self.observation_space = spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)

    def observation(self, observation: dict[str, Any]) -> np.ndarray:
        """``{key: array}`` -> ``float32 [D]``."""
        return np.concatenate([np.asarray(observation[k], dtype=np.float32).reshape(-1) for k in self._keys])
