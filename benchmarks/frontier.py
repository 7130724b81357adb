"""The field's own benchmark: DeepMind Control at 100 oracle labels, beside PEBBLE, SURF, RUNE, QPA, PPE.

    python benchmarks/frontier.py --task walker_walk --seeds 3 --jobs 2 --out ../frontier-runs
    python benchmarks/frontier.py --table --out ../frontier-runs --copy-to benchmarks/results/frontier

Three runs per task and seed, each the same agent (SBX SAC, 256x256 networks; the papers used
1024x1024, which is ~8x slower per step on a CPU):

* ``protocol``: the published protocol (PPE Table 10, QPA's and MRN's scripts): 1,000 random
  steps, 9,000 steps of unsupervised (state-entropy) pre-training, then 10 oracle labels every
  20,000 steps until the 100 are in, 50-step clips; everything else prefrl's defaults.
* ``defaults``: prefrl's own defaults (its label schedule, no pre-training), same budget.
* ``true``: the same agent on the true reward (the papers give no such column).

Every run evaluates its policy on the true reward every 10,000 steps over 10 episodes; a result
gives the mean of the last 10 evaluations (the papers' figure) and the final policy's return
over 10 episodes. Runs are resumable: run the same command again after a kill and each run
continues from its last checkpoint; a finished run (its ``<side>-seed<k>.json``) is skipped.
Run directories go under ``--out`` (keep it outside the checkout); ``--table`` prints the table
in Markdown and, last, as JSON, and copies the result files to ``--copy-to``
(``benchmarks/results/frontier/`` to commit them).

Published numbers: PPE (NeurIPS 2025), Table 1 (baselines from their official code, 5 seeds,
oracle teacher, 50-step segments; mean of the last 10 evaluations; episode return, max 1000).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from prefrl.agents.evaluate import evaluate_returns
from prefrl.agents.policy_io import load_agent, save_agent
from prefrl.agents.sb3 import AgentConfig, load_replay_buffer, make_agent, make_vec_env, save_replay_buffer
from prefrl.run.machine import machine_record
from prefrl.storage.checkpoint import dumps, write_json
from prefrl.training.evaluations import last_mean

TASKS: dict[str, dict[str, Any]] = {
    "walker_walk": {"env": "dm_control/walker-walk-v0", "steps": 500_000},
    "cheetah_run": {"env": "dm_control/cheetah-run-v0", "steps": 1_000_000},
}
PUBLISHED: dict[str, dict[str, float]] = {
    "walker_walk": {"PEBBLE": 453, "SURF": 661, "RUNE": 415, "QPA": 796, "PPE": 908},
    "cheetah_run": {"PEBBLE": 546, "SURF": 557, "RUNE": 509, "QPA": 579, "PPE": 645},
}
SOURCE = "PPE (NeurIPS 2025), Table 1: official code of each baseline, 5 seeds, oracle teacher"
SIDES = ("protocol", "defaults", "true")
LABELS = 100
EVAL_INTERVAL = 10_000
EVAL_EPISODES = 10
RANDOM_STEPS, PRETRAIN_STEPS = 1_000, 9_000
ROUND_LABELS, ROUND_STEPS = 10, 20_000
CHECKPOINT_EVERY = 5
"""Iterations (of 10,000 steps) between checkpoints: a replay buffer of 10^6 steps is ~200 MB."""


def agent_config() -> AgentConfig:
    """The agent of every side: SBX SAC, 256x256, learning rate 5e-4 (the papers' on walker and
    cheetah), a replay buffer holding the whole run."""
    return AgentConfig(algo="sac", backend="sbx", net_arch=[256, 256], learning_rate=5e-4,
                       batch_size=256, buffer_size=1_000_000)  # fmt: skip


def learned_config(
    task: str, side: str, seed: int, run: Path, steps: int, labels: int, options: dict[str, Any] | None = None
) -> Any:
    """The ``prefrl train`` config of a learned side (``protocol`` or ``defaults``), with the
    ``--loop`` ``options`` (LoopConfig fields) set last."""
    from prefrl.envs.config import EnvConfig
    from prefrl.preference.trainer import RewardTrainerConfig
    from prefrl.run.config import TrainConfig
    from prefrl.training.config import LoopConfig

    loop: dict[str, Any] = {"total_steps": steps, "total_labels": labels, "fragment_length": 50,
                            "checkpoint_interval": CHECKPOINT_EVERY}  # fmt: skip
    trainer = RewardTrainerConfig()
    if side == "protocol":
        # the papers' 1,000 random steps, and the reward fit of the protocol's first seeds (no
        # L2): prefrl's defaults since 2026-11-26 are the `defaults` side's
        loop.update(initial_steps=RANDOM_STEPS, pretrain_steps=PRETRAIN_STEPS, initial_steps_per_label=0,
                    iterations=max(1, (steps - RANDOM_STEPS - PRETRAIN_STEPS) // EVAL_INTERVAL),
                    labels_per_round=ROUND_LABELS, round_interval=ROUND_STEPS // EVAL_INTERVAL)  # fmt: skip
        trainer = RewardTrainerConfig(l2_init=0.0)
    loop.update(options or {})
    return TrainConfig(seed=seed, run_dir=str(run), force=True, progress=False, eval_episodes=EVAL_EPISODES,
                       eval_interval=EVAL_INTERVAL, agent=agent_config(), loop=LoopConfig(**loop),
                       env=EnvConfig(id=TASKS[task]["env"]), trainer=trainer)  # fmt: skip


def run_learned(
    task: str, side: str, seed: int, run: Path, steps: int, labels: int, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Train (or resume) one learned run; its result."""
    from prefrl.run.config import parse_args
    from prefrl.run.train import train

    if (run / "config.json").exists():
        cfg = parse_args(["--resume", str(run), "--no-progress"])
    else:
        cfg = learned_config(task, side, seed, run, steps, labels, options)
    rep = train(cfg)
    return {"final_return": rep["true_return"], "last10_mean": rep.get("eval_last10_mean"),
            "evaluations": rep.get("evaluations", []), "labels_used": rep["labels_used"],
            "train_wall_s": rep["train_wall_s"], "reward_accuracy": rep.get("reward_accuracy")}  # fmt: skip


