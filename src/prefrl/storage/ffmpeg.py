"""Video encoders that end with the process that started them.

imageio-ffmpeg (behind :func:`~prefrl.storage.clips.encode_video` and ``imageio.mimsave``)
starts ``ffmpeg`` as a child reading frames from a pipe. A trainer killed with ``kill -9``
cannot close that pipe itself, and where another process still holds it (a forked worker),
ffmpeg would go on waiting and writing into the run's log. :func:`die_with_parent_encoders`
makes every ffmpeg that imageio-ffmpeg starts from then on ask Linux for ``SIGKILL`` when its
parent dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere it changes nothing. Linux sends the
signal when the *thread* that started ffmpeg ends: prefrl's encoders wait for ffmpeg in the
thread that started it, so only a dead process ends one early.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

PR_SET_PDEATHSIG = 1

_prctl: Any = None
if sys.platform.startswith("linux"):
    try:  # resolved here, in the parent: the child only calls it between fork and exec
        _prctl = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).prctl
    except (OSError, AttributeError):
        _prctl = None


def _child_setup(parent: int, own_group: bool) -> None:
    """``preexec_fn`` of an encoder (runs in the child, before ``exec``)."""
    if own_group:  # imageio-ffmpeg's own choice: Ctrl-C in a terminal does not cut a video short
        os.setpgrp()
    _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request: nobody reads this video
        os._exit(1)


def _with_death_signal(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    def popen_kwargs(prevent_sigint: bool = False) -> dict[str, Any]:
        kwargs = original(prevent_sigint=prevent_sigint)
        own_group = kwargs.get("preexec_fn") is os.setpgrp
        parent = os.getpid()
        kwargs["preexec_fn"] = lambda: _child_setup(parent, own_group)
        return kwargs

    popen_kwargs.__dict__["prefrl_death_signal"] = True  # marks the wrapper, installed once
    return popen_kwargs


def die_with_parent_encoders() -> None:
    """From now on, each ffmpeg imageio-ffmpeg starts in this process is killed when its
    parent is (Linux; a no-op elsewhere, and when called again)."""
    if _prctl is None:
        return
    try:
        from imageio_ffmpeg import _io
    except ImportError:
        return
    current = getattr(_io, "_popen_kwargs", None)
    if current is None or getattr(current, "prefrl_death_signal", False):
        return
    _io._popen_kwargs = _with_death_signal(current)
