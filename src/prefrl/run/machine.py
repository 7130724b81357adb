"""Which machine and which code measured a result.

A training run repeats step for step only where the same kernels run: PyTorch picks its CPU
kernels by the instruction sets the processor offers (``AVX2``, ``AVX512``), and a kernel with
another summation order changes the last bits of a float, which a long run of reinforcement
learning grows into another run. So a benchmark row measured on another machine, or with other
code, is another sample of its seeds, not a repeat of them; each sweep cell records where it ran
(:func:`machine_record`), and ``benchmarks/label_efficiency.py`` lists the machines of a row.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path


def cpu_model() -> str:
    """The processor's name with its family and model numbers (``/proc/cpuinfo`` on Linux; some
    virtual machines name only the vendor's line, ``AMD EPYC``, which the numbers tell apart),
    else what :mod:`platform` knows."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, sep, value = line.partition(":")
            if not sep:
                if fields:
                    break  # the first processor's block is enough
                continue
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine() or "unknown"
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


def source_commit() -> str | None:
    """The git commit of prefrl's source, ``-dirty`` appended where it has uncommitted changes
    (``git describe --always --dirty``); ``None`` for an installed package (one whose files no
    git checkout tracks, even where it lies inside another project's repository) or without git."""
    here = Path(__file__).resolve()

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=here.parent, capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    if git("ls-files", "--error-unmatch", here.name) is None:  # not prefrl's own checkout
        return None
    return git("describe", "--always", "--dirty", "--abbrev=12") or None


def machine_record() -> dict[str, object]:
    """Where a result was measured: ``cpu`` (:func:`cpu_model`), ``cpu_capability`` (the
    instruction set PyTorch's CPU kernels use), ``cpus`` (cores the process may use), the
    versions of Python, PyTorch and NumPy, and prefrl's ``commit`` (:func:`source_commit`)."""
    import numpy as np
    import torch

    return {
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "commit": source_commit(),
    }


def machine_label(record: dict[str, object]) -> str:
    """One line naming a :func:`machine_record`: the processor, its kernels' instruction set and
    its cores (``AMD EPYC (family 25, model 17), AVX512, 2 cores``)."""
    cpu, kernels = record.get("cpu", "unknown"), record.get("cpu_capability", "?")
    return f"{cpu}, {kernels}, {record.get('cpus', '?')} cores"
