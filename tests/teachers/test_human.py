"""Human teachers: the terminal labeller (answers typed at a prompt) and the store teacher."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from prefrl.teachers import AsyncTeacher, Teacher
from prefrl.teachers.human import StoreTeacher, TerminalTeacher
from tests.storage.helpers import make_fragments


def test_protocols(tmp_path) -> None:
    assert isinstance(StoreTeacher(tmp_path / "s.db"), AsyncTeacher)
    assert isinstance(TerminalTeacher(display="sheet"), Teacher)


def test_terminal_teacher_reads_answers_and_writes_sheets(tmp_path) -> None:
    answers = iter(["x", "L", "r", "E", ""])
    out = io.StringIO()
    t = TerminalTeacher(display="sheet", sheet_dir=tmp_path, input_fn=lambda _: next(answers), out=out)
    labels = t.label(make_fragments(8), np.arange(8).reshape(4, 2))
    assert labels[:3].tolist() == [1.0, 0.0, 0.5] and np.isnan(labels[3])
    assert "'x' is not an answer" in out.getvalue()
    sheets = sorted(tmp_path.glob("pair_*.png"))
    assert len(sheets) == 4
    import imageio.v3 as iio

    img = iio.imread(sheets[0])
    assert img.ndim == 3 and img.shape[0] > 2 * 16


@pytest.mark.timeout(120)
def test_terminal_teacher_at_a_real_prompt(tmp_path) -> None:
    script = textwrap.dedent(
        f"""
        import numpy as np
        from prefrl.teachers.human import TerminalTeacher
        from tests.storage.helpers import make_fragments
        labels = TerminalTeacher(display="sheet", sheet_dir={str(tmp_path)!r}).label(
            make_fragments(4), np.array([[0, 1], [2, 3]]))
        print("LABELS", labels.tolist())
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", script], input="R\n\n", capture_output=True, text=True, timeout=100,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "."},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "LABELS [0.0, nan]" in r.stdout and "Which is better?" in r.stdout
