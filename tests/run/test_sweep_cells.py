"""A sweep builds each cell's config with ``dataclasses.replace`` from the grid and its ``--set``
options (issue 46, item 4): no config is assigned to, the options of a section are checked
together, and what a cell runs is what the grid and the options say."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefrl.run.config import TrainConfig
from prefrl.run.options import apply_options, parse_options
from prefrl.run.sweep import Cell, cell_config, reference_env_kwargs


def test_a_learned_cell_gets_the_grid_then_the_options(tmp_path: Path) -> None:
    cell = Cell("learned", "CartPole-v1", "ppo", 5_000, 3, "mistake", 40)
    options = parse_options(["loop.initial_steps=200", "reward.hidden=[8,8]", "trainer.noise_filter=true",
                             "env.kwargs={\"sutton_barto_reward\": true}", "agent.algo=a2c"])  # fmt: skip
    cfg = cell_config(cell, options, tmp_path / "run", eval_episodes=2, threads=1)
    assert (cfg.env.id, cfg.seed, cfg.teacher) == ("CartPole-v1", 3, "mistake")
    assert cfg.run_dir == str(tmp_path / "run")
    assert (cfg.loop.total_steps, cfg.loop.total_labels, cfg.loop.initial_steps) == (5_000, 40, 200)
    assert cfg.agent.algo == "ppo"  # the grid's agent, resolved for the environment, wins
    assert cfg.reward.hidden == [8, 8] and cfg.trainer.noise_filter is True
    assert cfg.env.parsed_kwargs() == {"sutton_barto_reward": True}
    assert (cfg.force, cfg.progress, cfg.eval_episodes, cfg.threads) == (True, False, 2, 1)
    # without options, the cell's random steps are the sweep's: a tenth of a short run
    plain = cell_config(cell, {}, tmp_path / "run", eval_episodes=2, threads=1)
    assert plain.loop.initial_steps == 500 and plain.reward == TrainConfig().reward
    assert reference_env_kwargs(options) == {"sutton_barto_reward": True}  # the true-reward side


def test_options_make_a_new_config_and_leave_the_given_one_alone() -> None:
    given = TrainConfig()
    out = apply_options(given, {"loop.end_clip_frac": 0.5, "seed": 7, "trainer.weight_decay": 0.01})
    assert given == TrainConfig() and out is not given
    assert (out.loop.end_clip_frac, out.seed, out.trainer.weight_decay) == (0.5, 7, 0.01)
    bare = apply_options(given, {"seed": 7, "trainer.l2_band": [1.2, 1.4]}, bare="loop")
    assert bare.loop.seed == 7 and bare.seed == 0  # a bare name is an option of section `bare`
    assert bare.trainer.l2_band == (1.2, 1.4)  # a JSON list becomes the tuple the option holds
    # a section is replaced once with all its options: its checks see them together
    both = apply_options(given, {"loop.labels_per_round": 5, "loop.round_interval": 2})
    assert (both.loop.labels_per_round, both.loop.round_interval) == (5, 2)
    with pytest.raises(ValueError, match="round_interval >= 1"):
        apply_options(given, {"loop.labels_per_round": 5, "loop.round_interval": 0})


def test_a_finished_cell_of_an_older_default_is_not_skipped_silently(tmp_path: Path) -> None:
    """A rerun skips a finished learned cell only where it resolved its ``auto`` settings as a
    run of it would now: one that ran before a default changed stops the run with a message
    naming the setting, instead of passing for a run of today's default."""
    from prefrl.run.sweep import CellFiles, SweepConfig, run_cells

    cell = Cell("learned", "Pendulum-v1", "sac", 2_000, 0, "oracle", 10)
    result = tmp_path / "seed0-learned.json"
    files = lambda c: CellFiles(tmp_path / "run", result, tmp_path / "error.txt")  # noqa: E731
    sc = SweepConfig(env=["Pendulum-v1"], out=str(tmp_path))
    # Pendulum's random episodes never end: today the gated bonus is on there
    result.write_text('{"return": -1000.0, "exploration_bonus": 0.0, "l2_init": 0.01}')
    with pytest.raises(SystemExit, match=r"exploration_bonus: 0\.0 then, 3\.0 now"):
        run_cells(sc, [cell], {}, files)
    # a result of today's default (or one that recorded none of it) is skipped: nothing runs
    for recorded in ('{"return": -1000.0, "exploration_bonus": 3.0, "l2_init": 0.01}', '{"return": -1000.0}'):
        result.write_text(recorded)
        done = run_cells(sc, [cell], {}, files)
        assert (done.skipped, done.ran, done.failed) == (1, 0, {})
    # an option that names the setting is what a run of the cell resolves
    result.write_text('{"return": -1000.0, "exploration_bonus": 0.0}')
    assert run_cells(sc, [cell], {"loop.exploration_bonus": 0.0}, files).skipped == 1
