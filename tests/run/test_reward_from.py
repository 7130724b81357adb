"""``prefrl train --reward-from RUN``: a finished run's reward, frozen, trains a new agent, saved in
prefrl's own policy format (``prefrl evaluate``, ``prefrl rollouts`` and ``prefrl report`` read it),
on ``--threads`` threads; and a run keeps, with its reward, the normalisation its agent saw at the end."""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from pathlib import Path

import pytest
import torch

from prefrl.agents.policy_io import read_policy
from prefrl.cli.main import main
from prefrl.rewards.io import load_reward_net, read_reward_normalizer
from prefrl.run.config import parse_args
from prefrl.run.train import train
from prefrl.storage.checkpoint import CheckpointDir
from tests.narrow import present, section

TINY = ["--agent.algo", "ppo", "--agent.n-steps", "64", "--agent.batch-size", "32", "--eval-episodes", "1",
        "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("src") / "run"
    args = ["train", "--env.id", "CartPole-v1", "--run-dir", str(run), "--loop.total-steps", "400",
            "--loop.initial-steps", "100", "--loop.iterations", "2", "--loop.total-labels", "6",
            "--no-page", *TINY]  # fmt: skip
    assert main(args) == 0
    return run


def test_a_run_saves_the_final_normalisation_with_its_reward(source: Path) -> None:
    ckpt = CheckpointDir(source)
    final = section(ckpt.read_state(present(ckpt.latest())), "normalizer")
    saved = read_reward_normalizer(source / "reward.safetensors")
    assert saved == {"normalize": True, **final} and saved["count"] > 0


@pytest.fixture(scope="module")
def agent_run(source: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A ``--reward-from`` run of ``source`` through the CLI, its page included: (run, stdout, stderr)."""
    out, stdout, stderr = tmp_path_factory.mktemp("agent") / "agent", io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["train", "--reward-from", str(source), "--run-dir", str(out),
                     "--loop.total-steps", "256", "--eval-interval", "128", *TINY])  # fmt: skip
    assert code == 0, stderr.getvalue()
    return out, stdout.getvalue(), stderr.getvalue()


def test_reward_from_trains_only_an_agent_on_the_frozen_reward(
    source: Path, agent_run: tuple[Path, str, str]
) -> None:
    out, text, _ = agent_run
    assert f"reward from                 : {source}" in text and "labels used" not in text
    report = json.loads((out / "report.json").read_text())
    assert report["env"] == "CartPole-v1"  # the source run's environment, not --env.id's default
    assert report["env_steps"] >= 256 and 0 < report["true_return"] <= 500
    config = json.loads((out / "config.json").read_text())
    assert config["reward_from"] == str(source) and config["env"]["id"] == "CartPole-v1"
    # the new run holds the reward it trained on, with the source's statistics, unchanged (frozen)
    assert read_reward_normalizer(out / "reward.safetensors") == read_reward_normalizer(
        source / "reward.safetensors"
    )
    a, b = load_reward_net(out / "reward.safetensors"), load_reward_net(source / "reward.safetensors")
    assert all((x == y).all() for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not (out / "preferences.npz").exists()


def test_reward_from_evaluates_every_eval_interval_steps(agent_run: tuple[Path, str, str]) -> None:
    out, text, _ = agent_run
    lines = (out / "evaluations.csv").read_text().splitlines()
    assert lines[0] == "step,true_return"
    steps = [int(line.split(",")[0]) for line in lines[1:]]
    returns = [float(line.split(",")[1]) for line in lines[1:]]
    assert steps[0] >= 128 and steps == sorted(steps) and len(steps) >= 2 and steps[-1] >= 256
    assert all(0 < r <= 500 for r in returns)  # CartPole: every episode earns 1 to 500
    report = json.loads((out / "report.json").read_text())
    assert report["evaluations"] == [[s, r] for s, r in zip(steps, returns)]
    assert steps[-1] == report["env_steps"]  # the final policy closes the series
    assert "mean of last" in text


def test_reward_from_a_run_without_a_reward_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "early").mkdir()
    (tmp_path / "early" / "config.json").write_text("{}")
    assert main(["train", "--reward-from", str(tmp_path / "early"), "--run-dir", str(tmp_path / "x")]) == 2
    assert "without a reward.safetensors" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_reward_from_saves_prefrls_policy_format_that_every_reader_takes(
    agent_run: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _, err = agent_run
    policy = out / "policy.zip"
    # prefrl's format (safetensors + JSON), not stable-baselines3's pickled zip (data, policy.pth, ...)
    assert set(zipfile.ZipFile(policy).namelist()) == {"prefrl_policy.json", "params.safetensors"}
    meta, state = read_policy(policy)
    report = json.loads((out / "report.json").read_text())
    assert (
        meta["algo"] == "ppo"
        and section(meta, "counters")["num_timesteps"] == report["env_steps"]
        and state["torch"]
    )
    # prefrl train wrote the run's page, which loads the policy to film it
    assert "warning" not in err and report["files"]["page"] == str(out / "report" / "index.html")
    assert "<video src='policy.webm'" in (out / "report" / "index.html").read_text()
    assert main(["evaluate", str(out), "--episodes", "2"]) == 0
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["env"] == "CartPole-v1" and evaluation["true_return"] > 0
    page = tmp_path / "page"
    assert (
        main(["report", str(out), "--out", str(page), "--pairs", "0", "--episodes", "1", "--clips", "20"])
        == 0
    )
    assert (
        "<video src='policy.webm'" in (page / "index.html").read_text()
        and (page / "policy.webm").stat().st_size
    )
    args = ["rollouts", "--out", str(tmp_path / "t.npz"), "--env.id", "CartPole-v1", "--algo", "ppo",
            "--policy", str(policy), "--episodes", "1"]  # fmt: skip
    assert main(args) == 0 and (tmp_path / "t.npz").exists()
    assert "error" not in capsys.readouterr().err


def test_reward_from_runs_on_threads(source: Path, tmp_path: Path) -> None:
    """Like prefrl train, from Python too (the CLI sets threads for the process anyway)."""
    assert torch.get_num_threads() == 1  # tests/conftest.py
    cfg = parse_args(["--reward-from", str(source), "--run-dir", str(tmp_path / "agent"),
                      "--loop.total-steps", "64", "--threads", "2", *TINY])  # fmt: skip
    report = train(cfg)
    assert report["env_steps"] >= 64 and torch.get_num_threads() == 2


def test_reward_from_warm_starts_from_agent_path(agent_run: tuple[Path, str, str], tmp_path: Path) -> None:
    """``--agent-path`` fine-tunes that policy on the frozen reward instead of fresh weights."""
    source_policy = agent_run[0] / "policy.zip"

    def policy_tensors(path: Path) -> dict[str, torch.Tensor]:  # the policy network's state dict
        return section(read_policy(path)[1], "torch", "policy")

    start = policy_tensors(source_policy)
    args = ["--reward-from", str(agent_run[0]), "--loop.total-steps", "64", *TINY]
    train(parse_args([*args, "--run-dir", str(tmp_path / "warm"), "--agent-path", str(source_policy)]))
    train(parse_args([*args, "--run-dir", str(tmp_path / "fresh")]))
    warm = policy_tensors(tmp_path / "warm" / "policy.zip")
    fresh = policy_tensors(tmp_path / "fresh" / "policy.zip")
    weights = [k for k in start if k.endswith("weight")]

    def moved(new: dict[str, torch.Tensor]) -> float:  # how far a run's weights lie from those it was given
        return sum(float((new[k] - start[k]).abs().sum()) for k in weights)

    # one PPO update of 64 steps moves a policy some way; fresh weights lie further (without the
    # warm start both runs are the same run: equal distances)
    assert weights and moved(warm) < 0.5 * moved(fresh)


def test_reward_from_a_checkpoint_takes_the_reward_as_the_run_had_it_then(
    source: Path, tmp_path: Path
) -> None:
    """``--reward-from RUN/checkpoints/iter_*``: that checkpoint's reward, normalised with that
    checkpoint's statistics, in the run's environment (no --env.id given)."""
    ckpt = CheckpointDir(source)
    first = sorted(ckpt.root.glob("iter_*"))[0]
    stats = section(ckpt.read_state(first), "normalizer")
    assert stats != section(ckpt.read_state(present(ckpt.latest())), "normalizer") or first == ckpt.latest()
    report = train(parse_args(["--reward-from", str(first), "--run-dir", str(tmp_path / "then"),
                               "--loop.total-steps", "64", *TINY]))  # fmt: skip
    assert report["env"] == "CartPole-v1"
    assert read_reward_normalizer(tmp_path / "then" / "reward.safetensors") == {"normalize": True, **stats}
    a, b = (
        load_reward_net(tmp_path / "then" / "reward.safetensors"),
        load_reward_net(first / "reward.safetensors"),
    )
    assert all((x == y).all() for x, y in zip(a.state_dict().values(), b.state_dict().values()))
