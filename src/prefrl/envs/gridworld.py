"""A small tabular gridworld with a known reward, for reward heatmaps and exact checks.

Observations are cell indices ``row * width + col`` (``Discrete(H * W)``, walls included
but unreachable); actions are ``0 up, 1 right, 2 down, 3 left`` (``Discrete(4)``). Moving
into a wall or the border leaves the agent in place. Entering ``G`` gives ``+1`` and
ends the episode, entering ``L`` (lava) gives ``-1`` and ends it; every step also gives
``step_reward``. With ``slip > 0`` the chosen action is replaced by a uniformly random one
with that probability. :meth:`GridWorldEnv.transition_table` and
:meth:`GridWorldEnv.reward_table` give the exact MDP, e.g. for value iteration.

Importing this module registers ``prefrl/GridWorld-v0``.

Example:
    >>> import gymnasium as gym, prefrl.envs.gridworld
    >>> env = gym.make("prefrl/GridWorld-v0")
    >>> obs, _ = env.reset(seed=0)
    >>> int(obs), env.unwrapped.transition_table().shape
    (0, (25, 4, 25))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ENV_ID = "prefrl/GridWorld-v0"
DEFAULT_LAYOUT = (
    "S....",
    ".#.#.",
    "..L..",
    ".#.#.",
    "....G",
)
MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]])  # up, right, down, left
ACTION_NAMES = ("up", "right", "down", "left")
COLORS = {
    ".": (235, 235, 235),
    "#": (60, 60, 60),
    "S": (170, 200, 255),
    "G": (80, 200, 90),
    "L": (230, 90, 40),
}


class GridWorldEnv(gym.Env):
    """A deterministic (or slippery) grid with a goal and lava cells; see module docstring."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}  # noqa: RUF012  (gymnasium.Env declares it per instance)

    def __init__(
        self,
        layout: Sequence[str] = DEFAULT_LAYOUT,
        max_steps: int = 50,
        step_reward: float = 0.0,
        goal_reward: float = 1.0,
        lava_reward: float = -1.0,
        slip: float = 0.0,
        render_mode: str | None = None,
        cell_pixels: int = 12,
    ) -> None:
        rows = [str(r) for r in layout]
        if not rows or len({len(r) for r in rows}) != 1:
            raise ValueError(f"layout must be non-empty rows of equal length, got {rows}")
        bad = set("".join(rows)) - set(COLORS)
        if bad:
            raise ValueError(f"unknown layout characters {sorted(bad)}; use one of {''.join(COLORS)}")
        if "".join(rows).count("S") != 1 or "G" not in "".join(rows):
            raise ValueError("layout needs exactly one start 'S' and at least one goal 'G'")
        if not 0.0 <= slip <= 1.0:
            raise ValueError(f"slip must lie in [0, 1], got {slip}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.layout = rows
        self.height, self.width = len(rows), len(rows[0])
        self.cells = np.array([list(r) for r in rows])  # [H, W] characters
        self.max_steps, self.slip, self.render_mode, self.cell_pixels = (
            max_steps,
            slip,
            render_mode,
            cell_pixels,
        )
        self.step_reward, self.goal_reward, self.lava_reward = step_reward, goal_reward, lava_reward
        n = self.height * self.width
        self.observation_space = spaces.Discrete(n)
        self.action_space = spaces.Discrete(4)
        self.start_state = int(np.flatnonzero(self.cells.ravel() == "S")[0])
        self._next = self._next_states()  # [S, A]
        self._state = self.start_state
        self._t = 0

    # ------------------------------------------------------------ the MDP
    @property
    def n_states(self) -> int:
        return self.height * self.width

    def _next_states(self) -> np.ndarray:
        """``[S, A]`` deterministic successor of each cell under each action."""
        r, c = np.divmod(np.arange(self.n_states), self.width)
        nr = np.clip(r[:, None] + MOVES[None, :, 0], 0, self.height - 1)
        nc = np.clip(c[:, None] + MOVES[None, :, 1], 0, self.width - 1)
        wall = self.cells[nr, nc] == "#"
        nxt = np.where(wall, np.arange(self.n_states)[:, None], nr * self.width + nc)
        return np.where(self.terminal_states()[:, None], np.arange(self.n_states)[:, None], nxt)

    def terminal_states(self) -> np.ndarray:
        """``[S]`` bool: goal and lava cells (entering one ends the episode)."""
        return np.isin(self.cells.ravel(), ["G", "L"])

    def wall_states(self) -> np.ndarray:
        """``[S]`` bool: wall cells (never occupied)."""
        return self.cells.ravel() == "#"

    def transition_table(self) -> np.ndarray:
        """``[S, A, S']`` probabilities ``P(s' | s, a)`` (terminal states self-loop)."""
        n, a = self.n_states, 4
        det = np.zeros((n, a, n))
        det[np.arange(n)[:, None], np.arange(a)[None, :], self._next] = 1.0
        return (1.0 - self.slip) * det + self.slip * det.mean(1, keepdims=True)

    def reward_table(self) -> np.ndarray:
        """``[S, A, S']`` true reward ``R(s, a, s')``: the reward of entering ``s'`` plus the step reward."""
        cell = self.cells.ravel()
        enter = np.where(cell == "G", self.goal_reward, np.where(cell == "L", self.lava_reward, 0.0))
        r = np.broadcast_to(enter[None, None, :] + self.step_reward, (self.n_states, 4, self.n_states)).copy()
        r[self.terminal_states()] = 0.0  # nothing happens after the end
        return r

    # ---------------------------------------------------------------- gym
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self._state, self._t = self.start_state, 0
        return self._state, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a < 4:
            raise ValueError(f"action must be in 0..3 (up, right, down, left), got {action}")
        if self.slip > 0 and self.np_random.random() < self.slip:
            a = int(self.np_random.integers(4))
        s = self._state
        s2 = int(self._next[s, a])
        reward = self._reward(s2)
        self._state, self._t = s2, self._t + 1
        terminated = bool(self.terminal_states()[s2])
        truncated = not terminated and self._t >= self.max_steps
        return s2, reward, terminated, truncated, {}

    def _reward(self, s2: int) -> float:
        c = self.cells.ravel()[s2]
        enter = self.goal_reward if c == "G" else self.lava_reward if c == "L" else 0.0
        return float(enter + self.step_reward)

    def render(self) -> Any:
        if self.render_mode == "ansi":
            chars = self.cells.copy()
            chars.ravel()[self._state] = "A"
            return "\n".join("".join(r) for r in chars)
        return self.render_grid(agent=self._state)

    def render_grid(self, agent: int | None = None) -> np.ndarray:
        """``[H*p, W*p, 3]`` uint8 picture of the grid (agent as a dark square)."""
        p = self.cell_pixels
        img = np.zeros((self.height, self.width, 3), np.uint8)
        for ch, col in COLORS.items():
            img[self.cells == ch] = col
        img = np.repeat(np.repeat(img, p, 0), p, 1)
        if agent is not None:
            r, c = divmod(int(agent), self.width)
            q = max(1, p // 4)
            img[r * p + q : (r + 1) * p - q, c * p + q : (c + 1) * p - q] = (20, 20, 120)
        return img


def register() -> None:
    """Register ``prefrl/GridWorld-v0`` (idempotent; ``import prefrl`` already does)."""
    from prefrl.registration import register_envs

    register_envs()
