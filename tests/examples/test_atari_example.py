"""examples/atari_pong.md, run as its readers run it: the code block saved as a script and
started with ``python`` (the preference wrapper's worker processes import it again), with a
256-step budget."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "examples" / "atari_pong.md"


def test_atari_pong_example_runs_as_a_script(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    code = blocks[0]
    assert "total_timesteps=10_000_000" in code and 'if __name__ == "__main__":' in code
    code = code.replace("total_timesteps=10_000_000", "total_timesteps=256").replace(
        "learned_after=500", "learned_after=50"
    )
    (tmp_path / "pong.py").write_text(code)
    out = subprocess.run(
        [sys.executable, "pong.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "runs" / "pong" / "preferences.npz").exists()
