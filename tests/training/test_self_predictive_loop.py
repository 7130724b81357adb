"""REED in ``prefrl train``: --reward.kind reed runs, logs the self-predictive loss, checkpoints
its encoder trainer and resumes with it; on images it trains the CNN reward's self-predictive heads."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from prefrl.cli.main import main
from prefrl.storage.checkpoint import load_tensor_state
from tests.narrow import array, off_policy, section

ARGS = (
    "--reward.kind reed --loop.total-steps 300 --loop.iterations 2 --loop.initial-steps 200 "
    "--loop.total-labels 8 --loop.fragment-length 20 --loop.initial-label-frac 0.5 --agent.net-arch 16 16 "
    "--agent.batch-size 32 --reward.hidden 16 16 --reward.reed-latent-dim 16 --trainer.epochs 2 "
    "--trainer.self-predictive-steps 10 --eval-episodes 1 --no-progress --no-page"
).split()


def _spr_calls(checkpoint: Path) -> int:
    state = load_tensor_state(checkpoint / "trainer.safetensors")
    return int(section(state, "trainer", "self_predictive")["calls"])


def test_reed_run_logs_the_self_predictive_loss_and_resumes_with_its_trainer(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main(["train", "--run-dir", str(run), *ARGS]) == 0  # Pendulum-v1, SAC: replay transitions too
    assert json.loads((run / "config.json").read_text())["reward"]["kind"] == "reed"
    with (run / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    first = rows[0]
    assert float(first["reward/spr_loss"]) < float(first["reward/spr_loss_before"])
    assert float(first["reward/spr_steps"]) == 10 * 5  # the first reward update: initial_epoch_multiplier
    assert float(rows[1]["reward/spr_transitions"]) > float(rows[1]["env_steps"]) - 200  # episodes + replay
    ckpts = run / "checkpoints"
    assert _spr_calls(ckpts / "iter_000002") == 2
    # go back one checkpoint and resume: the encoder trainer's state comes back with it
    (ckpts / "LATEST").write_text("iter_000001")
    assert _spr_calls(ckpts / "iter_000001") == 1
    (run / "report.json").unlink()
    assert main(["train", "--resume", str(run)]) == 0
    assert json.loads((run / "report.json").read_text())["resumed"]
    latest = ckpts / (ckpts / "LATEST").read_text().strip()
    assert latest.name == "iter_000002" and _spr_calls(latest) == 2  # 1 restored + 1 after the resume


def test_reed_options_are_documented_and_images_train_the_cnns_self_predictive_heads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    options = "--reward.reed-latent-dim --trainer.no-self-predictive --trainer.self-predictive-steps "
    options += "--trainer.self-predictive-batch-size --trainer.self-predictive-lr"
    for opt in options.split():
        assert opt in text, opt
    run = tmp_path / "r"
    image = "--env.id prefrl/MovingDot-v0 --reward.kind reed --loop.total-steps 256 --loop.iterations 2 "
    image += "--loop.initial-steps 128 --loop.total-labels 6 --loop.fragment-length 10 --agent.n-steps 64 "
    image += "--agent.batch-size 32 --trainer.epochs 2 --trainer.self-predictive-steps 5 "
    image += "--trainer.self-predictive-batch-size 32 --eval-episodes 1 --no-progress --no-page"
    assert main(["train", "--run-dir", str(run), *image.split()]) == 0  # PPO: the iteration's episodes
    with (run / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [float(r["reward/spr_steps"]) for r in rows] == [25.0, 5.0]
    assert float(rows[0]["reward/spr_loss"]) < float(rows[0]["reward/spr_loss_before"])
    assert json.loads((run / "config.json").read_text())["reward"]["kind"] == "reed"


def test_replay_sample_draws_distinct_stored_transitions_across_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    from prefrl.agents.sb3 import AgentConfig, buffer_transitions, make_agent, make_vec_env
    from prefrl.training import representation

    agent = off_policy(
        make_agent(
            AgentConfig(algo="sac", net_arch=[8]), make_vec_env("Pendulum-v1", n_envs=2), learning_starts=500
        )
    )
    agent.learn(120)  # 60 rows of 2 environments, no gradient step
    monkeypatch.setattr(representation, "CHUNK_ROWS", 16)  # several chunks of 8 rows
    sample = representation.replay_sample(agent, 50, np.random.default_rng(0))
    assert sample is not None
    obs, acts, nxt = array(sample[0]), sample[1], array(sample[2])
    all_obs, all_acts, all_nxt, _ = buffer_transitions(agent, slice(0, 60))
    all_obs, all_nxt = array(all_obs), array(all_nxt)
    assert obs.shape == (50, 3) and acts.shape == (50, 1) and nxt.shape == (50, 3)
    rows = [int(np.flatnonzero((all_obs == o).all(1) & (all_acts == a).all(1))[0]) for o, a in zip(obs, acts)]
    assert len(set(rows)) == 50 and rows == sorted(rows)  # distinct, in buffer order
    np.testing.assert_array_equal(all_nxt[rows], nxt)
    assert np.abs(acts).max() > 1.0  # the environment's action scale ([-2, 2]), not the buffer's [-1, 1]
    assert representation.replay_sample(agent, 0, np.random.default_rng(0)) is None
