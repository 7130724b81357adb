"""Policy files load without unpickling anything: a poisoned stable-baselines3 ``policy.zip``,
planted wherever prefrl reads a policy, runs nothing and fails with one line naming the file;
prefrl's own format round-trips weights, optimiser state and counters."""

from __future__ import annotations

import base64
import json
import pickle
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from prefrl.agents.policy_io import load_agent, save_agent
from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env
from prefrl.cli.main import main
from prefrl.run import config as run_config

ROOT = Path(__file__).resolve().parents[2]


class _Payload:
    """Unpickling this creates ``marker`` (what an attacker's entry would do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (open, (str(self.marker), "w"))


def plant(path: Path, marker: Path) -> Path:
    """A stable-baselines3-style ``.zip`` whose pickled entries create ``marker`` when loaded."""
    evil = {
        ":type:": "<class 'abc.ABCMeta'>",
        ":serialized:": base64.b64encode(pickle.dumps(_Payload(marker))).decode(),
    }
    data = {name: evil for name in ("policy_class", "observation_space", "action_space", "lr_schedule")}
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data", json.dumps(data))
        z.writestr("policy.pth", pickle.dumps(_Payload(marker)))
    return path


def one_line_error(err: str, path: Path) -> None:
    lines = [x for x in err.strip().splitlines() if x]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path) in lines[0] and "pickled" in lines[0], err


def test_poisoned_zip_runs_nothing_in_load_agent(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = plant(tmp_path / "policy.zip", marker)
    with pytest.raises(ValueError, match=re.escape(str(path))) as e:
        load_agent("sac", path, make_vec_env("Pendulum-v1"))
    assert not marker.exists() and "\n" not in str(e.value)


def test_poisoned_zip_runs_nothing_in_evaluate_and_rollouts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "pwned"
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(run_config.config_to_dict(run_config.TrainConfig())))
    policy = plant(run / "policy.zip", marker)
    assert main(["evaluate", str(run), "--episodes", "1"]) == 2
    one_line_error(capsys.readouterr().err, policy)
    args = ["rollouts", "--out", str(tmp_path / "t.npz"), "--env.id", "Pendulum-v1", "--policy", str(policy)]
    assert main(args) == 2
    one_line_error(capsys.readouterr().err, policy)
    assert not marker.exists() and not (run / "evaluation.json").exists()


def test_poisoned_zip_runs_nothing_as_agent_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    policy = plant(tmp_path / "warm.zip", marker)
    args = ["train", "--run-dir", str(tmp_path / "run"), "--env.id", "Pendulum-v1",
            "--agent-path", str(policy), "--loop.total-steps", "200", "--no-progress"]  # fmt: skip
    assert main(args) == 2
    one_line_error(capsys.readouterr().err, policy)
    assert not marker.exists()


def test_poisoned_zip_runs_nothing_in_the_benchmarks(tmp_path: Path) -> None:
    import importlib.util

    marker = tmp_path / "pwned"
    policy = plant(tmp_path / "policy.zip", marker)
    spec = importlib.util.spec_from_file_location("first_reward", ROOT / "benchmarks/first_reward.py")
    fr = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(fr)  # type: ignore[union-attr]
    with pytest.raises(SystemExit) as e:
        fr.main(["--env", "Pendulum-v1", "--policy", str(policy)])
    one_line_error(str(e.value), policy)
    spec = importlib.util.spec_from_file_location("label_efficiency", ROOT / "benchmarks/label_efficiency.py")
    le = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(le)  # type: ignore[union-attr]
    out = tmp_path / "bench"
    plant(out / "learned-seed0" / "policy.zip", marker)
    (out / "seed0-learned.json").write_text(json.dumps({"return": 1.0, "eval": "sampled"}))
    with pytest.raises(ValueError, match="pickled"):
        le.reevaluate(out, "Pendulum-v1", "sac", None, 1)  # Pendulum: deterministic, so it reloads
    assert not marker.exists()


@pytest.mark.parametrize("algo", ["sac", "ppo"])
def test_saved_policy_round_trips_weights_optimisers_and_counters(tmp_path: Path, algo: str) -> None:
    env = "Pendulum-v1"
    agent = make_agent(AgentConfig(algo=algo, n_steps=64, batch_size=32, net_arch=[16]), make_vec_env(env),
                       seed=1, learning_starts=50)  # fmt: skip
    agent.learn(200)
    path = save_agent(agent, tmp_path / "policy.zip")
    assert set(zipfile.ZipFile(path).namelist()) == {"prefrl_policy.json", "params.safetensors"}
    loaded = load_agent("auto", path, make_vec_env(env))
    obs = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    np.testing.assert_array_equal(
        agent.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0]
    )
    assert (loaded.num_timesteps, loaded._n_updates) == (agent.num_timesteps, agent._n_updates) != (0, 0)
    opt = agent.policy.optimizer if algo == "ppo" else agent.actor.optimizer
    new = loaded.policy.optimizer if algo == "ppo" else loaded.actor.optimizer
    for i, st in opt.state_dict()["state"].items():
        np.testing.assert_array_equal(new.state_dict()["state"][i]["exp_avg"].numpy(), st["exp_avg"].numpy())
    with pytest.raises(ValueError, match=r"a sb3 \w+ policy, not sb3 td3"):
        load_agent("td3", path, make_vec_env(env))
    with pytest.raises(ValueError, match="cannot load"):
        load_agent("auto", path, make_vec_env("MountainCarContinuous-v0"))  # other spaces: one line


@pytest.mark.slow  # a short real run first (~20 s)
def test_poisoned_checkpoint_policy_runs_nothing_on_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    args = ["train", "--run-dir", str(run), "--env.id", "Pendulum-v1", "--loop.total-steps", "300",
            "--loop.iterations", "2", "--loop.initial-steps", "100", "--loop.total-labels", "4",
            "--loop.fragment-length", "10", "--agent.net-arch", "8", "--eval-episodes", "1", "--no-progress",
            "--final-agent-steps", "0"]  # fmt: skip
    assert main(args) == 0
    capsys.readouterr()
    ckpt = run / "checkpoints" / (run / "checkpoints" / "LATEST").read_text().strip()
    marker = tmp_path / "pwned"
    policy = plant(ckpt / "policy.zip", marker)
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    one_line_error(capsys.readouterr().err, policy)
    assert not marker.exists()


def test_saving_a_torch_policy_leaves_training_as_it_was(tmp_path: Path) -> None:
    """Writing a checkpoint must not change what the run does next: saving an SB3 (torch) agent
    draws nothing from NumPy's global generator (importing JAX does, so it stays unimported)."""
    import subprocess
    import sys

    code = f"""
import sys, numpy as np
from prefrl.agents.policy_io import save_agent
from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env
agent = make_agent(AgentConfig(algo="sac"), make_vec_env("Pendulum-v1", 1, seed=0), seed=0)
np.random.seed(3)
save_agent(agent, {str(tmp_path / "policy.zip")!r})
print(np.random.randint(1 << 30), "jax" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    np.random.seed(3)  # noqa: NPY002 - the global generator is what is checked
    assert out.split() == [str(np.random.randint(1 << 30)), "False"]  # noqa: NPY002
