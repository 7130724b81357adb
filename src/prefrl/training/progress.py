"""Progress output that suits where it goes: a live bar in a terminal, plain lines in a file.

A terminal gets tqdm's bar (or a status line rewritten in place with ``\\r``). Anything else
(``nohup``, ``> log 2>&1``, CI, a cluster job's output file) gets whole lines, at most one
per ``interval`` seconds plus one whenever the caller has news (``set_postfix``: an
iteration ended), so a log stays readable with ``less`` and grows by a few dozen lines per
run instead of one line holding thousands of carriage-return updates.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Protocol, TextIO

from tqdm.auto import tqdm

LINE_INTERVAL_S = 60.0
"""Seconds between two plain progress lines when no iteration ended in between."""

STATUS_INTERVAL_S = 30.0
"""Seconds between two lines of a :class:`StatusLine` in a file."""

LINE_FORMAT = "{n_fmt}/{total_fmt} {unit}s ({percentage:.0f}%) [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


def is_terminal(file: TextIO | None) -> bool:
    """Whether ``file`` is an interactive terminal (a closed or odd stream counts as not)."""
    try:
        return file is not None and file.isatty()
    except (AttributeError, ValueError):
        return False


class Bar(Protocol):
    """What a progress callback uses of a bar: tqdm's, or :class:`LineProgress`."""

    n: int

    def update(self, n: int = 1) -> object: ...

    def set_postfix(self, values: Mapping[str, object] | None = None) -> object: ...

    def close(self) -> object: ...


class LineProgress:
    """The part of tqdm's interface a progress callback uses, written as plain lines.

    ``update(k)`` advances by ``k`` and writes a line when ``interval`` seconds passed since
    the last one; ``set_postfix(values)`` records the latest figures and writes a line (at most
    one per ``min_gap`` seconds); ``close()`` writes the final count and figures if the last
    line did not show them. Each line reads
    ``prefix: 2400/15000 steps (16%) [00:23<02:50, 73.04step/s, labels=6]``.
    """

    def __init__(
        self,
        total: int | None,
        unit: str = "it",
        file: TextIO | None = None,
        prefix: str = "prefrl",
        interval: float = LINE_INTERVAL_S,
        min_gap: float = 1.0,
        disable: bool = False,
    ) -> None:
        self.total, self.unit, self.prefix = total, unit, prefix
        self.file = file if file is not None else sys.stderr
        self.interval, self.min_gap, self.disable = interval, min_gap, disable
        self.n = 0
        self.postfix = ""
        self.start = time.monotonic()
        self._last_t = -float("inf")
        self._written: tuple[int, str] | None = None  # (n, postfix) of the last line

    def update(self, n: int = 1) -> None:
        self.n += int(n)
        if time.monotonic() - self._last_t >= self.interval:
            self._write()

    def set_postfix(self, values: Mapping[str, object] | None = None, **kwargs: object) -> None:
        items = {**(values or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())
        if time.monotonic() - self._last_t >= self.min_gap:
            self._write()

    def close(self) -> None:
        if self._written != (self.n, self.postfix):
            self._write()

    def _write(self) -> None:
        self._last_t, self._written = time.monotonic(), (self.n, self.postfix)
        if self.disable:
            return
        meter = tqdm.format_meter(
            self.n,
            self.total,
            self._last_t - self.start,
            unit=self.unit,
            postfix=self.postfix or None,
            bar_format=LINE_FORMAT if self.total else "{n_fmt} {unit}s [{elapsed}, {rate_fmt}{postfix}]",
        )
        print(f"{self.prefix}: {meter}", file=self.file, flush=True)


def progress_bar(
    total: int | None, unit: str = "it", disable: bool = False, file: TextIO | None = None
) -> Bar:
    """A tqdm bar on a terminal, a :class:`LineProgress` anywhere else (both on stderr by
    default); either has ``n``, ``update``, ``set_postfix`` and ``close``."""
    out = file if file is not None else sys.stderr
    if is_terminal(out):
        return tqdm(total=total, unit=unit, disable=disable, dynamic_ncols=True, file=out)
    return LineProgress(total, unit=unit, file=out, disable=disable)


class StatusLine:
    """One line of status that changes (``show(text)``, called often): rewritten in place on
    a terminal, written as a new line at most every ``interval`` seconds anywhere else."""

    def __init__(self, file: TextIO | None = None, interval: float = STATUS_INTERVAL_S) -> None:
        self.file = file if file is not None else sys.stderr
        self.tty = is_terminal(self.file)
        self.interval = interval
        self._last_t = -float("inf")
        self._text: str | None = None  # the latest status
        self._written: str | None = None  # the latest status written out

    def show(self, text: str) -> None:
        self._text = text
        if self.tty:
            print(f"\r{text}", end="", file=self.file, flush=True)
            self._written = text
        elif time.monotonic() - self._last_t >= self.interval:
            self._write()

    def _write(self) -> None:
        self._last_t, self._written = time.monotonic(), self._text
        print(self._text, file=self.file, flush=True)

    def close(self) -> None:
        """End the status: on a terminal, end its line; elsewhere, write the latest status
        if it was not written yet."""
        if self.tty and self._written is not None:
            print(file=self.file, flush=True)
        elif not self.tty and self._text is not None and self._text != self._written:
            self._write()
        self._text = self._written = None
