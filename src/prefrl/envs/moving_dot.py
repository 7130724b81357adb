"""A small pixel environment: move a dot onto a target.

Registered with Gymnasium as ``prefrl/MovingDot-v0`` by ``import prefrl``.

The world is a ``size x size`` image. The agent's dot is drawn in the red channel and
the target in the green one. Actions (``Discrete(5)``): 0 stay, 1 up, 2 down, 3 left,
4 right; the dot moves ``speed`` pixels. The reward is the progress towards the target,
``(d(s) - d(s')) / speed`` (about +1 for a step towards it, -1 away, 0 for staying),
so a random policy earns about 0 per episode and a good one about one per step. When the
dot comes within ``speed`` pixels of the target, the target jumps to a new random place.
Episodes are cut after ``max_steps`` steps (truncation; the task never terminates).

Example:
    >>> import gymnasium as gym
    >>> import prefrl  # registers the environment
    >>> env = gym.make("prefrl/MovingDot-v0", size=40)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype.name
    ((40, 40, 3), 'uint8')
    >>> obs, reward, terminated, truncated, info = env.step(4)
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ENV_ID = "prefrl/MovingDot-v0"

# action -> (dy, dx)
_MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]], dtype=np.int64)


class MovingDotEnv(gym.Env[np.ndarray, np.int64]):
    """Move a dot onto a target (see module docstring).

    Args:
        size: image side in pixels (``>= 8``; SB3's ``CnnPolicy`` needs ``>= 36``).
        obs_type: ``"pixels"``: ``uint8 [size, size, 3]`` images; ``"state"``: ``float32 [4]``
            (dot y, x, target y, x, scaled to [0, 1]).
        speed: pixels the dot moves per step.
        dot: side of the drawn squares in pixels.
        max_steps: steps per episode before truncation.
        render_mode: ``"rgb_array"`` returns the ``[size, size, 3]`` image from ``render()``.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}  # noqa: RUF012  (gymnasium.Env declares it per instance)

    def __init__(
        self,
        size: int = 40,
        obs_type: Literal["pixels", "state"] = "pixels",
        speed: int = 2,
        dot: int = 3,
        max_steps: int = 200,
        render_mode: str | None = None,
    ) -> None:
        if size < 8:
            raise ValueError(f"size must be >= 8 pixels, got {size}")
        if obs_type not in ("pixels", "state"):
            raise ValueError(f"obs_type must be 'pixels' or 'state', got {obs_type!r}")
        if not 1 <= speed < size // 2:
            raise ValueError(f"speed must lie in [1, size/2), got {speed}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.size, self.obs_type, self.speed, self.dot, self.max_steps = size, obs_type, speed, dot, max_steps
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(5)
        if obs_type == "pixels":
            self.observation_space = spaces.Box(0, 255, (size, size, 3), np.uint8)
        else:
            self.observation_space = spaces.Box(0.0, 1.0, (4,), np.float32)
        self._hi = size - dot  # top-left corner of a square lies in [0, _hi]
        self._pos = np.zeros(2, dtype=np.int64)
        self._target = np.zeros(2, dtype=np.int64)
        self._t = 0

    # ------------------------------------------------------------- helpers
    def _new_target(self) -> None:
        while True:
            t = self.np_random.integers(0, self._hi + 1, 2)
            if np.abs(t - self._pos).max() > self.speed:
                self._target = t
                return

    def _distance(self) -> float:
        return float(np.hypot(*(self._pos - self._target)))

    def _image(self) -> np.ndarray:
        img = np.zeros((self.size, self.size, 3), dtype=np.uint8)
        (y, x), (ty, tx), d = self._pos, self._target, self.dot
        img[ty : ty + d, tx : tx + d, 1] = 255
        img[y : y + d, x : x + d, 0] = 255
        return img

    def _obs(self) -> np.ndarray:
        if self.obs_type == "pixels":
            return self._image()
        return (np.concatenate([self._pos, self._target]) / self._hi).astype(np.float32)

    # ------------------------------------------------------------- gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._pos = self.np_random.integers(0, self._hi + 1, 2)
        self._new_target()
        self._t = 0
        return self._obs(), {"distance": self._distance()}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a < 5:
            raise ValueError(f"action must be in 0..4, got {action!r}")
        before = self._distance()
        self._pos = np.clip(self._pos + self.speed * _MOVES[a], 0, self._hi)
        after = self._distance()
        reward = (before - after) / self.speed
        reached = after < self.speed
        if reached:
            self._new_target()
        self._t += 1
        info = {"distance": self._distance(), "reached": reached}
        return self._obs(), float(reward), False, self._t >= self.max_steps, info

    def render(self) -> np.ndarray | None:
        return self._image() if self.render_mode == "rgb_array" else None
