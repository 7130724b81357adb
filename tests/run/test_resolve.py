"""Issue 34, item 2: a run's config is resolved once, then never assigned to; what the run
saves in config.json is what its parts were built from."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

from prefrl.rewards.mlp import MLPReward
from prefrl.run.config import TrainConfig, config_from_dict, config_to_dict, parse_args
from prefrl.run.resolve import resolve
from prefrl.run.train import build_run
from prefrl.seeding import STREAMS, stream, stream_seed


def test_the_saved_config_is_the_one_the_run_was_built_from(tmp_path: Path) -> None:
    given = parse_args(["--run-dir", str(tmp_path / "r"), "--seed", "3", "--loop.total-steps", "600",
                        "--loop.initial-steps", "200", "--no-progress"])  # fmt: skip
    before = copy.deepcopy(given)
    r = build_run(given)
    try:
        assert given == before  # resolving made a new config: the given one is as it was
        saved = json.loads((tmp_path / "r" / "config.json").read_text())
        assert saved == json.loads(json.dumps(config_to_dict(r.config)))  # tuples are lists in JSON
        assert r.loop.config == r.config.loop and r.loop.trainer.config == r.config.trainer
        used = r.config
        assert used.agent.algo == "sac" and used.device != "auto" and used.agent.device == used.device
        assert used.reward.output in ("linear", "tanh") and used.reward.use_next_obs is True
        assert used.loop.active_selection is True and used.loop.seed == used.trainer.seed == 3
        assert used.run_id and used.run_dir == str(tmp_path / "r")
        assert isinstance(r.loop.net, MLPReward) and r.loop.net.use[2] is True
        assert r.loop.net.ensemble_size == used.reward.ensemble_size
        # a resume reads the same config back, and resolving it again changes nothing
        back = parse_args(["--resume", str(tmp_path / "r")])
        again = json.loads(json.dumps(config_to_dict(resolve(back))))
        assert again == {**saved, "resume": str(tmp_path / "r")}
    finally:
        r.logger.close()


def test_resolve_leaves_its_argument_alone() -> None:
    cfg = TrainConfig()
    out = resolve(cfg)
    assert cfg == TrainConfig() and out is not cfg
    assert cfg.loop.active_selection is None and out.loop.active_selection is True
    assert config_from_dict(config_to_dict(out)) == out


def test_named_streams_are_stable_and_distinct() -> None:
    seeds = {name: stream_seed(0, name) for name in STREAMS}
    assert len(set(seeds.values())) == len(STREAMS) and all(0 <= s < 2**31 for s in seeds.values())
    assert stream_seed(0, "teacher") == stream_seed(0, "teacher") != stream_seed(1, "teacher")
    a, b = stream(5, "heldout", 2).random(3), stream(5, "heldout", 3).random(3)
    assert not (a == b).all() and (a == stream(5, "heldout", 2).random(3)).all()
    assert dataclasses.is_dataclass(TrainConfig)


def test_a_config_file_from_before_the_random_steps_per_label_resumes_as_it_ran() -> None:
    """Runs written before ``initial_steps_per_label`` took 1,000 random steps whatever their label
    budget; a resume must keep that, or every later iteration would move."""
    data = config_to_dict(resolve(TrainConfig()))  # Pendulum: episodes meet only time limits
    data["loop"].update(total_steps=100_000, total_labels=50)
    assert config_from_dict(data).loop.random_steps == 5_000  # today: 100 per label
    del data["loop"]["initial_steps_per_label"]
    old = config_from_dict(data)
    assert old.loop.initial_steps_per_label == 0 and old.loop.random_steps == 1_000
    assert config_from_dict(data).trainer.l2_init == 0.01
    del data["trainer"]["l2_init"]
    assert config_from_dict(data).trainer.l2_init == 0.0  # nor an L2 on the reward fit
    assert data["loop"]["exploration_bonus"] == 3.0  # today: the gated bonus
    for name in ("exploration_bonus", "exploration_bonus_schedule", "exploration_bonus_gate"):
        del data["loop"][name]
    loop = config_from_dict(data).loop  # nor a bonus
    assert (loop.exploration_bonus, loop.exploration_bonus_schedule, loop.exploration_bonus_gate) == (
        0,
        "steps",
        0,
    )


def test_the_restart_on_images_is_resolved_into_config_json_and_older_files_keep_none() -> None:
    """``--loop.agent-reset-at`` unset: the run's config names the soft restart half-way for PPO on
    the moving dot's frames and no restart (0) on CartPole's states or for DQN on the frames; a
    config file from before that default (no restart, the layers "all", or no such option at all)
    resumes without one."""
    dot = dataclasses.replace(
        TrainConfig(), env=dataclasses.replace(TrainConfig().env, id="prefrl/MovingDot-v0")
    )
    ppo = dataclasses.replace(dot, agent=dataclasses.replace(dot.agent, algo="ppo"))
    loop = resolve(ppo).loop
    assert (loop.agent_reset_at, loop.agent_reset_layers) == (0.5, "soft") and loop.reset_iteration
    dqn = dataclasses.replace(dot, agent=dataclasses.replace(dot.agent, algo="dqn"))
    assert (resolve(dqn).loop.agent_reset_at, resolve(dqn).loop.agent_reset_layers) == (0.0, None)
    cart = dataclasses.replace(ppo, env=dataclasses.replace(ppo.env, id="CartPole-v1"))
    assert resolve(cart).loop.agent_reset_at == 0.0 and resolve(cart).loop.reset_iteration is None
    data = config_to_dict(resolve(ppo))
    assert config_from_dict(data).loop.agent_reset_at == 0.5  # a run made today resumes with its restart
    data["loop"].update(agent_reset_at=None, agent_reset_layers="all")  # as files said before
    old = config_from_dict(data).loop
    assert (old.agent_reset_at, old.agent_reset_layers, old.reset_iteration) == (0.0, None, None)
    del data["loop"]["agent_reset_at"], data["loop"]["agent_reset_layers"]  # before the option
    assert config_from_dict(data).loop.reset_iteration is None