def run_true(task: str, seed: int, run: Path, steps: int) -> dict[str, Any]:
    """Train (or resume) the agent on the true reward, evaluating every :data:`EVAL_INTERVAL`
    steps and saving a checkpoint (policy, replay buffer, state) every :data:`CHECKPOINT_EVERY`."""
    env_id, cfg = TASKS[task]["env"], agent_config()
    run.mkdir(parents=True, exist_ok=True)
    state_path = run / "state.json"
    venv = make_vec_env(env_id, 1, None, seed=seed)
    state: dict[str, Any] = {"steps": 0, "evaluations": [], "wall_s": 0.0}
    if state_path.exists():
        state = json.loads(state_path.read_text())
        agent = load_agent(cfg.algo, run / "policy.zip", venv, backend=cfg.backend, config=cfg)
        load_replay_buffer(agent.replay_buffer, run / "replay_buffer.npz")
    else:
        agent = make_agent(cfg, venv, seed=seed, learning_starts=RANDOM_STEPS)
    t0 = time.perf_counter() - state["wall_s"]
    while state["steps"] < steps:
        n = min(EVAL_INTERVAL - state["steps"] % EVAL_INTERVAL, steps - state["steps"])
        agent.learn(n, reset_num_timesteps=state["steps"] == 0, progress_bar=False)
        state["steps"] += n
        k = len(state["evaluations"])
        ret = float(evaluate_returns(env_id, agent, EVAL_EPISODES, seed=10_000 + k).mean())
        state["evaluations"].append([state["steps"], ret])
        state["wall_s"] = time.perf_counter() - t0
        if len(state["evaluations"]) % CHECKPOINT_EVERY == 0 or state["steps"] >= steps:
            save_agent(agent, run / "policy.zip", cfg)
            save_replay_buffer(agent.replay_buffer, run / "replay_buffer.npz")
            write_json(state_path, state)
        print(
            f"{task} true seed {seed}: {state['steps']} steps, return {ret:.1f}", file=sys.stderr, flush=True
        )
    final = float(evaluate_returns(env_id, agent, EVAL_EPISODES).mean())
    evals = [(int(t), float(r)) for t, r in state["evaluations"]]
    return {"final_return": final, "last10_mean": last_mean(evals), "evaluations": state["evaluations"],
            "labels_used": 0, "train_wall_s": state["wall_s"]}  # fmt: skip


