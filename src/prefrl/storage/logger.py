"""The one logger passed in at the top: components return metrics, callers log them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable


class Logger(Protocol):
    """Anything that can record a dict of scalar metrics at a step."""

    def log(self, metrics: Mapping[str, float], step: int) -> None: ...


@runtime_checkable
class RowLogger(Logger, Protocol):
    """A logger that writes its metrics in rows (e.g. CSV) and can end the current row now."""

    def flush_row(self) -> None: ...


class NullLogger:
    """Discards everything."""

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        return None


class PrefixLogger:
    """Prepends ``prefix/`` to every key before passing metrics to ``inner``."""

    def __init__(self, inner: Logger, prefix: str) -> None:
        self.inner, self.prefix = inner, prefix

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        self.inner.log({f"{self.prefix}/{k}": v for k, v in metrics.items()}, step)
