"""Procgen games (``procgen/<game>``) as Gymnasium environments, on the real Procgen.

The environment tests need the optional Procgen install (``PREFRL_EXTRAS=procgen bash
scripts/install.sh``, which .ci/run does) and skip without it; the tests of what happens
without Procgen block its import in a subprocess and run everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import prefrl  # noqa: F401  (registers the ids)
from prefrl.agents.sb3 import check_env_id, make_env
from prefrl.envs.procgen import INSTALL_COMMAND, PROCGEN_PACKAGES, ProcgenEnv
from prefrl.registration import PROCGEN_GAMES

REPO = Path(__file__).resolve().parents[2]
COINRUN: dict[str, Any] = {"num_levels": 200, "distribution_mode": "easy"}

try:
    import procgen  # noqa: F401

    HAVE_PROCGEN = True
except ImportError:
    HAVE_PROCGEN = False
needs_procgen = pytest.mark.skipif(not HAVE_PROCGEN, reason=f"Procgen is not installed ({INSTALL_COMMAND})")

BLOCK_PROCGEN = """
import sys
class NoProcgen:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("procgen", "gym3"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoProcgen())
"""


def run_without_procgen(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_PROCGEN + code], capture_output=True, text=True, timeout=300, cwd=REPO
    )


def test_import_prefrl_registers_every_game_without_importing_procgen() -> None:
    code = (
        "import sys, gymnasium as gym, prefrl\n"
        f"assert all('procgen/' + g in gym.registry for g in {list(PROCGEN_GAMES)!r})\n"
        "assert not {'procgen', 'gym3', 'gym', 'torch'} & set(sys.modules), sorted(sys.modules)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    assert len(PROCGEN_GAMES) == 16 and "coinrun" in PROCGEN_GAMES


def test_without_procgen_train_and_make_env_say_the_install_command_in_one_line() -> None:
    out = run_without_procgen(
        "from prefrl.cli.main import main\n"
        "sys.exit(main(['train', '--env.id', 'procgen/coinrun', '--no-page', '--run-dir', 'runs/never']))\n"
    )
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert "'procgen/coinrun' needs Procgen, which is not installed" in lines[0]
    assert INSTALL_COMMAND in lines[0] and PROCGEN_PACKAGES in lines[0]
    assert not (REPO / "runs" / "never").exists()
    out = run_without_procgen(
        "import gymnasium as gym, prefrl\n"
        "from prefrl.agents.sb3 import make_env\n"
        "try:\n    make_env('procgen/maze')\nexcept ValueError as e:\n    print('make_env:', e)\n"
        "try:\n    gym.make('procgen/maze')\n"
        "except gym.error.DependencyNotInstalled as e:\n    print('gym.make:', e)\n"
    )
    assert out.returncode == 0, out.stderr
    said = out.stdout.strip().splitlines()
    assert [s.split(":")[0] for s in said] == ["make_env", "gym.make"], out.stdout
    assert all(INSTALL_COMMAND in s and "'procgen/maze' needs Procgen" in s for s in said)


def test_install_script_installs_the_same_packages_without_their_dependencies(tmp_path: Path) -> None:
    script = (REPO / "scripts" / "install.sh").read_text()
    assert f'procgen_packages="{PROCGEN_PACKAGES}"' in script
    # The script for real, against a venv whose python records its calls and has no procgen
    # until pip installs it.
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(
        "#!/bin/sh\n"
        'echo "$*" >> "$(dirname "$0")/../calls.log"\n'
        'case "$*" in *"import procgen"*) test -f "$(dirname "$0")/../has-procgen" ;; '
        '*"--no-deps procgen2"*) touch "$(dirname "$0")/../has-procgen" ;; esac\n'
    )
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".prefrl-installed").write_text("dev\n")  # newer than pyproject.toml: no reinstall

    def install(extras: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PREFRL_VENV": str(venv), "PREFRL_EXTRAS": extras, "PREFRL_INSTALL": "dev"}
        return subprocess.run(
            ["bash", str(REPO / "scripts" / "install.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def calls() -> list[str]:
        log = venv / "calls.log"
        lines = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return lines

    assert install("").returncode == 0 and calls() == []  # no extra: nothing to do
    assert install("procgen").returncode == 0
    assert calls() == ["-c import procgen", f"-m pip install -q --no-deps {PROCGEN_PACKAGES}"]
    assert install("procgen").returncode == 0 and calls() == ["-c import procgen"]  # installed once
    out = install("procgen,atari")
    assert out.returncode == 2 and calls() == []
    assert out.stderr.strip() == "scripts/install.sh: PREFRL_EXTRAS may name 'procgen', got 'atari'"
    assert "PREFRL_EXTRAS=procgen bash scripts/install.sh" in (REPO / ".ci" / "run").read_text()


@needs_procgen
def test_coinrun_passes_gymnasiums_checker_with_uint8_frames_and_15_actions() -> None:
    env = gym.make("procgen/coinrun", render_mode="rgb_array", **COINRUN)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []
    assert env.observation_space == gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)
    assert env.action_space == gym.spaces.Discrete(15)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.uint8 and obs.shape == (64, 64, 3) and env.observation_space.contains(obs)
    assert 0 <= info["level_seed"] < 200 and info["prev_level_complete"] is False
    env.close()


@needs_procgen
def test_a_seed_gives_the_same_levels_and_play_and_another_seed_other_levels() -> None:
    def play(seed: int) -> tuple[list[int], np.ndarray, list[float]]:
        env = gym.make("procgen/coinrun", **COINRUN)
        obs, info = env.reset(seed=seed)
        seeds, frames, rews = [info["level_seed"]], [obs], []
        rng = np.random.default_rng(1)
        for _ in range(3000):
            obs, rew, terminated, truncated, info = env.step(int(rng.integers(15)))
            frames.append(obs)
            rews.append(float(rew))
            if terminated or truncated:
                obs, info = env.reset()
                seeds.append(info["level_seed"])
        env.close()
        return seeds, np.stack(frames), rews

    a, b, c = play(7), play(7), play(8)
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and a[2] == b[2]
    assert len(a[0]) >= 3 and a[0] != c[0]
    env = make_env("procgen/coinrun", COINRUN)  # reset(seed) twice on one env: the same first level
    first, _ = env.reset(seed=7)
    env.step(3)
    again, _ = env.reset(seed=7)
    assert np.array_equal(first, again) and np.array_equal(first, a[1][0])


@needs_procgen
def test_steps_match_gym3_with_reward_and_end_on_the_step_that_earned_them() -> None:
    """The adapter against Procgen's own gym3 interface, same seed and actions: the reward and the
    end that gym3 reports with the observation after an action belong to that action's step."""
    from procgen import ProcgenGym3Env

    raw = ProcgenGym3Env(num=1, env_name="coinrun", rand_seed=5, num_threads=0, **COINRUN)
    env = ProcgenEnv("coinrun", num_levels=200, distribution_mode="easy")
    obs, _ = env.reset(seed=5)
    _, raw_obs, _ = raw.observe()
    assert np.array_equal(obs, raw_obs["rgb"][0])
    rng = np.random.default_rng(0)
    returns: list[float] = []
    outcomes: set[tuple[float, bool, bool]] = set()
    ret, prev, steps = 0.0, obs, 0
    while len(returns) < 12:
        a = int(rng.integers(15))
        obs, rew, terminated, truncated, info = env.step(a)
        raw.act(np.array([a], dtype=np.int32))
        raw_rew, raw_obs, raw_first = raw.observe()
        assert rew == float(raw_rew[0]) and (terminated or truncated) == bool(raw_first[0])
        ret, steps = ret + rew, steps + 1
        if not (terminated or truncated):
            assert rew == 0.0 and np.array_equal(obs, raw_obs["rgb"][0])
            prev = obs
            continue
        # the final frame is the episode's last one drawn, not the next level's first
        assert np.array_equal(obs, prev) and not np.array_equal(obs, raw_obs["rgb"][0])
        assert rew == ret and ret in (0.0, 10.0) and terminated != truncated
        assert info["prev_level_complete"] == (ret == 10.0) == (rew == 10.0)
        assert not truncated or (steps == 1000 and ret == 0.0)  # CoinRun's time limit
        outcomes.add((ret, terminated, truncated))
        returns.append(ret)
        obs, _ = env.reset()  # the level the game already started
        assert np.array_equal(obs, raw_obs["rgb"][0])
        ret, prev, steps = 0.0, obs, 0
    assert outcomes == {(10.0, True, False), (0.0, True, False), (0.0, False, True)}  # coin, death, time
    env.close()
    raw.close()


