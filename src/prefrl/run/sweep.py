"""A grid of training runs as Ray tasks, on this machine or a cluster (``prefrl sweep``).

Each cell (environment x label budget x teacher x seed) is one Ray task calling the same
:func:`~prefrl.run.train.train` as ``prefrl train``; the reference run on the true reward
(same agent and steps) is one task per (environment, agent, steps, seed), shared by every
budget and teacher. The layout under ``out`` is described in :mod:`prefrl.cli.sweep`;
:func:`run_cells` runs any list of cells with another layout (``benchmarks/label_efficiency.py``
keeps its own, and reuses true-reward runs found elsewhere).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, TypedDict, cast

import tyro

from prefrl.config_types import OptFile, OptInt
from prefrl.run.options import Options, apply_options, parse_options
from prefrl.storage.checkpoint import read_json, write_json

if TYPE_CHECKING:  # imported where used: the driver starts without torch and SB3
    from prefrl.run.config import TrainConfig

Result = dict[str, object]
"""What a cell leaves in its ``result.json`` (and hands to the driver)."""

SWEEP_FORMAT = "prefrl.sweep"
OBJECT_STORE_BYTES = 256 * 2**20
"""A local Ray's object store: cells exchange only small dicts, so Ray's default (30% of RAM,
mapped into every worker) would only cost address space."""


@dataclass(frozen=True)
class SweepConfig:
    """Run a grid of prefrl train runs (environments x label budgets x teachers x seeds) on Ray."""

    env: Annotated[list[str], tyro.conf.arg(metavar="ID [ID ...]", help_behavior_hint="(required)")] = field(
        default_factory=list
    )
    """Gymnasium environment ids."""
    labels: Annotated[list[int], tyro.conf.arg(metavar="N [N ...]", help_behavior_hint="(required)")] = field(
        default_factory=list
    )
    """Label budgets."""
    seeds: int = 3
    """Seeds per cell: first_seed .. first_seed+seeds-1."""
    first_seed: int = 0
    """The first seed (to spread a grid's seeds over several sweeps)."""
    out: Annotated[str, tyro.conf.arg(metavar="DIR", help_behavior_hint="(required)")] = ""
    """Directory of the sweep; a repeated sweep there skips finished cells."""
    teacher: Annotated[list[str], tyro.conf.arg(metavar="NAME [NAME ...]")] = field(
        default_factory=lambda: ["oracle"]
    )
    """Simulated teachers (presets of prefrl train --teacher)."""
    steps: OptInt = None
    """Environment steps per run (default: prefrl train's --loop.total-steps)."""
    set: Annotated[
        list[str], tyro.conf.arg(metavar="SECTION.OPTION=VALUE ...", help_behavior_hint="(optional)")
    ] = field(default_factory=list)
    """Options of every learned run, as prefrl train takes them, e.g. trainer.noise_filter=true
    agent.algo=td3: JSON values of the option's type (true/false or True/False, null or None), checked
    before anything runs."""
    config: OptFile = None
    """JSON file with any of these options (the command line wins)."""
    address: Annotated[
        str | None, tyro.conf.arg(metavar="HOST:PORT", help_behavior_hint="(default: local)")
    ] = None
    """Address of an existing Ray cluster (ray start --head prints it); default: a local Ray."""
    cpus_per_cell: float = 1.0
    """CPUs Ray reserves for each cell (each run uses one torch thread per CPU)."""
    gpus_per_cell: float = 0.0
    """GPUs Ray reserves for each cell."""
    num_cpus: OptInt = None
    """Local Ray only: CPUs to use (default: all)."""
    eval_episodes: int = 10
    """Evaluation episodes per policy on the unmodified environment."""
    progress: bool = True
    """Show the live progress line."""


@dataclass(frozen=True)
class Cell:
    """One task of the grid: a learned run, or the reference run on the true reward."""

    kind: str  # "learned" | "oracle"
    env: str
    agent: str
    steps: int
    seed: int
    teacher: str = ""
    labels: int = 0

    @staticmethod
    def of(fields: Mapping[str, str | int]) -> Cell:
        """The cell ``dataclasses.asdict`` made ``fields`` of (a cell crosses to a Ray worker so)."""
        return Cell(
            str(fields["kind"]),
            str(fields["env"]),
            str(fields["agent"]),
            int(fields["steps"]),
            int(fields["seed"]),
            str(fields.get("teacher", "")),
            int(fields.get("labels", 0)),
        )

    @property
    def name(self) -> str:
        if self.kind == "oracle":
            return f"true-reward-{self.env.replace('/', '_')}-{self.agent}-{self.steps}s-seed{self.seed}"
        env = self.env.replace("/", "_")
        return f"{env}-{self.agent}-{self.teacher}-{self.labels}l-{self.steps}s-seed{self.seed}"


# ------------------------------------------------------------------------ the grid
SET_BY_SWEEP = (
    "seed",
    "teacher",
    "run_dir",
    "resume",
    "force",
    "config",
    "print_config",
    "env.id",
    "loop.total_labels",
    "loop.total_steps",
)
"""Options each cell gets from the grid (--env, --labels, --seeds, --teacher, --steps)."""


def grid(sc: SweepConfig, options: Options) -> tuple[list[Cell], list[Cell]]:
    """(learned cells, reference cells) of the sweep, agents resolved per environment (made with
    the sweep's ``env.*`` options, which can change its action space: ``continuous``)."""
    from prefrl.agents.sb3 import check_env_id, make_env, resolve_algo
    from prefrl.run.config import TrainConfig

    default = TrainConfig()
    steps = sc.steps or default.loop.total_steps
    learned, oracle = [], []
    for env_id in sc.env:
        check_env_id(env_id)
        probe = make_env(env_id, reference_env_kwargs(options))
        agent = resolve_algo(str(options.get("agent.algo", default.agent.algo)), probe.action_space)
        probe.close()
        for seed in range(sc.first_seed, sc.first_seed + sc.seeds):
            oracle.append(Cell("oracle", env_id, agent, steps, seed))
            for teacher in sc.teacher:
                for labels in sc.labels:
                    learned.append(Cell("learned", env_id, agent, steps, seed, teacher, labels))
    return learned, oracle


# ------------------------------------------------------------------------ one cell
def initial_steps(steps: int) -> int:
    """Random-action steps at the start of both runs of a cell (learned and true reward), unless
    the options set ``loop.initial_steps``: 1,000, or a tenth of a shorter run."""
    return min(1000, steps // 10)


def cell_config(c: Cell, options: Options, run: Path, eval_episodes: int, threads: int) -> TrainConfig:
    """The config of a learned cell's run: the grid's values, then the sweep's ``options``
    (which may change ``loop.initial_steps`` but not what the grid sets, see :data:`SET_BY_SWEEP`)."""
    from prefrl.run.config import TrainConfig
    from prefrl.teachers.spec import TeacherName

    cfg = TrainConfig(
        seed=c.seed,
        teacher=cast(TeacherName, c.teacher),  # a name from the grid, checked by make_teacher
        run_dir=str(run),
        force=True,
        progress=False,
        eval_episodes=eval_episodes,
        threads=threads,
    )
    grid_values = {
        "env.id": c.env,
        "loop.total_steps": c.steps,
        "loop.total_labels": c.labels,
        "loop.initial_steps": initial_steps(c.steps),
    }
    return apply_options(cfg, {**grid_values, **options, "agent.algo": c.agent})


def run_cell(
    cell: Mapping[str, str | int],
    options: Options,
    run_dir: str,
    result_path: str,
    eval_episodes: int,
    threads: int,
    driver: Mapping[str, str | int | float] | None = None,
) -> Result:
    """Run one cell (in a Ray worker) in ``run_dir``; returns its result, also written to
    ``result_path``.

    A learned cell whose run directory exists resumes from its last checkpoint. Both runs are
    evaluated on the unmodified environment (``eval_episodes`` episodes). The cell holds the
    run directory's lock throughout (a process still writing there, e.g. of a killed sweep,
    is waited for), and ends its process once ``driver`` (a
    :class:`~prefrl.run.cell_guard.Driver`) is gone.
    """
    from prefrl.run.cell_guard import run_lock, wait_line, watch_driver

    run = Path(run_dir)
    with watch_driver(driver), run_lock(run, wait_line(Cell.of(cell).name, run)):
        return _run_cell(cell, options, run_dir, result_path, eval_episodes, threads)


def _run_cell(
    cell: Mapping[str, str | int],
    options: Options,
    run_dir: str,
    result_path: str,
    eval_episodes: int,
    threads: int,
) -> Result:
    import ray
    import torch

    from prefrl.agents.evaluate import evaluation_mode, train_on_true_reward
    from prefrl.agents.sb3 import AgentConfig
    from prefrl.run.config import parse_args
    from prefrl.run.machine import machine_record
    from prefrl.run.sweep_report import resolved_reward
    from prefrl.run.train import train

    c = Cell.of(cell)
    run, result = Path(run_dir), Path(result_path)
    result.parent.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    if c.kind == "learned":
        if (run / "config.json").exists():
            cfg = parse_args(["--resume", str(run), "--no-progress", "--threads", str(threads)])
        else:
            cfg = cell_config(c, options, run, eval_episodes, threads)
        rep = train(cfg)
        res = {
            "return": rep["true_return"],
            "eval": rep.get("eval"),
            "train_wall_s": rep["train_wall_s"],
            "cpu_s": rep["train_cpu_s"],
            "labels_used": rep["labels_used"],
            "reward_accuracy": rep.get("reward_accuracy"),
            **resolved_reward(run),
        }
    else:
        agent_cfg, env_kwargs = AgentConfig(algo=c.agent), reference_env_kwargs(options)
        ret, wall, cpu = train_on_true_reward(
            agent_cfg, c.env, c.steps, c.seed, run, eval_episodes, initial_steps(c.steps), env_kwargs
        )
        res = {
            "return": ret,
            "eval": evaluation_mode(c.env, env_kwargs),
            "train_wall_s": wall,
            "cpu_s": cpu,
            "env_kwargs": env_kwargs,
        }
    ctx = ray.get_runtime_context()
    res.update(
        cell=dataclasses.asdict(c),
        wall_s=time.perf_counter() - t0,
        node_id=ctx.get_node_id(),
        ray_address=ctx.gcs_address,
        machine=machine_record(),  # runs repeat seed for seed only on one machine
    )
    write_json(result, res)
    return res


def reference_env_kwargs(options: Options) -> dict[str, object]:
    """The environment a cell's true-reward run trains and is evaluated on: gym.make's keyword
    arguments and wrapper options from the sweep's ``env.*`` options (``env.kwargs``,
    ``env.hide_score``, ...), as the learned runs get them. Other options (loop, reward, agent)
    are the learned side's techniques; the reference agent keeps its defaults."""
    from prefrl.run.config import TrainConfig

    cfg = apply_options(TrainConfig(), {k: v for k, v in options.items() if k.startswith("env.")})
    return cfg.env.parsed_kwargs()


# ------------------------------------------------------------------------ the driver
def _check_out(out: Path, sc: SweepConfig, options: Options) -> None:
    """Record the sweep's options in ``out/sweep.json``; refuse a different sweep there."""
    spec = {"format": SWEEP_FORMAT, "options": options, "steps": sc.steps, "eval_episodes": sc.eval_episodes}
    path = out / "sweep.json"
    if path.exists():
        old = read_json(path, "sweep file")
        if old.get("format") != SWEEP_FORMAT:
            raise ValueError(f"{path}: not a prefrl sweep file")
        if {k: old.get(k) for k in spec} != spec:
            raise ValueError(
                f"{out} holds a sweep with other options ({old.get('options')}, steps {old.get('steps')}); "
                "use another --out, or the same options to finish it"
            )
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, spec)


def _short_temp_dir() -> str | None:
    """Ray's session folder under a long ``TMPDIR`` breaks its Unix socket paths (107 bytes at
    most): there, use ``/tmp/ray`` instead of ``$TMPDIR/ray`` (``None``: Ray's default)."""
    import tempfile

    if len(tempfile.gettempdir()) > 40 and Path("/tmp").is_dir() and os.access("/tmp", os.W_OK):
        return "/tmp/ray"
    return None


def _ray_init(sc: SweepConfig) -> ModuleType:
    """Start a new local Ray (or join the cluster at ``sc.address``) without Ray's start-up chatter.

    A local Ray gets token authentication, Ray's own default, but asked for explicitly
    (``RAY_AUTH_MODE=token``, unless the environment names a mode): left to its default, Ray
    prints a ``WARNING`` that it turned it on at every start. Its ``INFO`` lines are not shown
    either (``logging_level``); its warnings and errors still are."""
    import logging

    # Ray reads the mode once, when it is imported: set after that, the driver and the Ray it
    # starts would disagree (its GCS refuses the driver), so a process that imported Ray already
    # keeps Ray's own default
    if "ray" in sys.modules:
        pass
    elif sc.address:  # clusters of `ray start` use token authentication; a driver must opt in
        if os.environ.get("RAY_AUTH_TOKEN") or (Path.home() / ".ray" / "auth_token").exists():
            os.environ.setdefault("RAY_AUTH_MODE", "token")
    else:
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    try:
        import ray
    except ImportError:
        raise SystemExit("prefrl sweep needs Ray: pip install 'prefrl[sweep]'") from None
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}}
    if sc.address:
        ray.init(address=sc.address, runtime_env=env, log_to_driver=False, logging_level=logging.WARNING)
    else:
        ray.init(
            address="local",
            num_cpus=sc.num_cpus,
            _temp_dir=_short_temp_dir(),
            object_store_memory=OBJECT_STORE_BYTES,
            include_dashboard=False,
            runtime_env=env,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )  # always a new local Ray, never one left running
    return ray


