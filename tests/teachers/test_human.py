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
from tests.narrow import present
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


def test_store_teacher_encodes_in_the_background(tmp_path) -> None:
    frags = make_fragments(20)
    pairs = np.arange(20).reshape(10, 2)
    t = StoreTeacher(tmp_path / "s.db", max_queued=2)
    done = t.submit(frags, pairs)
    # submit returned before the ~20 clips were encoded; the pairs already count as pending
    assert not done.done() and t.pending() == 10
    labeller = t.store.user_for_token(t.store.add_user("ann"))
    assert labeller is not None
    # the caller may reuse its buffers at once: the worker encodes its own copy
    want = frags.arrays(pairs)
    frags.table_obs[:] = 0.0
    present(frags.table_frames)[:] = 0
    ids = done.result(timeout=120)
    assert ids == list(range(1, 11)) and t.pending() == 10
    # a query becomes visible to labellers only with both its clips written
    q = t.store.next_query(labeller.id)
    assert q is not None and (t.store.clip_dir / q["left_video"]).stat().st_size > 0
    t.store.add_label(q["query_id"], labeller.id, "left")
    [(got, got_pairs, labels, _)] = t.poll()
    assert labels.tolist() == [1.0]
    np.testing.assert_array_equal(got.arrays(got_pairs).obs[0], want.obs[0])
    t.close()
    with pytest.raises(RuntimeError, match="closed"):
        t.submit(frags, pairs)


def test_store_teacher_background_errors_surface_and_close_flushes(tmp_path) -> None:
    t = StoreTeacher(tmp_path / "s.db")
    t.submit(make_fragments(2), np.array([[0, 1]]))
    t.close()  # flushes: the query is in the store
    assert StoreTeacher(tmp_path / "s.db").pending() == 1
    broken = StoreTeacher(tmp_path / "s.db")
    clip_dir = broken.store.clip_dir
    for f in clip_dir.iterdir():
        f.unlink()
    clip_dir.rmdir()  # the worker cannot write clips any more
    done = broken.submit(make_fragments(2), np.array([[1, 0]]))
    with pytest.raises(OSError):
        done.result(timeout=60)
    with pytest.raises(RuntimeError, match=r"writing submitted queries to .* failed") as e:
        broken.poll()
    assert isinstance(e.value.__cause__, OSError)
    assert broken.poll() == [] and broken.pending() == 1  # reported once; nothing half-written
    with pytest.raises(IndexError):
        broken.submit(make_fragments(2), np.array([[0, 2]]))
