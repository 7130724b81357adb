"""Shared fixtures: gridworld rollouts and reward nets built from the core engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from prefrl.agents.rollout import collect_episodes
from prefrl.data import TrajectoryBatch
from prefrl.envs.gridworld import GridWorldEnv


def _png_has_content(path: Path, min_colors: int = 10) -> np.ndarray:
    """The file is a readable PNG with a real picture on it (not one flat colour)."""
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = imread(str(path))
    assert img.ndim == 3 and img.shape[0] > 50 and img.shape[1] > 50
    colors = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colors) >= min_colors, f"{path.name} looks empty ({len(colors)} colours)"
    return img


@pytest.fixture
def grid_env() -> GridWorldEnv:
    return GridWorldEnv()


@pytest.fixture
def grid_batch(grid_env: GridWorldEnv) -> TrajectoryBatch:
    return collect_episodes(grid_env, n_episodes=30, seed=0)


@pytest.fixture
def png_ok() -> Callable[..., np.ndarray]:
    """``png_ok(path, min_colors=10)`` asserts a real, non-empty PNG and returns its pixels."""
    return _png_has_content