def refuse_stale(c: Cell, options: Options, result: Path) -> None:
    """Stop where the finished learned cell ``c`` (its ``result``) resolved an ``auto`` setting
    (:func:`~prefrl.run.sweep_report.resolved_settings`) otherwise than a run of it would now: a
    default changed since it ran, so skipping it would put a run of the old default beside runs
    of the new one under one name. Settings the result did not record (written before they
    were) and cells whose options no longer resolve are not compared."""
    from prefrl.run.config import config_to_dict
    from prefrl.run.resolve import resolve
    from prefrl.run.sweep_report import resolved_settings

    recorded = read_json(result, "cell result")
    try:
        now = resolved_settings(config_to_dict(resolve(cell_config(c, options, result.parent / "run", 1, 1))))
    except ValueError:
        return
    changed = {k: (recorded[k], v) for k, v in now.items() if k in recorded and recorded[k] != v}
    if changed:
        said = "; ".join(f"{k}: {old!r} then, {new!r} now" for k, (old, new) in changed.items())
        raise SystemExit(
            f"{result}: this finished run of {c.name} resolved its defaults otherwise than a run of it "
            f"would now ({said}); move it out of the way to run the cell again, or give a new output "
            "folder for runs of today's defaults"
        )


@dataclass(frozen=True)
class CellFiles:
    """Where one cell runs and what it leaves: its run directory, its result file (the cell is
    finished once it exists), the file its error goes to, and optionally a finished result of
    the same run elsewhere, copied to ``result`` instead of running the cell."""

    run_dir: Path
    result: Path
    error: Path
    reuse: Path | None = None


