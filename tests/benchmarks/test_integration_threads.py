"""The threads benchmark of the learned-reward integrations: its Zoo clock times a real wrapped
environment, and docs/integrations.md quotes the committed result file's figures."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import pytest

from prefrl.agents.learned_reward import zoo_wrapper

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks/results/integrations/threads-Pendulum-v1.json"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "integration_threads", ROOT / "benchmarks/integration_threads.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["integration_threads"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_step_clock_times_the_loop_and_the_learned_reward(tmp_path: Path) -> None:
    bench = _module()
    source = bench.make_source(tmp_path / "source")
    env = bench.StepClock(
        zoo_wrapper(gym.make("Pendulum-v1"), str(source), threads=None), str(tmp_path / "c.json")
    )
    env.reset(seed=0)
    for _ in range(250):  # one 200-step episode (written at its end), then 50 more (written on close)
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            assert json.loads((tmp_path / "c.json").read_text())["steps"] == 200
            env.reset()
    env.close()
    clock = json.loads((tmp_path / "c.json").read_text())
    assert clock["steps"] == 250 and 0 < clock["reward_s"] < clock["loop_s"] and clock["loop_cpu_s"] > 0


def test_docs_quote_the_committed_figures() -> None:
    """Every figure of docs/integrations.md's Threads table is the result file's, as it rounds them."""
    parts = json.loads(RESULT.read_text())["parts"]
    doc = (ROOT / "docs/integrations.md").read_text()
    section = doc[doc.index("## Threads") :]
    for name, part in parts.items():
        med = part["median"]
        for variant, m in med.items():
            assert f"{m['loop_s']:.1f} s" in section, (name, variant)
        assert f"{part['ratio_loop']:.2f}" in section, name


@pytest.mark.parametrize("argv", [["--steps", "100"], ["--rounds", "0"], ["--load", "-1"]])
def test_bad_options_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        _module().main(argv)
    assert e.value.code == 2 and "need --steps >= 256" in capsys.readouterr().err
