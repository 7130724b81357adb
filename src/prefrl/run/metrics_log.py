"""A :class:`~prefrl.storage.logger.Logger` writing CSV (one row per step) and TensorBoard."""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter


class MetricsLogger:
    """Collects metrics per step; ``flush_row`` writes one CSV row (column ``step`` + names).

    Metrics logged at the same ``step`` are merged into one row. New metric names that
    appear later are added as columns (the file is rewritten with the wider header).

    Args:
        run_dir: the run directory; writes ``metrics.csv`` and ``tb/``.
        tensorboard: also write TensorBoard event files (the writer starts at the first metric,
            so a logger of a run that fails before logging leaves no event file).
    """

    def __init__(self, run_dir: str | Path, tensorboard: bool = True) -> None:
        self.path = Path(run_dir) / "metrics.csv"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rows: list[dict[str, Any]] = []
        if self.path.exists():  # resume: keep the rows already written
            with self.path.open(newline="") as f:
                self.rows = list(csv.DictReader(f))
        self.columns: list[str] = list(self.rows[0].keys()) if self.rows else ["step"]
        self.pending: dict[str, float] = {}
        self.pending_step: int | None = None
        self.tensorboard = tensorboard
        self.tb_dir = Path(run_dir) / "tb"
        # made at the first metric: a resume that fails adds no TensorBoard file
        self.writer: SummaryWriter | None = None

    def _tb(self) -> SummaryWriter | None:
        if self.writer is None and self.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(self.tb_dir))
        return self.writer

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        if self.pending_step is not None and step != self.pending_step:
            self.flush_row()
        self.pending_step = step
        for k, v in metrics.items():
            v = float(v)
            self.pending[k] = v
            writer = self._tb()
            if writer is not None and math.isfinite(v):
                writer.add_scalar(k, v, step)

    def truncate(self, step: int) -> None:
        """Drop rows after ``step`` (when resuming from an older checkpoint)."""
        self.rows = [r for r in self.rows if int(float(r["step"])) <= step]
        self._write()

    def flush_row(self) -> None:
        """Write the pending metrics as one row."""
        if self.pending_step is None:
            return
        row = {"step": self.pending_step, **self.pending}
        self.rows.append(row)
        new = [k for k in row if k not in self.columns]
        self.columns += new
        if new or not self.path.exists():
            self._write()
        else:
            with self.path.open("a", newline="") as f:
                csv.DictWriter(f, self.columns).writerow(row)
        self.pending, self.pending_step = {}, None
        if self.writer is not None:
            self.writer.flush()

    def _write(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", newline="") as f:
            w = csv.DictWriter(f, self.columns)
            w.writeheader()
            w.writerows(self.rows)
        tmp.replace(self.path)

    def close(self) -> None:
        self.flush_row()
        if self.writer is not None:
            self.writer.close()
