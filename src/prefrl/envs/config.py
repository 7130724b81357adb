"""The environment section of a run's config (``--env.*``): a Gymnasium id, ``gym.make``'s keyword
arguments and prefrl's wrapper options, as :func:`prefrl.agents.sb3.make_env` takes them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from prefrl.envs.atari import AtariPreprocessingMode


@dataclass(frozen=True)
class EnvConfig:
    """The environment."""

    id: str = "Pendulum-v1"
    """Any registered Gymnasium environment id."""
    kwargs: str = "{}"
    """Keyword arguments of gym.make as a JSON object, e.g. '{"g": 9.81}'."""
    atari_preprocessing: AtariPreprocessingMode = "auto"
    """Atari (ALE/...) games: 84x84 grayscale frames, frame skip 4, up to 30 no-ops on reset, 4 frames
    stacked into uint8 [4, 84, 84] observations. auto: on for ALE ids; off: the raw [210, 160, 3] frames."""
    hide_score: bool = False
    """Atari games: blank the score strip at the top of the observed frames, so the reward model (and,
    as they share one observation, the agent) cannot read the score; clips shown to people keep it."""

    def parsed_kwargs(self) -> dict[str, Any]:
        """gym.make's keyword arguments plus the wrapper options that make_env consumes."""
        try:
            kw = json.loads(self.kwargs)
        except json.JSONDecodeError as e:
            raise ValueError(f"env kwargs must be a JSON object, got {self.kwargs!r} ({e})") from e
        if not isinstance(kw, dict):
            raise ValueError(f"env kwargs must be a JSON object, got {self.kwargs!r}")
        if self.atari_preprocessing != "auto":
            kw["atari_preprocessing"] = self.atari_preprocessing
        if self.hide_score:
            kw["hide_score"] = True
        return kw