@needs_procgen
def test_an_early_reset_starts_a_new_level_and_its_time_limit_counts_from_there() -> None:
    env = make_env("procgen/maze", {"distribution_mode": "easy"})
    _, info = env.reset(seed=0)
    first_level = info["level_seed"]
    for _ in range(100):
        env.step(4)  # no-op: the mouse never finds the cheese
    _, info = env.reset()
    assert info["level_seed"] != first_level
    for t in range(1, 501):  # noqa: B007  (t is the step that ended the episode)
        _, rew, terminated, truncated, info = env.step(4)
        if terminated or truncated:
            break
    assert (t, rew, terminated, truncated) == (500, 0.0, False, True)  # maze's 500-step limit
    env.close()


@needs_procgen
def test_render_scales_the_frame_up_for_people_and_make_env_renders_it() -> None:
    env = make_env("procgen/coinrun", COINRUN, render=True)
    obs, _ = env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape == (256, 256, 3) and frame.dtype == np.uint8
    assert np.array_equal(frame, obs.repeat(4, axis=0).repeat(4, axis=1))  # nearest neighbour, 4x
    obs, *_ = env.step(7)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and np.array_equal(frame[::4, ::4], obs)
    env.close()
    small = gym.make("procgen/maze", render_mode="rgb_array", render_scale=2)
    obs, _ = small.reset(seed=0)
    frame = small.render()
    assert isinstance(frame, np.ndarray) and frame.shape == (128, 128, 3)
    small.close()


