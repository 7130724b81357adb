"""The stable-baselines3 loop: query schedules, the loop and its callbacks (the reward fitter it
drives lives in :mod:`prefrl.preference`)."""

from prefrl.training.schedules import SCHEDULES, allocate_queries

__all__ = ["SCHEDULES", "allocate_queries"]