def run_one(a: argparse.Namespace) -> int:
    """One run (``--side`` and ``--seed``): train or resume it, write its result file."""
    root = Path(a.out) / a.task
    steps = a.steps or TASKS[a.task]["steps"]
    run, result = root / f"{a.side}-seed{a.seed}", root / f"{a.side}-seed{a.seed}.json"
    if result.exists():
        return 0
    t0 = time.perf_counter()
    if a.side == "true":
        res = run_true(a.task, a.seed, run, steps)
    else:
        res = run_learned(a.task, a.side, a.seed, run, steps, a.labels, a.loop_options)
        res["loop_options"] = a.loop_options
    res.update(task=a.task, env=TASKS[a.task]["env"], side=a.side, seed=a.seed, steps=steps, labels=a.labels,
               agent=dataclasses.asdict(agent_config()), wall_s=time.perf_counter() - t0,
               machine=machine_record())  # fmt: skip
    write_json(result, res)
    return 0


def run_all(a: argparse.Namespace) -> int:
    """Every (side, seed) of ``--task`` not finished yet, ``--jobs`` at a time, each in its own
    process (one torch/JAX thread each), unfinished ones resuming from their checkpoints."""
    from prefrl.run.jobs import run_jobs, unfinished

    root = Path(a.out) / a.task
    jobs = []
    for side, seed in unfinished(root, a.sides, range(a.first_seed, a.first_seed + a.seeds)):
        cmd = [sys.executable, __file__, "--task", a.task, "--side", side, "--seed", str(seed),
               "--out", a.out, "--labels", str(a.labels)]  # fmt: skip
        cmd += ["--steps", str(a.steps)] if a.steps else []
        jobs.append((f"{side}-seed{seed}", cmd + [f"--loop={item}" for item in a.loop]))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    return 1 if run_jobs(jobs, root, a.jobs, env, label=a.task) else 0


def summarize(out: Path, copy_to: Path | None) -> dict[str, Any]:
    """Per task and side: seeds, median and mean of the last-10 means and of the final returns."""
    table: dict[str, Any] = {}
    for task in TASKS:
        rows: dict[str, Any] = {}
        for side in SIDES:
            found = [
                p for p in sorted((out / task).glob(f"{side}-seed*.json")) if ".progress" not in p.suffixes
            ]
            res = [json.loads(p.read_text()) for p in found]
            if copy_to is not None and found:
                (copy_to / task).mkdir(parents=True, exist_ok=True)
                for p in found:
                    (copy_to / task / p.name).write_bytes(p.read_bytes())
                    (copy_to / task / f"{p.stem}.progress.json").unlink(missing_ok=True)  # superseded
            if res:
                last10 = [r["last10_mean"] for r in res]
                final = [r["final_return"] for r in res]
                rows[side] = {
                    "seeds": [r["seed"] for r in res], "last10": last10, "final": final,
                    "median_last10": float(np.median(last10)), "mean_last10": float(np.mean(last10)),
                    "median_final": float(np.median(final)), "labels": [r["labels_used"] for r in res],
                    "steps": res[0]["steps"],
                }  # fmt: skip
        running = {side: in_progress(out / task, side) for side in SIDES}
        running = {side: runs for side, runs in running.items() if runs}
        if copy_to is not None:
            for side, runs in running.items():
                (copy_to / task).mkdir(parents=True, exist_ok=True)
                for r in runs:
                    write_json(copy_to / task / f"{side}-seed{r['seed']}.progress.json", r)
        table[task] = {"published": PUBLISHED[task], "prefrl": rows, "in_progress": running}
    return table


def in_progress(task_dir: Path, side: str) -> list[dict[str, Any]]:
    """Runs of ``side`` without a result yet: ``{"seed", "steps", "evaluations"}`` from what they
    have written so far (a learned run's ``evaluations.csv``, a true-reward run's ``state.json``)."""
    runs = []
    for run in sorted(task_dir.glob(f"{side}-seed*")):
        if not run.is_dir() or (task_dir / f"{run.name}.json").exists():
            continue
        evals: list[list[float]] = []
        if (run / "evaluations.csv").exists():
            rows = run.joinpath("evaluations.csv").read_text().splitlines()[1:]
            evals = [[int(r.split(",")[0]), float(r.split(",")[1])] for r in rows if r]
        elif (run / "state.json").exists():
            evals = json.loads((run / "state.json").read_text()).get("evaluations", [])
        if evals:
            runs.append({"seed": int(run.name.rsplit("seed", 1)[1]), "steps": int(evals[-1][0]),
                         "evaluations": evals})  # fmt: skip
    return runs