@needs_procgen
def test_bad_options_are_named() -> None:
    cases: dict[str, tuple[str, dict[str, Any]]] = {
        "procgen/coinrun has no 'extreme' mode": ("procgen/coinrun", {"distribution_mode": "extreme"}),
        "distribution_mode must be one of": ("procgen/coinrun", {"distribution_mode": "eazy"}),
        "num_levels must be an integer >= 0": ("procgen/coinrun", {"num_levels": -1}),
        "exploration mode plays one fixed level": (
            "procgen/maze",
            {"distribution_mode": "exploration", "num_levels": 5},
        ),
        "render_scale must be an integer >= 1": ("procgen/maze", {"render_scale": 0}),
    }
    for message, (env_id, kwargs) in cases.items():
        with pytest.raises(ValueError, match=message):
            gym.make(env_id, **kwargs)
    env = gym.make("procgen/maze")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be in \[0, 15\)"):
        env.step(15)
    with pytest.raises(ValueError, match="did you mean"):
        check_env_id("procgen/coinrn")
    env.close()


@needs_procgen
def test_importing_procgen_leaves_the_sdl_variables_as_they_were() -> None:
    """The old gym that procgen imports sets SDL_AUDIODRIVER=dsp for the whole process."""
    code = (
        "import os, sys, gymnasium as gym, prefrl\n"
        "os.environ['SDL_AUDIODRIVER'] = 'dummy'\n"
        "keys = ('SDL_AUDIODRIVER', 'PYGAME_HIDE_SUPPORT_PROMPT')\n"
        "before = [os.environ.get(k) for k in keys]\n"
        "gym.make('procgen/coinrun').reset(seed=0)\n"
        "assert 'gym' in sys.modules\n"
        "print(before == [os.environ.get(k) for k in keys], os.environ['SDL_AUDIODRIVER'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["True", "dummy"], out.stderr


@needs_procgen
@pytest.mark.slow
def test_a_tiny_coinrun_run_trains_from_the_cli_and_reports(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    argv = [
        *("train", "--env.id", "procgen/coinrun", "--env.kwargs", json.dumps(COINRUN)),
        *("--loop.total-steps", "300", "--loop.initial-steps", "100", "--loop.iterations", "2"),
        *("--loop.total-labels", "4", "--agent.n-steps", "64", "--agent.batch-size", "32"),
        *("--eval-episodes", "1", "--no-progress", "--no-page", "--run-dir", str(run_dir)),
    ]
    out = subprocess.run(
        [sys.executable, "-m", "prefrl.cli.main", *argv], capture_output=True, text=True, timeout=580
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((run_dir / "report.json").read_text())
    assert report["labels_used"] == 4 and report["env"] == "procgen/coinrun", report
    assert report["true_return"] in (0.0, 10.0)  # one CoinRun episode: the coin or nothing
