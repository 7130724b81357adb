"""Atari (ALE) environments as prefrl trains on them.

:func:`make_atari_env` builds the usual DQN-style stack around an ``ALE/...`` id:
``gym.make(id, frameskip=1)`` (ALE v5 ids skip 4 frames by themselves; the skipping is
left to the preprocessing, which max-pools the last two frames), then
:class:`gymnasium.wrappers.AtariPreprocessing` (up to 30 no-op actions on reset, frame
skip 4, 84x84 grayscale), optionally :class:`HideScore`, then
:class:`gymnasium.wrappers.FrameStackObservation` of 4 frames. Observations are
``uint8 [4, 84, 84]`` (channels first), which SB3's ``CnnPolicy`` and prefrl's
``CNNReward`` both take as they are, so the agent, the recorded trajectories, the
reward model and a replay buffer all hold the same arrays.

``render()`` still returns the emulator's full-colour ``[210, 160, 3]`` frame (with the
score), so people labelling clips see the real game.

ale-py ships the ROMs; :func:`register_ale` registers its ids with Gymnasium.

Example:
    >>> env = make_atari_env("ALE/Pong-v5", hide_score=True)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype.name
    ((4, 84, 84), 'uint8')
    >>> bool((obs[:, :SCORE_ROWS] == 0).all())
    True
    >>> env.close()
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

AtariPreprocessingMode = Literal["auto", "on", "off"]

SCORE_ROWS = 10
"""Rows of an 84-row frame that :class:`HideScore` blanks: the score strip of most games
(Pong, Breakout, Space Invaders, ...) lies above row 10; scaled for other frame heights."""


def register_ale() -> bool:
    """Register the ``ALE/...`` ids with Gymnasium; ``False`` when ale-py is not installed."""
    try:
        import ale_py
    except ImportError:
        return False
    gym.register_envs(ale_py)
    return True


def is_atari_id(env_id: str) -> bool:
    """Whether ``env_id`` names an Arcade Learning Environment game (``ALE/...``)."""
    if env_id.startswith("ALE/"):
        return True
    spec = gym.registry.get(env_id)
    return spec is not None and "ale_py" in str(spec.entry_point)


def use_atari_preprocessing(env_id: str, mode: AtariPreprocessingMode) -> bool:
    """Resolve ``mode``: ``"auto"`` means on for ALE ids and off for everything else."""
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"atari_preprocessing must be 'auto', 'on' or 'off', got {mode!r}")
    if mode == "auto":
        return is_atari_id(env_id)
    if mode == "on" and not is_atari_id(env_id):
        raise ValueError(
            f"atari_preprocessing='on' needs an Atari (ALE/...) environment, got {env_id!r}; "
            "use 'auto' or 'off'"
        )
    return mode == "on"


def score_rows(height: int, rows: int = SCORE_ROWS) -> int:
    """Rows to blank in a frame ``height`` pixels high (``rows`` out of 84, rounded)."""
    return round(rows * height / 84)


class HideScore(gym.ObservationWrapper[np.ndarray, Any, np.ndarray]):
    """Blank (set to 0) the top rows of image observations, where Atari games draw the score.

    A reward model that can read the score learns to count points instead of judging
    behaviour (Christiano et al., 2017, blanked it too). Works on ``[H, W]`` grayscale and
    ``[H, W, C]`` colour frames; ``render()`` is untouched.

    Args:
        env: environment with ``uint8`` image observations ``[H, W]`` or ``[H, W, C]``.
        rows: rows blanked out of every 84 (default :data:`SCORE_ROWS`).

    Example:
        >>> env = HideScore(make_atari_env("ALE/Pong-v5", frame_stack=1))
        >>> obs, _ = env.reset(seed=0)
        >>> int(obs[..., :SCORE_ROWS, :].max())
        0
    """

    def __init__(self, env: gym.Env[np.ndarray, Any], rows: int = SCORE_ROWS) -> None:
        super().__init__(env)
        space = env.observation_space
        if not (isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) in (2, 3)):
            raise ValueError(
                f"HideScore needs uint8 image observations [H, W] or [H, W, C], got {space}; "
                "hide the score before frame stacking"
            )
        self.rows = score_rows(space.shape[0], rows)
        # the space stays [0, 255] everywhere: image policies (SB3's NatureCNN) and the reward
        # model's image check expect uniform pixel bounds, and 0 lies within them

    def observation(self, observation: np.ndarray) -> np.ndarray:
        obs = np.array(observation, copy=True)
        obs[: self.rows] = 0
        return obs


def make_atari_env(
    env_id: str,
    env_kwargs: dict[str, Any] | None = None,
    preprocessing: bool = True,
    hide_score: bool = False,
    frame_stack: int = 4,
    screen_size: int = 84,
    noop_max: int = 30,
) -> gym.Env:
    """An ALE game with the usual preprocessing (see the module docstring).

    Args:
        env_id: an ``ALE/...`` id (ale-py must be installed).
        env_kwargs: further ``gym.make`` arguments (e.g. ``render_mode``,
            ``repeat_action_probability``); ``frameskip`` defaults to 1 with preprocessing.
        preprocessing: apply AtariPreprocessing and frame stacking (``False``: raw
            ``[210, 160, 3]`` frames, only :class:`HideScore` if asked).
        hide_score: blank the score strip (:class:`HideScore`) in the observations.
        frame_stack: frames stacked along a leading axis (1: no stacking).
        screen_size: side of the square grayscale frames.
        noop_max: most no-op actions taken on reset.

    Returns:
        An env with ``uint8 [frame_stack, screen_size, screen_size]`` observations
        (``[screen_size, screen_size]`` for ``frame_stack=1``).
    """
    if not register_ale():
        raise ValueError(f"{env_id} needs ale-py (which ships the Atari ROMs): pip install ale-py")
    kwargs = dict(env_kwargs or {})
    if not preprocessing:
        env = gym.make(env_id, **kwargs)
        return HideScore(env) if hide_score else env
    kwargs.setdefault("frameskip", 1)
    env = gym.make(env_id, **kwargs)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=noop_max, frame_skip=4, screen_size=screen_size)
    if hide_score:
        env = HideScore(env)
    if frame_stack > 1:
        env = gym.wrappers.FrameStackObservation(env, frame_stack)
    return env
