"""Label efficiency: learned-reward training vs the oracle (true reward), same agent and steps.

    python benchmarks/label_efficiency.py --env Pendulum-v1 --labels 20 --steps 15000 --seeds 3

For each seed it trains with a learned reward (``prefrl train``) and, with the same agent
and number of steps, on the true reward (the oracle), evaluates both on the true reward,
and prints as its last line one JSON object with ``median_normalized_score``, ``scores``
(per seed), ``oracle_return``, ``random_return``, ``learned_return`` and ``wall_s``, where
score = (return - random) / (oracle - random). Every final policy is saved in SB3's own
format inside its run directory.

The runs are cells of ``prefrl sweep`` (prefrl.run.sweep.run_cells): Ray tasks on a local
Ray on all cores (one run per core, seeds in parallel), or on an existing Ray cluster with
--address. Run again, a killed or finished benchmark skips the runs whose result file
exists and resumes unfinished learned runs from their last checkpoint; an oracle run
finished for another label budget, teacher or option set under --out is reused.
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
import torch

from prefrl.agents.evaluate import DETERMINISTIC, evaluate_returns, evaluation_mode
from prefrl.agents.policy_io import load_agent
from prefrl.agents.sb3 import ALGOS, check_env_id, make_env, make_vec_env, resolve_algo
from prefrl.run.config import TrainConfig
from prefrl.run.machine import machine_label
from prefrl.run.options import apply_options as apply_sweep_options
from prefrl.run.options import parse_options
from prefrl.run.sweep import (
    SET_BY_SWEEP,
    Cell,
    CellFiles,
    SweepConfig,
    grid,
    reference_env_kwargs,
    run_cells,
)
from prefrl.run.sweep_report import normalized_score, worst_seed
from prefrl.storage.checkpoint import dumps, write_json
from prefrl.teachers import PRESETS
from prefrl.training.config import LoopConfig

DEFAULT_ITERATIONS = 14


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="Pendulum-v1", help="any Gymnasium environment id")
    p.add_argument("--labels", type=int, default=20, help="label budget per run")
    p.add_argument("--steps", type=int, default=15_000, help="environment steps per run")
    p.add_argument("--seeds", type=int, default=3, help="number of seeds (0 .. N-1)")
    p.add_argument("--agent", default="auto", choices=["auto", *sorted(ALGOS)],
                   help="RL agent (auto: sac for continuous actions, ppo otherwise)")  # fmt: skip
    p.add_argument("--teacher", default="oracle", choices=list(PRESETS), help="simulated teacher preset")
    p.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help="reward-update iterations (named in the output directory unless the default)",
    )
    p.add_argument("--eval-episodes", type=int, default=10, help="evaluation episodes per policy")
    p.add_argument("--out", default="runs/label_efficiency", help="directory for the run directories")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads per run (Ray reserves as many CPUs for each run)")  # fmt: skip
    p.add_argument("--first-seed", type=int, default=0, help="seeds run are first_seed .. first_seed+seeds-1")
    p.add_argument(
        "--only",
        default="both",
        choices=["both", "learned", "oracle"],
        help="run only one side (to spread the runs over processes or clusters; combine with --combine)",
    )
    p.add_argument("--combine", action="store_true",
                   help="only combine the per-seed results found in --out (a learned seed without its "
                        "true-reward result gets a copy of one found under --out, as runs do)")  # fmt: skip
    p.add_argument("--address", default=None, metavar="HOST:PORT",
                   help="run on an existing Ray cluster (ray start --head prints its address; --out must be "
                        "a folder every node can write); default: a new local Ray on all cores")  # fmt: skip
    p.add_argument("--method", default="baseline", type=method_name, metavar="{" + ",".join(METHODS) + "}",
                   help="a preset of techniques for the learned runs (see METHODS; --loop options are "
                        "applied on top); named in the output directory unless baseline")  # fmt: skip
    p.add_argument("--loop", action="append", default=[], metavar="NAME=VALUE",
                   help="set an option of the learned runs (JSON value): a LoopConfig field, e.g. "
                        "end_clip_frac=0.25, or SECTION.NAME for another section of `prefrl train`'s "
                        "config (trainer, reward, agent, env), e.g. trainer.weight_decay=0.001; "
                        "repeatable; named in the output directory")  # fmt: skip
    a = p.parse_args(argv)
    check_env_id(a.env)
    probe = make_env(a.env)
    a.agent = resolve_algo(a.agent, probe.action_space)  # learned and oracle: the same agent
    probe.close()
    torch.set_num_threads(a.threads)
    t_all = time.perf_counter()
    explicit = parse_loop_options(a.loop)
    a.loop_options = {**METHODS[a.method], **explicit}
    named: dict[str, object] = dict(explicit)
    if a.method != "baseline":
        named["method"] = a.method
    if a.iterations != DEFAULT_ITERATIONS:  # a non-default schedule is part of the configuration
        named["iterations"] = a.iterations
    suffix = "".join(f"-{k}={v}" for k, v in sorted(named.items()))
    out = Path(a.out) / f"{a.env}-{a.agent}-{a.teacher}-{a.labels}l-{a.steps}s{suffix}"
    a.env_kwargs = reference_env_kwargs({sweep_name(k): v for k, v in a.loop_options.items()})
    a.evaluation = evaluation_mode(a.env, a.env_kwargs)
    random_ret = float(evaluate_returns(a.env, None, a.eval_episodes, env_kwargs=a.env_kwargs).mean())
    if a.combine:
        adopt_oracles(out, Path(a.out), a.env, a.agent, a.steps, a.env_kwargs, a.evaluation)
    else:
        failed = run_seeds(a, out)
        if failed:
            print(f"{out}: {len(failed)} run(s) failed ({', '.join(failed)}; errors in seed*-error.txt); "
                  "run the same command again to retry them", file=sys.stderr)  # fmt: skip
            return 1
    have = [list(out.glob(f"seed*-{side}.json")) for side in ("learned", "oracle")]
    if a.only != "both" and not all(have):
        print(f"{out}: {a.only} results written; score them with --combine once the other side is done",
              file=sys.stderr)  # fmt: skip
        return 0
    reevaluate(out, a.env, a.agent, a.env_kwargs, a.eval_episodes)
    res = combine(out, random_ret)
    res.update(env=a.env, agent=a.agent, teacher=a.teacher, labels=a.labels, steps=a.steps,
               iterations=a.iterations, loop_options=a.loop_options, method=a.method,
               wall_s=time.perf_counter() - t_all)  # fmt: skip
    write_json(out / "result.json", res)
    print(dumps(res))
    return 0


SECTIONS = ("loop", "trainer", "reward", "agent", "env")

SURF = {
    "trainer.crop_min_frac": 0.7,
    "trainer.pseudo_label_ratio": 1.0,
    "trainer.pseudo_label_threshold": 0.99,
}
UNIFORM = {"active_selection": False}
"""Uniform queries: the technique presets ask like the runs of their ablation column so far (the
default until 2026-11-25), so a new run compares with the old ones like for like."""
WARM = {"active_selection": True, "uncertainty_measure": "probability", "active_selection_from": 30}
"""Today's query selection (disagreement once 30 labels prefer a clip), spelled out: the presets
built on today's defaults name it, so their results are told apart from uniform-query ones."""
GATED = {"exploration_bonus": 3.0, "exploration_bonus_gate": 0.75, "exploration_bonus_schedule": "labels"}
"""The exploration bonus ``prefrl train`` resolves where random episodes only meet time limits and
the reward reads state vectors (since 2026-11-30), spelled out as the runs record it."""
MEASURED: dict[str, dict[str, object]] = {
    "baseline": {},  # today's defaults (disagreement after a 30-label warm-up since 2026-11-25;
    # a broad first reward where random episodes are long since 2026-11-26, and there the gated
    # bonus on state rewards since 2026-11-30)
    "crop": {**UNIFORM, "trainer.crop_min_frac": 0.7},  # SURF's temporal cropping alone
    "pseudo": {**UNIFORM, **{k: v for k, v in SURF.items() if "pseudo" in k}},  # SURF's pseudo-labels alone
    "surf": {**UNIFORM, **SURF},
    "rime": {**UNIFORM, "trainer.noise_filter": True},
    "rune": {**UNIFORM, "exploration_bonus": 0.05, "exploration_bonus_decay": 1e-5},
    "qpa": {**UNIFORM, "agent.hybrid_replay": 0.5},  # queries already come from the latest episodes
    # disagreement query selection by PEBBLE's measure, the spread of the members' probabilities
    # from the first query after the initial batch (PEBBLE's way)
    "active": {"active_selection": True, "uncertainty_measure": "probability", "active_selection_from": 0},
    # the same once the reward has been trained on 30 labels (uniform queries before)
    "active_warm": WARM,
    # half of each iteration's queries by disagreement, half uniformly (from the first query)
    "active_mixed": {"active_selection": True, "uncertainty_measure": "probability",
                     "active_selection_from": 0, "active_selection_share": 0.5},
    # the same by the variance of the members' logits (the measure's default before 2026-11-25)
    "active_logit": {"active_selection": True, "uncertainty_measure": "logit", "active_selection_from": 0},
    "pretrain": {**UNIFORM, "pretrain_steps": 10_000},  # PEBBLE's state-entropy exploration first
    "reed": {**UNIFORM, "reward.kind": "reed"},  # REED's dynamics-aware (self-predictive) reward encoder
    # PPE's mixture queries on today's defaults: half of each round's pairs from earlier episodes
    "mixture": {**WARM, "archive_share": 0.5},
    "smoothing": {**WARM, "trainer.label_smoothing": 0.1},  # SEER's label smoothing on today's defaults
    "pessimism": {**WARM, "uncertainty_penalty": 0.5},  # the ensemble's std taken off the agent's reward
    "front": {**WARM, "query_schedule": "front"},  # every label asked in the run's first third
    # a broad first reward: 100 random steps per label (up to a tenth of the run) before the
    # first query, and an L2 penalty of 0.01 on the reward fit (today's default where random
    # episodes only meet time limits; this preset turns it on everywhere)
    "broad": {**WARM, "initial_steps_per_label": 100, "trainer.l2_init": 0.01},
    # RUNE's bonus at 3, fading with the labels and gated by the fresh labels' accuracy at 0.75, on
    # a broad first reward (today's default where random episodes only meet time limits and the
    # reward reads state vectors, since 2026-11-30)
    "gated": {**WARM, "initial_steps_per_label": 100, "trainer.l2_init": 0.01, **GATED},
    # varied-size random actions before the first query (removed from prefrl: docs/techniques.md,
    # "Removed"); kept here only so that their committed results keep their ablation columns
    "varied": {**WARM, "random_action_size": "varied"},
    "varied_mixed": {**WARM, "random_action_size": "mixed"},  # half of those sizes full
    "all": {**UNIFORM, **SURF, "trainer.noise_filter": True, "exploration_bonus": 0.05,
            "exploration_bonus_decay": 1e-5, "agent.hybrid_replay": 0.5},
}  # fmt: skip
"""Every preset whose results are committed (``benchmarks/results/``), in the ablation table's
column order: the option sets of the learned runs, as ``--loop`` takes them. The ablation and the
full table (``ablation.py``, ``summarize.py``) read a result's preset here, so a preset that
``--method`` no longer offers keeps its column and its name."""