def markdown(table: dict[str, Any]) -> str:
    """The published table with prefrl's rows beside it (median of seeds, the worst seed and the
    number of seeds)."""
    names = list(next(iter(PUBLISHED.values())))
    head = ["DMC task", "labels / steps", *names, "prefrl protocol", "prefrl defaults", "prefrl true reward"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for task, t in table.items():
        cells = [
            task,
            f"{LABELS} / {TASKS[task]['steps'] // 1000}k",
            *[str(t["published"][n]) for n in names],
        ]
        for side in SIDES:
            r = t["prefrl"].get(side)
            going = t.get("in_progress", {}).get(side, [])
            if r is not None:
                n = len(r["seeds"])  # the worst seed beside the median, as every benchmark table
                cells.append(f"{r['median_last10']:.0f} " + (f"(worst {min(r['last10']):.0f}, {n} seeds)"
                                                              if n > 1 else "(1 seed)"))  # fmt: skip
            elif going:
                now = ", ".join(f"{g['evaluations'][-1][1]:.0f} at {g['steps'] // 1000}k" for g in going)
                cells.append(f"running: {now}")
            else:
                cells.append("—")
        lines.append("| " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + f"\n\nPublished: {SOURCE}. prefrl: median over seeds of the mean of the last 10 evaluations"
        + " (and the worst seed's)."
    )


def runs_table(out: Path) -> str:
    """Every finished run under ``out`` (``<task>/<side>-seed<k>.json``), one row each: its mean of
    the last 10 evaluations, its final policy, the first evaluation at or above the best published
    figure (PPE's), the lowest evaluation from there on, and its training hours."""
    head = ["DMC task", "side", "seed", "labels", "mean of last 10 evaluations", "final policy",
            "first evaluation >= the best published (steps)", "lowest evaluation after it",
            "training hours (one core)"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for task in TASKS:
        best = max(PUBLISHED[task].values())
        for side in SIDES:
            found = [
                p for p in sorted((out / task).glob(f"{side}-seed*.json")) if ".progress" not in p.suffixes
            ]
            for r in (json.loads(f.read_text()) for f in found):
                evals = r["evaluations"]  # [[step, return], ...]
                reach = next((i for i, (_, v) in enumerate(evals) if v >= best), None)
                first = "never" if reach is None else f"{evals[reach][0] // 1000:.0f}k"
                low = "–" if reach is None else f"{min(v for _, v in evals[reach:]):.0f}"
                labels = str(r["labels_used"]) if side != "true" else "–"
                hours = f"{r['train_wall_s'] / 3600:.1f}"
                cells = [task, side, str(r["seed"]), labels, f"{r['last10_mean']:.1f}",
                         f"{r['final_return']:.1f}", first, low, hours]  # fmt: skip
                lines.append("| " + " | ".join(cells) + " |")
    bests = ", ".join(f"{task} {max(PUBLISHED[task].values())}" for task in TASKS)
    return "\n".join(lines) + f"\n\nThe best published figure ({bests}): {SOURCE}."


def options_table(defaults: Path, options: Path) -> str:
    """Learned runs with ``--loop`` options beside the same seeds without them: one row per task,
    side and option set found under ``options`` (``<options>/<task>/<side>-seed<k>.json``, the
    options as the result files name them), each seed's mean of the last 10 evaluations, then
    the same seeds' under ``defaults`` (the committed runs of the table above). A run that has
    not finished (its ``.progress.json``, beside finished runs that name the options) is given as
    the mean of its last 3 evaluations and the steps it reached, beside the mean of the committed
    run's evaluations at the same steps."""
    rows: dict[tuple[str, str, str], list[tuple[int, str, str]]] = {}
    for found in sorted(options.glob("*/*/*-seed*.json")):
        if found.name.endswith(".progress.json"):
            continue
        r = json.loads(found.read_text())
        base = defaults / r["task"] / f"{r['side']}-seed{r['seed']}.json"
        without = f"{json.loads(base.read_text())['last10_mean']:.0f}" if base.exists() else "not run"
        rows.setdefault(_options_key(r), []).append((r["seed"], f"{r['last10_mean']:.0f}", without))
    for found in sorted(options.glob("*/*/*-seed*.progress.json")):
        r = json.loads(found.read_text())
        task, side = found.parent.name, found.name.split("-seed")[0]
        finished = [json.loads(p.read_text()) for p in found.parent.glob(f"{side}-seed*.json")
                    if not p.name.endswith(".progress.json")]  # fmt: skip
        if not finished:  # the options are named by the finished runs' result files
            continue
        last = r["evaluations"][-3:]
        at = {int(step) for step, _ in last}
        base = defaults / task / f"{side}-seed{r['seed']}.json"
        evals = json.loads(base.read_text())["evaluations"] if base.exists() else []
        same = [v for step, v in evals if int(step) in at]
        reached = f" (at {r['steps'] // 1000}k)"
        with_ = f"{np.mean([v for _, v in last]):.0f}{reached}"
        without = f"{np.mean(same):.0f} at the same steps" if len(same) == len(last) else "not run"
        rows.setdefault(_options_key(finished[0]), []).append((r["seed"], with_, without))
    head = ["DMC task", "side", "options", "with the options (per seed)", "without (the same seeds)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (task, side, opts), seeds in rows.items():
        seeds.sort()
        with_ = ", ".join(f"seed {k}: {v}" for k, v, _ in seeds)
        without = ", ".join(f"seed {k}: {w}" for k, _, w in seeds)
        lines.append(f"| {task} | {side} | {opts} | {with_} | {without} |")
    return "\n".join(lines)


def _options_key(result: dict[str, Any]) -> tuple[str, str, str]:
    """(task, side, the ``--loop`` options as the table writes them) of a result file."""
    opts = " ".join(
        f"`--loop {k}={json.dumps(v)}`" for k, v in sorted(result.get("loop_options", {}).items())
    )
    return result["task"], result["side"], opts or "–"


def loop_options(items: list[str], p: argparse.ArgumentParser) -> dict[str, Any]:
    """``--loop NAME=VALUE`` items as LoopConfig fields (parsed as ``prefrl sweep`` parses its
    options); another section's option, an unknown name or a value LoopConfig refuses is a
    one-line error."""
    from prefrl.run.options import parse_options
    from prefrl.training.config import LoopConfig

    try:
        opts = parse_options(items, bare="loop")
        if other := [k for k in opts if "." in k]:
            raise ValueError(f"{other[0]!r}: only LoopConfig fields (bare names) are taken here")
        LoopConfig(**opts)
    except (TypeError, ValueError) as e:
        p.error(f"--loop: {e}")
    return opts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=list(TASKS), default="walker_walk", help="DMC task")
    p.add_argument("--seeds", type=int, default=3, help="seeds first_seed .. first_seed+seeds-1")
    p.add_argument("--first-seed", type=int, default=0, help="the first seed")
    p.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES), help="which runs of each seed")
    p.add_argument("--side", choices=SIDES, default=None, help="run only this side of --seed in this process")
    p.add_argument("--seed", type=int, default=None, help="with --side: the seed (default 0)")
    p.add_argument(
        "--steps", type=int, default=None, help="environment steps (default: the task's published)"
    )
    p.add_argument("--labels", type=int, default=LABELS, help="label budget of the learned runs")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)), help="runs at a time")
    p.add_argument(
        "--out", default="../frontier-runs", help="folder of the run directories (outside the checkout)"
    )
    p.add_argument("--loop", action="append", default=[], metavar="NAME=VALUE",
                   help="a LoopConfig option of the learned sides, set last (repeatable; VALUE as "
                        "JSON, else text), e.g. watch_against_older_early=true; give such runs an --out "
                        "of their own: a run resumes with the options it started with")  # fmt: skip
    p.add_argument("--table", action="store_true", help="only print the table of the results found")
    p.add_argument("--copy-to", default=None, metavar="DIR",
                   help="with --table: also copy the result files there (to commit them)")  # fmt: skip
    a = p.parse_args(argv)
    a.loop_options = loop_options(a.loop, p)
    if a.table:
        table = summarize(Path(a.out), None if a.copy_to is None else Path(a.copy_to))
        print(markdown(table))
        print(dumps(table))
        return 0
    if a.side is not None:
        a.seed = 0 if a.seed is None else a.seed
        return run_one(a)
    if a.seed is not None:  # the driver would run seeds --first-seed.. instead, beside that seed's run
        p.error("--seed goes with --side; for one seed of the driver, --first-seed K --seeds 1")
    return run_all(a)


if __name__ == "__main__":
    sys.exit(main())
