"""``prefrl report RUN``: one static HTML page showing what a run learned (RUN/report/index.html)."""

from __future__ import annotations

import sys

import tyro

from prefrl.interpret.run_page import PageConfig, write_run_page


def main(argv: list[str]) -> int:
    cfg = tyro.cli(PageConfig, args=argv, prog="prefrl report", description=PageConfig.__doc__)
    try:
        page = write_run_page(cfg)
    except (ValueError, FileNotFoundError, KeyError) as e:
        print(f"prefrl report: error: {e}", file=sys.stderr)
        return 2
    print(page)
    return 0