METHODS: dict[str, dict[str, object]] = {
    name: MEASURED[name]
    for name in ("baseline", "surf", "rime", "rune", "qpa", "pretrain", "mixture", "smoothing", "pessimism")
}
"""The presets ``--method`` offers (at most 10, docs/techniques.md, "What happens to a technique"):
today's defaults, and one preset for each published technique that has not lost every row it was
measured on. The other presets of :data:`MEASURED` run as their ``--loop`` options
(:data:`RETIRED`)."""

REMOVED_OPTIONS = ("random_action_size",)
"""Options that presets of :data:`MEASURED` name and prefrl no longer has."""
RETIRED = {name: options for name, options in MEASURED.items() if name not in METHODS}
"""Presets ``--method`` no longer offers, with the options that still run them (``varied`` and
``varied_mixed`` name an option that was removed: they run no more)."""


def loop_spelling(options: dict[str, object]) -> str:
    """A preset's options as ``--loop`` arguments: ``--loop active_selection=false ...``."""
    return " ".join(f"--loop {k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in options.items())


def method_name(name: str) -> str:
    """``--method NAME``: a preset of :data:`METHODS`; a retired one is refused with the ``--loop``
    options that run it (or, where they name a removed option, with where the docs keep it)."""
    if name in METHODS:
        return name
    if name in RETIRED:
        if any(k in REMOVED_OPTIONS for k in RETIRED[name]):
            raise argparse.ArgumentTypeError(
                f"preset {name!r} names an option removed from prefrl (docs/techniques.md, Removed)"
            )
        raise argparse.ArgumentTypeError(
            f"preset {name!r} is no longer offered; run it as {loop_spelling(RETIRED[name])}"
        )
    raise argparse.ArgumentTypeError(f"unknown preset {name!r}; choose from {', '.join(METHODS)}")


def parse_loop_options(items: list[str]) -> dict[str, object]:
    """``["name=value", "trainer.name=value", ...]`` -> options of the learned runs, with clear errors.

    A bare name is a LoopConfig field; ``section.name`` names a field of that section of
    :class:`TrainConfig`. Keys come back as given (bare for the loop).
    """
    bad = [i for i in items if i.partition("=")[0].rpartition(".")[0] not in ("", *SECTIONS)]
    try:
        if bad:
            raise ValueError(f"{bad[0]!r}: expected NAME=VALUE naming an option of prefrl train")
        opts = parse_options(items, bare="loop")
    except ValueError as e:
        loop_fields = sorted(f.name for f in dataclasses.fields(LoopConfig))
        raise SystemExit(
            f"--loop {e} (NAME: a LoopConfig field, or SECTION.NAME with SECTION one of {list(SECTIONS)}); "
            f"loop fields: {loop_fields}"
        ) from None
    fixed = sorted(k for k in opts if sweep_name(k) in (*SET_BY_SWEEP, "agent.algo"))
    if fixed:
        raise SystemExit(f"--loop {fixed}: set by the benchmark's flags (--env, --labels, --steps, --agent)")
    return opts


def sweep_name(name: str) -> str:
    """A ``--loop`` option's name as the sweep takes it (a bare name is a loop option)."""
    return name if "." in name else f"loop.{name}"


def apply_options(cfg: TrainConfig, options: dict[str, object]) -> TrainConfig:
    """``cfg`` with parsed ``--loop`` options set (lists become tuples where the default is one)."""
    return apply_sweep_options(cfg, options, bare="loop")


def find_oracle(root: Path, env: str, agent: str, steps: int, seed: int,
                env_kwargs: dict[str, Any] | None = None,
                evaluation: str | None = None) -> Path | None:  # fmt: skip
    """An oracle result for this seed in any benchmark directory under ``root``, if one exists.

    The true-reward run depends only on env (its id and ``env_kwargs``, which each result
    records; none recorded: made before it was, with none), agent, steps and seed, so one
    made for another label budget, teacher or option is reused instead of trained again.
    With ``evaluation`` (``"sampled"`` or ``"deterministic"``) only a result evaluated that
    way matches (none recorded: deterministic, as every result was before the rule).
    """
    want = env_kwargs or {}
    for found in sorted(root.glob(f"{env}-{agent}-*-*l-{steps}s*/seed{seed}-oracle.json")):
        try:
            res = json.loads(found.read_text())
        except (OSError, ValueError):
            continue  # an unreadable result is not a match (its own benchmark reports it)
        if res.get("env_kwargs", {}) == want and evaluation in (None, res.get("eval") or DETERMINISTIC):
            return found
    return None


def seed_of(result: Path) -> int:
    """The seed of a per-seed result file, ``seed<k>-<side>.json`` -> ``k``."""
    return int(result.name[4:].split("-")[0])


def adopt_oracles(out: Path, root: Path, env: str, agent: str, steps: int,
                  env_kwargs: dict[str, Any] | None = None,
                  evaluation: str | None = None) -> None:  # fmt: skip
    """Copy into ``out`` the true-reward result of each learned seed there that has none, from
    any benchmark directory under ``root`` (:func:`find_oracle`), so ``--combine`` scores runs
    whose oracle was trained for another budget or option set."""
    for seed in map(seed_of, sorted(out.glob("seed*-learned.json"))):
        target = out / f"seed{seed}-oracle.json"
        found = (
            None if target.exists() else find_oracle(root, env, agent, steps, seed, env_kwargs, evaluation)
        )
        if found is not None:
            target.write_bytes(found.read_bytes())
            print(f"seed {seed}: oracle reused from {found.parent.name}", file=sys.stderr, flush=True)


def run_seeds(a: argparse.Namespace, out: Path) -> list[str]:
    """Run this benchmark's cells (seeds x the sides ``--only`` names) through ``prefrl sweep``'s
    runner, in parallel on Ray, writing ``seed<k>-<side>.json`` in ``out``; returns the failed runs.

    A side whose result file exists is skipped, a learned run whose directory exists resumes
    from its last checkpoint, and an oracle result found by :func:`find_oracle` is copied.
    """
    if a.seeds < 1 or a.first_seed < 0 or a.threads < 1:
        raise SystemExit("--seeds and --threads must be >= 1, --first-seed >= 0")
    cores = os.cpu_count() or 1  # a local Ray with fewer CPUs than one run reserves would wait forever
    sc = SweepConfig(env=[a.env], labels=[a.labels], seeds=a.seeds, first_seed=a.first_seed, out=str(out),
                     teacher=[a.teacher], steps=a.steps, address=a.address, cpus_per_cell=float(a.threads),
                     num_cpus=a.threads if a.address is None and a.threads > cores else None,
                     eval_episodes=a.eval_episodes, progress=False)  # fmt: skip
    options: dict[str, Any] = {"agent.algo": a.agent, "loop.iterations": a.iterations}
    options.update({sweep_name(k): v for k, v in a.loop_options.items()})  # --loop wins
    learned, oracle = grid(sc, options)
    sides = ("learned", "oracle") if a.only == "both" else (a.only,)
    cells = [c for c in oracle + learned if c.kind in sides]
    root = Path(a.out)

    def files(c: Cell) -> CellFiles:
        oracle = c.kind == "oracle"
        reuse = (
            find_oracle(root, c.env, c.agent, c.steps, c.seed, a.env_kwargs, a.evaluation) if oracle else None
        )
        return CellFiles(out / f"{c.kind}-seed{c.seed}", out / f"seed{c.seed}-{c.kind}.json",
                         out / f"seed{c.seed}-{c.kind}-error.txt", reuse)  # fmt: skip

    def report(c: Cell, res: dict[str, Any], reused: Path | None) -> None:
        what = f"reused from {reused.parent.name}" if reused is not None else f"{res['return']:.1f}"
        print(f"seed {c.seed}: {c.kind} {what}", file=sys.stderr, flush=True)

    out.mkdir(parents=True, exist_ok=True)
    return list(run_cells(sc, cells, options, files, report).failed)


def reevaluate(out: Path, env: str, agent: str, env_kwargs: dict[str, Any] | None, episodes: int) -> None:
    """Bring each per-seed result in ``out`` to today's evaluation of this environment
    (:func:`prefrl.agents.evaluate.evaluation_mode`): one evaluated the other way (none
    recorded: deterministic, as every result was before the rule) is evaluated again from its
    saved policy, without training; both returns stay in its ``returns_by_eval``. A result whose
    policy is gone keeps its evaluation (``combine`` then reports ``"eval": "mixed"``)."""
    mode = evaluation_mode(env, env_kwargs)
    for path in sorted(out.glob("seed*-*.json")):
        res = json.loads(path.read_text())
        old = res.get("eval") or DETERMINISTIC
        if old == mode:
            continue
        policy = out / f"{path.stem.split('-')[1]}-seed{seed_of(path)}" / "policy.zip"
        if not policy.exists():
            print(f"{path.name}: evaluated {old}, not {mode}, and {policy} is gone: kept as it is",
                  file=sys.stderr)  # fmt: skip
            continue
        loaded = load_agent(agent, policy, make_vec_env(env, 1, env_kwargs))
        ret = float(evaluate_returns(env, loaded, episodes, env_kwargs=env_kwargs,
                                     deterministic=mode == DETERMINISTIC).mean())  # fmt: skip
        res["returns_by_eval"] = {**res.get("returns_by_eval", {}), old: res["return"], mode: ret}
        res.update({"return": ret, "eval": mode})
        write_json(path, res)
        before = res["returns_by_eval"][old]
        print(f"{path.name}: evaluated again with {mode} actions: {ret:.1f} ({old}: {before:.1f})",
              file=sys.stderr, flush=True)  # fmt: skip


def train_wall(result: dict[str, Any]) -> float:
    """Training wall time of a per-seed result: ``train_wall_s`` of a sweep cell's result, or
    ``wall_s`` of the files written before the benchmark ran on the sweep (one key, one meaning
    there)."""
    return float(result["train_wall_s"] if "train_wall_s" in result else result["wall_s"])


def combine(out: Path, random_ret: float) -> dict[str, object]:
    """Scores from every ``seed<k>-learned.json`` / ``seed<k>-oracle.json`` in ``out``: the median,
    every seed's, and the worst seed's (``worst_normalized_score``, ``worst_seed``: results
    combined before they were recorded have ``scores`` and ``seeds``, and readers compute it)."""

    def load(side: str) -> dict[int, dict[str, float]]:
        return {seed_of(p): json.loads(p.read_text()) for p in sorted(out.glob(f"seed*-{side}.json"))}

    learned, oracle = load("learned"), load("oracle")
    if not learned or not oracle:
        raise SystemExit(f"{out}: need at least one learned and one oracle result to score")
    refuse_mixed(out, learned)
    oracle_mean = float(np.mean([o["return"] for o in oracle.values()]))
    seeds = sorted(learned)
    scores = [normalized_score(learned[s]["return"], oracle_mean, random_ret) for s in seeds]
    scores = [float("nan") if x is None else x for x in scores]
    worst = worst_seed(scores, seeds)  # the seed a median hides (None: no seed scored)
    wall_l = float(np.mean([train_wall(v) for v in learned.values()]))
    wall_o = float(np.mean([train_wall(v) for v in oracle.values()]))
    cpu = {k: [v["cpu_s"] for v in d.values() if "cpu_s" in v] for k, d in (("l", learned), ("o", oracle))}
    cpu_ratio = float(np.mean(cpu["l"]) / np.mean(cpu["o"])) if cpu["l"] and cpu["o"] else None
    extra: dict[str, object] = {}
    next_obs = {learned[s].get("reward_next_obs", reward_reads_next_obs(out / f"learned-seed{s}"))
                for s in seeds}  # fmt: skip
    if len(next_obs) == 1 and None not in next_obs:  # what the learned runs resolved (auto included)
        extra["reward_next_obs"] = next_obs.pop()
    selection = {learned[s].get("query_selection") for s in seeds}
    if len(selection) == 1 and None not in selection:  # uniform, or the disagreement measure
        extra["query_selection"] = selection.pop()
    ran = [r["machine"] for r in (*learned.values(), *oracle.values()) if "machine" in r]
    if ran:  # where the seeds ran (results written before they recorded it name none)
        extra["machines"] = sorted({machine_label(m) for m in ran})
        commits = {str(r["machine"].get("commit")) for r in learned.values() if "machine" in r}
        extra["commits"] = sorted(commits)  # the code of the learned runs
    evals = {r.get("eval") or DETERMINISTIC for r in (*learned.values(), *oracle.values())}
    extra["eval"] = evals.pop() if len(evals) == 1 else "mixed"
    # labels before disagreement, its share; random steps per label and L2 (a broad first reward)
    # and the exploration bonus (auto: the gated bonus where episodes never end)
    for key in RESOLVED[RESOLVED.index("selection_from") :]:
        got = {learned[s].get(key) for s in seeds}
        if len(got) == 1 and None not in got:
            extra[key] = got.pop()
    return {
        "seeds": seeds, "median_normalized_score": float(np.median(scores)), "scores": scores,
        "learned_returns": [learned[s]["return"] for s in seeds],
        "oracle_returns": [oracle[s]["return"] for s in sorted(oracle)],
        "learned_return": float(np.mean([learned[s]["return"] for s in seeds])),
        "oracle_return": oracle_mean, "random_return": random_ret,
        "learned_train_wall_s": wall_l, "oracle_train_wall_s": wall_o, "wall_ratio": wall_l / wall_o,
        "cpu_ratio": cpu_ratio, **extra,
        "worst_normalized_score": float("nan") if worst is None else worst[0],
        "worst_seed": None if worst is None else worst[1],
    }  # fmt: skip


RESOLVED = ("reward_next_obs", "reward_output", "query_selection", "selection_from", "selection_share",
            "initial_steps_per_label", "l2_init", "exploration_bonus", "exploration_bonus_schedule",
            "exploration_bonus_gate")  # fmt: skip
"""What a learned seed records of the ``auto`` settings its run resolved (from selection_from on: the
settings :func:`combine` names where every seed agrees)
(:func:`prefrl.run.sweep_report.resolved_reward`)."""


def refuse_mixed(out: Path, learned: dict[int, dict[str, Any]]) -> None:
    """Stop where two learned seeds of ``out`` recorded different resolutions of one ``auto``
    setting: they ran under different defaults (a seed run before a default changed, kept,
    beside seeds run after), so their median would describe neither. A seed that recorded
    nothing (written before it was recorded) conflicts with none."""
    for key in RESOLVED:
        seen: dict[str, list[int]] = {}
        for seed, res in sorted(learned.items()):
            if res.get(key) is not None:
                seen.setdefault(json.dumps(res[key]), []).append(seed)
        if len(seen) > 1:
            got = "; ".join(f"seeds {', '.join(map(str, s))}: {v}" for v, s in seen.items())
            raise SystemExit(
                f"{out}: the learned seeds ran under different defaults ({key}: {got}); keep "
                "one set of seeds in this folder, or give --out a new folder for the others"
            )


def reward_reads_next_obs(run: Path) -> bool | None:
    """Whether a learned run's reward read s' (its config.json, ``auto`` resolved), for per-seed
    results written before they recorded it themselves; ``None`` when the run directory is gone
    or predates the option being recorded."""
    try:
        value = json.loads((run / "config.json").read_text())["reward"].get("use_next_obs")
    except (OSError, ValueError, KeyError):
        return None
    return None if value is None else bool(value)


if __name__ == "__main__":
    sys.exit(main())
