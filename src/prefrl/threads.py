"""How many CPU threads torch and the BLAS libraries use: once for a whole process, or for one call.

PyTorch's OpenMP pool and OpenBLAS start one thread per core and spin while they wait. On a
small machine whose cores are busy with other work (other people's jobs, environment workers),
every parallel operation then waits for a thread that is not running: the small matrix products
of reward models and RL agents get many times slower, not faster (a learned-reward loop ran 10x
slower on two loaded cores). One thread avoids that, so it is prefrl's default.

Two owners, two functions:

- :func:`set_threads`: the process is prefrl's (every ``prefrl`` command calls it once with
  ``--threads``, default 1): torch's intra- and inter-op threads, the BLAS and OpenMP libraries
  already loaded (threadpoolctl), and the ``*_NUM_THREADS`` variables that libraries loaded later
  and child processes read.
- :func:`torch_threads`: code running inside someone else's process (the learned-reward wrappers
  in another library's training loop): the given torch threads only while inside, then the
  process's own setting again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from threadpoolctl import threadpool_limits

DEFAULT_THREADS = 1
"""Threads of every ``prefrl`` command unless ``--threads`` says otherwise."""

ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""What libraries loaded after :func:`set_threads` and child processes read at start-up."""


def check_threads(n: object, what: str = "--threads") -> int:
    """``n`` as a thread count; a clear error unless it is a whole number >= 1."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{what} must be a whole number of threads >= 1, got {n!r}")
    return n


def set_threads(n: int) -> None:
    """Use ``n`` CPU threads in this whole process from now on (see the module doc).

    Torch's inter-op pool can only be sized before its first use; after that it is left as
    it is (it runs independent operators side by side, which prefrl's code does not ask for).
    """
    n = check_threads(n)
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:  # already started (or set once): torch allows it only once, before use
        pass
    threadpool_limits(limits=n)  # NumPy's OpenBLAS, torch's OpenMP (kept: not a context manager)
    for var in ENV_VARS:
        os.environ[var] = str(n)


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the body on ``n`` torch intra-op threads, then restore the process's count; ``None``:
    leave it. Costs under a microsecond, so it can wrap every environment step.

    NumPy's BLAS is not switched here: switching it costs microseconds per call, and prefrl's
    NumPy inference path (:class:`~prefrl.rewards.inference.FastReward`) already runs on one BLAS
    thread whenever a product is large enough for BLAS to use more.
    """
    if n is None:
        yield
        return
    before = torch.get_num_threads()
    if before == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
