"""A process killed with ``kill -9`` while encoding a video leaves no ffmpeg behind, even when
another process (a forked worker) still holds the pipe the frames went through."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")
pytest.importorskip("imageio_ffmpeg")
if not sys.platform.startswith("linux"):
    pytest.skip("PR_SET_PDEATHSIG is Linux's", allow_module_level=True)

ENCODER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import numpy as np
    import imageio_ffmpeg
    from prefrl.storage.clips import encode_video

    encode_video(np.zeros((2, 64, 64, 3), np.uint8), Path(sys.argv[1]).with_name("first.webm"))
    w = imageio_ffmpeg.write_frames(sys.argv[1], (64, 64), codec="libvpx", quality=None,
                                    macro_block_size=2, ffmpeg_log_level="error")
    w.send(None)
    w.send(np.zeros((64, 64, 3), np.uint8))
    if os.fork() == 0:  # a worker that inherits the pipe to ffmpeg and outlives the encoder
        time.sleep(120)
        os._exit(0)
    print("encoding", flush=True)
    time.sleep(120)
    """
)


def test_killed_encoder_process_leaves_no_ffmpeg(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", ENCODER, str(tmp_path / "clip.webm")],
        stdout=subprocess.PIPE,
        text=True,
    )
    worker: list[int] = []
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "encoding"
        children = psutil.Process(proc.pid).children()
        ffmpeg = [c for c in children if "ffmpeg" in c.name()]
        worker = [c.pid for c in children if c not in ffmpeg]
        assert len(ffmpeg) == 1, children
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and ffmpeg[0].is_running() and ffmpeg[0].status() != "zombie":
            time.sleep(0.1)
        assert not ffmpeg[0].is_running() or ffmpeg[0].status() == "zombie", "ffmpeg outlived its parent"
    finally:
        for pid in worker:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