def sweep_files(out: Path) -> Callable[[Cell], CellFiles]:
    """The layout of ``prefrl sweep``: ``out/cells/<cell>/`` holds ``run/``, ``result.json``
    and ``error.txt``, and ``run.lock`` while a cell runs (:mod:`prefrl.run.cell_guard`)."""

    def files(c: Cell) -> CellFiles:
        d = out / "cells" / c.name
        return CellFiles(d / "run", d / "result.json", d / "error.txt")

    return files


@dataclass
class CellsRun:
    """What :func:`run_cells` did: cells skipped (finished before), reused (result copied from
    elsewhere), run, and failed (name -> error)."""

    cells: int
    skipped: int = 0
    reused: int = 0
    ran: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0


OnResult = Callable[[Cell, Result, Path | None], None]
"""Called in the driver for each cell finished now: (cell, its result, the file it was reused from)."""


def run_cells(
    sc: SweepConfig,
    cells: list[Cell],
    options: Options,
    files: Callable[[Cell], CellFiles],
    on_result: OnResult | None = None,
) -> CellsRun:
    """Run the unfinished ``cells`` as Ray tasks (one per ``sc.cpus_per_cell`` CPUs) where
    ``files`` says, on the Ray of ``sc.address`` or a new local one.

    Cells with a result file are skipped; a cell with a result to reuse gets a copy of it;
    learned cells with a run directory resume from its last checkpoint. A failing cell's
    error goes to its error file and the others go on. Ray starts only when a cell has to run.
    """
    where = {c: files(c) for c in cells}
    outcome = CellsRun(cells=len(cells))
    todo: list[Cell] = []
    for c in cells:
        f = where[c]
        if f.result.exists():
            if c.kind == "learned":
                refuse_stale(c, options, f.result)
            outcome.skipped += 1
        elif f.reuse is not None and f.reuse.exists():
            f.result.parent.mkdir(parents=True, exist_ok=True)
            f.result.write_bytes(f.reuse.read_bytes())
            outcome.reused += 1
            if on_result is not None:
                on_result(c, read_json(f.result, "cell result"), f.reuse)
        else:
            todo.append(c)
    done_before = outcome.skipped + outcome.reused
    t0 = time.perf_counter()
    if todo:
        from prefrl.run.cell_guard import Driver, holder, wait_line

        for c in todo:  # a cell of a killed sweep still running: its cell here waits for it
            pid = holder(where[c].run_dir)
            if pid is not None:
                wait_line(c.name, where[c].run_dir)(pid)
        driver = dataclasses.asdict(Driver.this())
        ray = _ray_init(sc)
        try:
            task = ray.remote(num_cpus=sc.cpus_per_cell, num_gpus=sc.gpus_per_cell, max_retries=0)(run_cell)
            threads = max(1, int(sc.cpus_per_cell))
            pending = {
                task.remote(
                    dataclasses.asdict(c),
                    options,
                    str(where[c].run_dir),
                    str(where[c].result),
                    sc.eval_episodes,
                    threads,
                    driver,
                ): c
                for c in todo
            }
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                for ref in ready:
                    c = pending.pop(ref)
                    f = where[c]
                    try:
                        res = ray.get(ref)
                    except Exception as e:  # the cell's own error, with its traceback
                        msg = "".join(traceback.format_exception_only(type(e), e)).strip()
                        outcome.failed[c.name] = msg
                        f.error.parent.mkdir(parents=True, exist_ok=True)
                        f.error.write_text(str(e))
                        print(
                            f"\nprefrl sweep: cell {c.name} failed: {msg.splitlines()[-1][:300]}",
                            file=sys.stderr,
                        )
                        continue
                    outcome.ran += 1
                    f.error.unlink(missing_ok=True)  # an error of an earlier attempt
                    if on_result is not None:
                        on_result(c, res, None)
                if sc.progress:
                    line = (
                        f"cells: {done_before + outcome.ran}/{len(cells)} done ({done_before} before), "
                        f"{len(pending)} running or queued, {len(outcome.failed)} failed, "
                        f"{time.perf_counter() - t0:.0f} s"
                    )
                    print(f"\r{line}", end="", file=sys.stderr, flush=True)
            if sc.progress:
                print(file=sys.stderr)
        finally:
            ray.shutdown()
    outcome.wall_s = time.perf_counter() - t0
    return outcome


