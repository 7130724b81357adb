"""The project's environments register on ``import prefrl``, cheaply, and by module path."""

from __future__ import annotations

import subprocess
import sys


def test_import_prefrl_registers_environments_without_importing_torch() -> None:
    code = (
        "import sys, gymnasium as gym, prefrl\n"
        "assert 'torch' not in sys.modules, 'import prefrl pulled in torch'\n"
        "for i in ('prefrl/MovingDot-v0', 'prefrl/GridWorld-v0'):\n"
        "    env = gym.make(i); env.reset(seed=0); env.step(env.action_space.sample())\n"
        "env = gym.make('prefrl/MovingDot-v0', size=40, obs_type='state')\n"
        "assert env.observation_space.shape == (4,)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_module_colon_id_form_works_without_importing_prefrl_first() -> None:
    code = "import gymnasium as gym\ngym.make('prefrl:prefrl/GridWorld-v0').reset(seed=0)\nprint('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
