"""Grids of training runs (environments x label budgets x teachers x seeds) on Ray, on one
machine or a cluster, with a results file, a summary table and plots (``prefrl sweep``)."""

from prefrl.sweep.runner import SweepConfig, apply_options, parse_options, run_sweep

__all__ = ["SweepConfig", "apply_options", "parse_options", "run_sweep"]