class SweepSummary(TypedDict):
    """What :func:`run_sweep` did: cells in all, skipped (finished before or reused), run now,
    failed (name -> error), its wall time, and the finished learned cells in the summary table."""

    cells: int
    skipped: int
    ran: int
    failed: dict[str, str]
    wall_s: float
    results: int
    table: str


def check_grid(sc: SweepConfig) -> None:
    """Refuse a grid with nothing in it, before anything runs."""
    if not sc.env or not sc.labels or not sc.out:
        raise ValueError("give --env ID [ID ...], --labels N [N ...] and --out DIR")
    if sc.seeds < 1 or min(sc.labels) < 1:
        raise ValueError("--seeds and every --labels must be >= 1")
    if sc.first_seed < 0:
        raise ValueError("--first-seed must be >= 0")


def run_sweep(sc: SweepConfig) -> SweepSummary:
    """Run (or finish) a sweep; returns ``{"done", "skipped", "failed", "results", ...}``."""
    check_grid(sc)
    try:
        options = parse_options(sc.set)
    except ValueError as e:
        raise ValueError(f"--set {e}") from None
    fixed = sorted(set(options) & set(SET_BY_SWEEP))
    if fixed:
        raise ValueError(
            f"--set {fixed}: set by the sweep's grid (--env, --labels, --seeds, --teacher, --steps)"
        )
    learned, oracle = grid(sc, options)
    out = Path(sc.out)
    _check_out(out, sc, options)
    cells = oracle + learned
    ran = run_cells(sc, cells, options, sweep_files(out))
    from prefrl.run.sweep_report import write_reports

    summary = write_reports(out, learned, oracle, sc.eval_episodes)
    return {
        "cells": ran.cells,
        "skipped": ran.skipped + ran.reused,
        "ran": ran.ran,
        "failed": ran.failed,
        "wall_s": ran.wall_s,
        "results": summary["results"],
        "table": summary["table"],
    }
