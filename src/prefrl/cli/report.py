"""``prefrl report RUN``: one static HTML page showing what a run learned (RUN/report/index.html)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import tyro

from prefrl.interpret.run_page import PageConfig, write_run_page
from prefrl.threads import DEFAULT_THREADS, set_threads


@dataclass(frozen=True)
class ReportConfig(PageConfig):
    """Write one HTML page showing what a run learned (RUN/report/index.html)."""

    threads: int = DEFAULT_THREADS
    """CPU threads for torch and BLAS (1 avoids oversubscription on small shared machines)."""


def main(argv: list[str]) -> int:
    cfg = tyro.cli(ReportConfig, args=argv, prog="prefrl report", description=ReportConfig.__doc__)
    try:
        set_threads(cfg.threads)
        page = write_run_page(cfg)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"prefrl report: error: {e}", file=sys.stderr)
        return 2
    print(page)
    return 0
