"""Varied-size random actions before the first query (``--loop.random-action-size varied``)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from prefrl.agents.random_actions import VariedSizeBox, varied_random_actions
from prefrl.training.loop import LoopConfig
from tests.training.test_loop import build


def test_each_env_keeps_its_size_for_a_period_and_stays_in_range() -> None:
    box = spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32), dtype=np.float32)
    varied = VariedSizeBox(box, num_envs=2, period=5, seed=0)
    acts = np.stack([varied.sample() for _ in range(400)]).reshape(40, 5, 2, 2)  # [period, step, env, dim]
    assert acts.dtype == np.float32 and np.all(acts >= box.low) and np.all(acts <= box.high)
    offsets = np.abs(acts - (box.high + box.low) / 2) / ((box.high - box.low) / 2)  # [40, 5, 2, 2] in [0, 1]
    size = offsets.max(axis=(1, 3))  # [40, 2]: lower bound of each period's size
    assert size.min() < 0.3 and size.max() > 0.9  # sizes differ from period to period
    # within a period an env's actions share one size: none beyond it, unlike the whole range
    sizes_drawn = varied.sizes
    assert sizes_drawn.shape == (2,) and np.all(offsets[-1, :, 0] <= sizes_drawn[0] + 1e-6)


def test_the_space_is_restored_and_unbounded_or_discrete_spaces_are_left_alone() -> None:
    class Owner:
        action_space: spaces.Space = spaces.Box(-1.0, 1.0, (3,))

    owner, box = Owner(), Owner.action_space
    with varied_random_actions(owner, 1, 10):
        assert isinstance(owner.action_space, VariedSizeBox)
    assert owner.action_space is box
    for space in (spaces.Discrete(3), spaces.Box(-np.inf, np.inf, (2,))):
        owner.action_space = space
        with varied_random_actions(owner, 1, 10):
            assert owner.action_space is space
    with pytest.raises(ValueError, match="bounded"):
        VariedSizeBox(spaces.Box(-np.inf, np.inf, (2,)), 1, 10)


def window_spread(acts: np.ndarray, length: int) -> float:
    """Std over ``length``-step windows of ``acts [T, A]`` of the windows' mean |a|."""
    rows = len(acts) // length * length
    return float(np.abs(acts[:rows]).reshape(-1, length, acts.shape[-1]).mean(axis=(1, 2)).std())


@pytest.mark.parametrize("size", ["full", "varied", "mixed"])
def test_the_loops_random_steps_act_with_varied_size(size: str) -> None:
    cfg = LoopConfig(total_steps=600, total_labels=2, iterations=1, initial_steps=400, initial_label_frac=1.0,
                     fragment_length=20, random_action_size=size)  # type: ignore[arg-type]  # fmt: skip
    loop = build(cfg)
    loop.run()
    assert isinstance(loop.agent.action_space, spaces.Box)
    assert not isinstance(loop.agent.action_space, VariedSizeBox)
    acts = loop.agent.replay_buffer.actions[:400, 0]  # [400, 1], scaled to [-1, 1]
    spread = window_spread(acts, 20)  # uniform: about 0.06; varied: about 0.15
    assert (spread > 0.1) == (size != "full"), spread
    assert np.abs(acts).max() > 0.8  # the whole range is still reached


def test_on_policy_random_steps_run_with_varied_size() -> None:
    cfg = LoopConfig(total_steps=512, total_labels=2, iterations=1, initial_steps=200, fragment_length=20,
                     random_action_size="varied")  # fmt: skip
    loop = build(cfg, algo="ppo")
    loop.run()
    venv = loop.agent.get_env()
    assert venv is not None and not isinstance(venv.action_space, VariedSizeBox)
    assert loop.env_steps == 512


def test_a_full_share_of_the_draws_act_at_full_size() -> None:
    box = spaces.Box(-1.0, 1.0, (1,))
    for share, lo, hi in ((0.0, 0.0, 0.05), (0.5, 0.4, 0.6), (1.0, 1.0, 1.0)):
        varied = VariedSizeBox(box, num_envs=1, period=1, seed=1, full_share=share)
        full = [(varied.sample(), varied.sizes[0] == 1.0)[1] for _ in range(400)]
        assert lo <= np.mean(full) <= hi, (share, np.mean(full))
    with pytest.raises(ValueError, match="full_share"):
        VariedSizeBox(box, 1, 1, full_share=1.5)
