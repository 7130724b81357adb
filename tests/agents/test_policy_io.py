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
import torch
from stable_baselines3 import SAC

from prefrl.agents.policy_io import load_agent, save_agent
from prefrl.agents.sb3 import AgentConfig, make_agent, make_vec_env
from prefrl.cli.main import main
from prefrl.run import config as run_config

ROOT = Path(__file__).resolve().parents[2]


class _Payload:
    """Unpickling this creates ``marker`` (what an attacker's entry would do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
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
    assert spec is not None and spec.loader is not None
    fr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fr)
    with pytest.raises(SystemExit) as e:
        fr.main(["--env", "Pendulum-v1", "--policy", str(policy)])
    one_line_error(str(e.value), policy)
    spec = importlib.util.spec_from_file_location("label_efficiency", ROOT / "benchmarks/label_efficiency.py")
    assert spec is not None and spec.loader is not None
    le = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(le)
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
    assert isinstance(agent, SAC) == isinstance(loaded, SAC) == (algo == "sac")
    opt = agent.actor.optimizer if isinstance(agent, SAC) else agent.policy.optimizer
    new = loaded.actor.optimizer if isinstance(loaded, SAC) else loaded.policy.optimizer
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


# ---------------------------------------------------------- crafted files: one line, nothing allocated
def one_line(err: str, path: Path, *words: str) -> str:
    """The CLI's stderr is one line naming ``path`` (and ``words``), without a traceback."""
    lines = [x for x in err.strip().splitlines() if x]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path) in lines[0] and all(w in lines[0] for w in words), err
    return lines[0]


@pytest.fixture(scope="module")
def good_policies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Untrained policies in prefrl's format: SAC on Pendulum and PPO on CartPole (built, not trained)."""
    root = tmp_path_factory.mktemp("good")
    sac = make_agent(AgentConfig(algo="sac", net_arch=[8]), make_vec_env("Pendulum-v1"))
    ppo = make_agent(
        AgentConfig(algo="ppo", net_arch=[8], n_steps=64, batch_size=64), make_vec_env("CartPole-v1")
    )
    return {"sac": save_agent(sac, root / "sac.zip"), "ppo": save_agent(ppo, root / "ppo.zip")}


def craft(
    good: Path, out: Path, agent: dict[str, object] | None = None, meta_text: str | None = None
) -> Path:
    """``good`` with its metadata's agent config fields set from ``agent``, or all of its metadata
    replaced by ``meta_text``; the tensors are kept."""
    with zipfile.ZipFile(good) as z:
        meta, params = json.loads(z.read("prefrl_policy.json")), z.read("params.safetensors")
    meta["agent"].update(agent or {})
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("prefrl_policy.json", json.dumps(meta) if meta_text is None else meta_text)
        z.writestr("params.safetensors", params)
    return out


def rollouts(policy: Path, tmp_path: Path, algo: str = "sac") -> list[str]:
    env = "Pendulum-v1" if algo == "sac" else "CartPole-v1"
    return ["rollouts", "--out", str(tmp_path / "t.npz"), "--env.id", env, "--algo", algo,
            "--policy", str(policy), "--episodes", "1"]  # fmt: skip


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("algo", "agent", "meta_text", "words"),
    [
        ("sac", None, DEEP, ("JSON nested 100000 levels deep",)),  # was a RecursionError traceback
        ("sac", {"extra": DEEP}, None, ("field 'agent'", "JSON nested 100000 levels deep")),
        ("sac", {"buffer_size": 10**12}, None, ("buffer_size 1000000000000", "replay buffer")),  # 10.9 TiB
        ("ppo", {"n_steps": 10**12}, None, ("n_steps 1000000000000", "rollout buffer")),
        ("sac", {"net_arch": [10**12]}, None, ("net_arch", "1000000000000 units")),
        ("sac", {"net_arch": [8] * 100_000}, None, ("net_arch", "larger than all tensors")),
        ("ppo", {"extra": json.dumps({"policy_kwargs": {"net_arch": {"pi": [10**12], "vf": [8]}}})}, None,
         ("extra.policy_kwargs.net_arch.pi", "1000000000000 units")),
        ("sac", {"extra": json.dumps({"policy_kwargs": {"n_critics": 10**9}})}, None,
         ("extra.policy_kwargs.n_critics is 1000000000",)),
        ("sac", {"extra": json.dumps({"buffer_size": 10**12})}, None, ("buffer_size 1000000000000",)),
    ],
    ids=["deep-json", "deep-extra", "buffer", "n-steps", "width", "layers", "kwargs-width", "n-critics",
         "extra-buffer"],
)  # fmt: skip
def test_crafted_policy_files_get_one_line_before_anything_is_allocated(
    good_policies: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    algo: str,
    agent: dict[str, object] | None,
    meta_text: str | None,
    words: tuple[str, ...],
) -> None:
    policy = craft(good_policies[algo], tmp_path / "crafted.zip", agent, meta_text)
    assert main(rollouts(policy, tmp_path, algo)) == 2
    one_line(capsys.readouterr().err, policy, *words)  # the checks' own words: refused before allocating
    assert not (tmp_path / "t.npz").exists()


def test_a_crafted_policy_in_a_run_gets_one_line_from_evaluate(
    good_policies: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    conf = run_config.config_to_dict(run_config.TrainConfig())
    conf["env"]["id"], conf["agent"]["algo"] = "Pendulum-v1", "sac"
    (run / "config.json").write_text(json.dumps(conf))
    policy = craft(good_policies["sac"], run / "policy.zip", {"buffer_size": 10**12})
    assert main(["evaluate", str(run), "--episodes", "1"]) == 2
    one_line(capsys.readouterr().err, policy, "buffer_size 1000000000000")
    craft(good_policies["sac"], run / "policy.zip", meta_text=DEEP)
    assert main(["evaluate", str(run), "--episodes", "1"]) == 2
    one_line(capsys.readouterr().err, policy, "JSON nested 100000 levels deep")
    assert not (run / "evaluation.json").exists()


def test_crafted_state_paths_and_sizes_get_one_line(good_policies: dict[str, Path], tmp_path: Path) -> None:
    with zipfile.ZipFile(good_policies["sac"]) as z:
        meta = json.loads(z.read("prefrl_policy.json"))
    meta["values"]["/".join(["a"] * 100_000)] = 1  # a path 100,000 deep: no nested dict that deep is built
    policy = craft(good_policies["sac"], tmp_path / "deep_path.zip", meta_text=json.dumps(meta))
    with pytest.raises(ValueError, match=r"deep_path\.zip: state path .* nested more than 32 deep") as e:
        load_agent("sac", policy, make_vec_env("Pendulum-v1"))
    assert "\n" not in str(e.value)
    untouched = load_agent("auto", good_policies["sac"], make_vec_env("Pendulum-v1"))  # the checks pass it
    assert isinstance(untouched, SAC)
    layer = untouched.actor.latent_pi[0]
    assert isinstance(layer, torch.nn.Linear) and layer.out_features == 8


def test_rollouts_act_with_the_algorithm_the_policy_file_names_unless_told_another(
    good_policies: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.npz"
    args = ["rollouts", "--out", str(out), "--env.id", "CartPole-v1", "--policy", str(good_policies["ppo"])]
    assert main([*args, "--episodes", "1"]) == 0  # no --algo: the file's PPO
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["episodes"] == 1 and out.exists()
    assert main([*args, "--episodes", "1", "--algo", "dqn"]) == 2  # a PPO file is not a DQN policy
    assert "sb3 ppo policy, not sb3 dqn" in capsys.readouterr().err
