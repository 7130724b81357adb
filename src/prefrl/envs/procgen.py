"""Procgen games as Gymnasium environments: ``procgen/coinrun``, ``procgen/maze``, ...

Procgen (the ``procgen2`` package) exposes its 16 games through gym3's vectorised interface
only (``ProcgenGym3Env(num, env_name)``: ``act(actions)`` then ``observe() -> (reward, obs,
first)``). :class:`ProcgenEnv` runs one game (``num=1``) as a plain ``gymnasium.Env``, so every
prefrl command takes ``procgen/<game>`` like any id; ``import prefrl`` registers the ids without
importing Procgen (:mod:`prefrl.registration`).

Translating gym3's step: after ``act(a_t)``, ``observe()`` returns the reward of step ``t`` and
``first``; ``first`` True means step ``t`` ended the episode and the game has already started
the next level, whose first frame is the observation returned. The episode's own final frame is
never drawn, so :meth:`ProcgenEnv.step` returns the last frame of the episode again as the
final observation (the next level's frame would be another level) and keeps the new level's
first frame for :meth:`ProcgenEnv.reset`. An ending counts as truncation (a time limit) when
the game ran out its step limit (1,000 steps in most games) without completing the level, as
termination otherwise (CoinRun: the coin, +10, or a death, 0).

Observations are the game's ``uint8 [64, 64, 3]`` frames, actions ``Discrete(15)`` (Procgen's
button combinations). ``info`` holds ``level_seed`` (the level the step was played in) and
``prev_level_complete`` (on the step that ends an episode: whether the level was completed,
e.g. CoinRun's coin; ``False`` on other steps). ``reset(seed=s)`` starts Procgen afresh with
``rand_seed=s``, so the same seed plays the same levels; ``render()`` (``render_mode=
"rgb_array"``) returns the current frame scaled up ``render_scale`` times (nearest neighbour,
256x256 by default), so that a person labelling clips can see a coin.

Procgen is an optional extra: ``PREFRL_EXTRAS=procgen bash scripts/install.sh``. Its package
metadata pins NumPy < 2 (it runs under NumPy 2), so it is installed without its declared
dependencies (:data:`PROCGEN_PACKAGES`); without it a ``procgen/...`` id fails with one line
naming that command (:func:`require_procgen`).

Example:
    >>> import gymnasium as gym
    >>> import prefrl  # registers procgen/<game>
    >>> env = gym.make("procgen/coinrun", num_levels=200, distribution_mode="easy")
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype.name, env.action_space
    ((64, 64, 3), 'uint8', Discrete(15))
    >>> env.close()
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal, TypedDict

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from prefrl.registration import PROCGEN_GAMES, PROCGEN_PREFIX

PROCGEN_PACKAGES = "procgen2==0.10.7 gym3==0.3.3 gym==0.26.2 cffi==1.17.1 pycparser==2.23"
"""What ``PREFRL_EXTRAS=procgen`` installs with ``pip install --no-deps`` (scripts/install.sh
has the same list): procgen2 and gym3 pin NumPy < 2 and imageio-ffmpeg < 0.4, which would
downgrade the project's; procgen imports the old ``gym`` to register its own ids, and gym3
needs cffi."""
INSTALL_COMMAND = "PREFRL_EXTRAS=procgen bash scripts/install.sh"

DistributionMode = Literal["easy", "hard", "extreme", "memory", "exploration"]
DISTRIBUTION_MODES: dict[str, tuple[str, ...] | None] = {
    "easy": None,  # None: every game
    "hard": None,
    "extreme": ("chaser", "dodgeball", "leaper", "starpilot"),
    "memory": ("caveflyer", "dodgeball", "heist", "jumper", "maze", "miner"),
    "exploration": ("caveflyer", "climber", "coinrun", "heist", "jumper", "leaper", "maze", "ninja"),
}
"""The games each distribution mode exists for (Procgen's C code exits the process on others)."""
TIMEOUTS = {"bigfish": 6000, "bossfight": 4000, "leaper": 500, "maze": 500, "plunder": 4000}
"""Each game's step limit where it is not 1,000 (Procgen's ``Game::timeout``; jumper in memory
mode: 2,000)."""
N_ACTIONS = 15
FRAME_SHAPE = (64, 64, 3)
_FORCE_RESET = -1  # an action of -1 makes Procgen end the episode and start the next level


def is_procgen_id(env_id: str) -> bool:
    """Whether ``env_id`` names a Procgen game (``procgen/<game>``)."""
    return env_id.startswith(PROCGEN_PREFIX)


def missing_message(env_id: str) -> str:
    """The one line that says how to install Procgen."""
    return (
        f"{env_id!r} needs Procgen, which is not installed: {INSTALL_COMMAND} "
        f"(or pip install --no-deps {PROCGEN_PACKAGES}; its metadata pins NumPy < 2)"
    )


def require_procgen(env_id: str) -> Callable[..., object]:
    """Import Procgen's ``ProcgenGym3Env``; ``gym.error.DependencyNotInstalled`` with one line
    naming the install command when Procgen (or what it imports) is missing.

    Importing procgen imports the old ``gym``, which sets ``SDL_AUDIODRIVER`` and
    ``PYGAME_HIDE_SUPPORT_PROMPT`` for the whole process; both are put back as they were.
    """
    saved = {k: os.environ.get(k) for k in ("SDL_AUDIODRIVER", "PYGAME_HIDE_SUPPORT_PROMPT")}
    try:
        from procgen import ProcgenGym3Env  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise gym.error.DependencyNotInstalled(missing_message(env_id)) from None
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return ProcgenGym3Env


def check_procgen(env_id: str) -> None:
    """``ValueError`` with one line naming the install command when Procgen cannot be imported."""
    try:
        require_procgen(env_id)
    except gym.error.DependencyNotInstalled as e:
        raise ValueError(str(e)) from None


def game_timeout(game: str, distribution_mode: str) -> int:
    """Steps after which ``game`` ends an episode by itself (a time limit)."""
    if game == "jumper" and distribution_mode == "memory":
        return 2000
    return TIMEOUTS.get(game, 1000)


class ProcgenInfo(TypedDict):
    """What this wrapper reads of Procgen's per-step info."""

    level_seed: int
    prev_level_complete: int


class ProcgenEnv(gym.Env[np.ndarray, np.int64]):
    """One Procgen game as a Gymnasium environment (see the module docstring).

    Args:
        game: the Procgen game (``coinrun``, ``maze``, ...: :data:`prefrl.registration.PROCGEN_GAMES`).
        num_levels: how many distinct levels are played (0: unlimited).
        start_level: the first level seed of the ``num_levels`` played.
        distribution_mode: ``"easy"`` or ``"hard"`` (every game; hard is Procgen's default),
            ``"extreme"``, ``"memory"`` or ``"exploration"`` (some games, see
            :data:`DISTRIBUTION_MODES`; exploration plays one fixed level and takes neither
            ``num_levels`` nor ``start_level``).
        render_mode: ``"rgb_array"``: ``render()`` returns the current frame scaled up.
        render_scale: how many times ``render()`` scales the 64x64 frame up (nearest neighbour).
        use_backgrounds: draw the games' background images (Procgen's option).
        restrict_themes: one visual theme per game (Procgen's option).
        use_monochrome_assets: plain single-colour shapes instead of sprites (Procgen's option).
        center_agent: keep the agent centred, where the game scrolls (Procgen's option).
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 15}  # noqa: RUF012  (gymnasium.Env declares it per instance)

    def __init__(
        self,
        game: str = "coinrun",
        num_levels: int = 0,
        start_level: int = 0,
        distribution_mode: DistributionMode = "hard",
        render_mode: str | None = None,
        render_scale: int = 4,
        use_backgrounds: bool = True,
        restrict_themes: bool = False,
        use_monochrome_assets: bool = False,
        center_agent: bool = True,
    ) -> None:
        env_id = PROCGEN_PREFIX + game
        if game not in PROCGEN_GAMES:
            raise ValueError(f"unknown Procgen game {game!r}; choose from {list(PROCGEN_GAMES)}")
        if distribution_mode not in DISTRIBUTION_MODES:
            modes = list(DISTRIBUTION_MODES)
            raise ValueError(f"{env_id}: distribution_mode must be one of {modes}, got {distribution_mode!r}")
        games = DISTRIBUTION_MODES[distribution_mode]
        if games is not None and game not in games:
            raise ValueError(f"{env_id} has no {distribution_mode!r} mode; only {list(games)} have it")
        if isinstance(num_levels, bool) or not isinstance(num_levels, int) or not 0 <= num_levels < 2**31:
            raise ValueError(
                f"{env_id}: num_levels must be an integer >= 0 (0: unlimited), got {num_levels!r}"
            )
        if isinstance(start_level, bool) or not isinstance(start_level, int) or not 0 <= start_level < 2**31:
            raise ValueError(f"{env_id}: start_level must be an integer >= 0, got {start_level!r}")
        if distribution_mode == "exploration" and (num_levels or start_level):
            raise ValueError(
                f"{env_id}: exploration mode plays one fixed level; leave num_levels and start_level out"
            )
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"{env_id}: render_mode must be None or 'rgb_array', got {render_mode!r}")
        if isinstance(render_scale, bool) or not isinstance(render_scale, int) or render_scale < 1:
            raise ValueError(f"{env_id}: render_scale must be an integer >= 1, got {render_scale!r}")
        self._make = require_procgen(env_id)
        self.game, self.render_mode, self.render_scale = game, render_mode, render_scale
        self.timeout = game_timeout(game, distribution_mode)
        self._options: dict[str, Any] = {
            "env_name": game,
            "distribution_mode": distribution_mode,
            "use_backgrounds": bool(use_backgrounds),
            "restrict_themes": bool(restrict_themes),
            "use_monochrome_assets": bool(use_monochrome_assets),
            "center_agent": bool(center_agent),
            "num_threads": 0,  # one game: stepped in this thread, no pool
        }
        if distribution_mode != "exploration":
            self._options.update(num_levels=num_levels, start_level=start_level)
        self.observation_space = spaces.Box(0, 255, FRAME_SHAPE, dtype=np.uint8)
        self.action_space = spaces.Discrete(N_ACTIONS)
        self._venv: Any = None  # the gym3 ProcgenGym3Env, made on the first reset
        self._frame = np.zeros(FRAME_SHAPE, np.uint8)  # the frame last returned
        self._level_seed = 0  # the level being played
        self._next: tuple[np.ndarray, int] | None = (
            None  # the next level's first frame and seed, after an end
        )
        self._steps = 0

    def _observe(self) -> tuple[float, np.ndarray, bool, ProcgenInfo]:
        rew, obs, first = self._venv.observe()
        info = self._venv.get_info()[0]
        return float(rew[0]), np.asarray(obs["rgb"][0], dtype=np.uint8), bool(first[0]), info

    def reset(
        self, *, seed: int | None = None, options: dict[str, object] | None = None
    ) -> tuple[np.ndarray, dict[str, object]]:
        """Start an episode: with ``seed``, Procgen afresh with ``rand_seed=seed`` (mod 2**31);
        after an episode's end, the level the game already started; otherwise the next level
        (the current episode is abandoned)."""
        super().reset(seed=seed)
        if seed is not None or self._venv is None:
            rand_seed = seed % 2**31 if seed is not None else int(self.np_random.integers(2**31))
            if self._venv is not None:
                self._venv.close()
            self._venv = self._make(num=1, rand_seed=rand_seed, **self._options)
            _, frame, _, info = self._observe()
            level_seed = int(info["level_seed"])
        elif self._next is not None:
            frame, level_seed = self._next
        else:
            self._venv.act(np.array([_FORCE_RESET], dtype=np.int32))
            _, frame, _, info = self._observe()
            level_seed = int(info["level_seed"])
        self._frame, self._level_seed, self._next, self._steps = frame, level_seed, None, 0
        return frame, {"level_seed": level_seed, "prev_level_complete": False}

    def step(self, action: np.int64 | int) -> tuple[np.ndarray, float, bool, bool, dict[str, object]]:
        if self._venv is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        act = int(action)
        if not 0 <= act < N_ACTIONS:
            raise ValueError(
                f"{PROCGEN_PREFIX}{self.game}: action must be in [0, {N_ACTIONS}), got {action!r}"
            )
        if self._next is not None:  # stepping on past an episode's end: the next level begins
            self.reset()
        self._venv.act(np.array([act], dtype=np.int32))
        reward, frame, first, info = self._observe()  # the reward of this step, and whether it ended
        self._steps += 1
        if not first:
            self._frame = frame
            return frame, reward, False, False, {"level_seed": self._level_seed, "prev_level_complete": False}
        complete = bool(info["prev_level_complete"])
        truncated = not complete and self._steps >= self.timeout
        ended: dict[str, object] = {"level_seed": self._level_seed, "prev_level_complete": complete}
        self._next = (frame, int(info["level_seed"]))
        return self._frame.copy(), reward, not truncated, truncated, ended

    def render(self) -> np.ndarray | None:
        """The current frame, ``uint8 [64 * render_scale, 64 * render_scale, 3]``."""
        if self.render_mode is None:
            gym.logger.warn(f"{PROCGEN_PREFIX}{self.game}: render() needs render_mode='rgb_array'")
            return None
        k = self.render_scale
        return np.ascontiguousarray(self._frame.repeat(k, axis=0).repeat(k, axis=1))

    def close(self) -> None:
        if self._venv is not None:
            self._venv.close()
            self._venv = None
        super().close()
