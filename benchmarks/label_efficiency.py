"""Label efficiency: learned-reward training vs the oracle (true reward), same agent and steps.

    python benchmarks/label_efficiency.py --env Pendulum-v1 --labels 20 --steps 15000 --seeds 3

For each seed it trains with a learned reward (``prefrl train``) and, with the same agent
and number of steps, on the true reward (the oracle), evaluates both on the true reward,
and prints as its last line one JSON object with ``median_normalized_score``, ``scores``
(per seed), ``oracle_return``, ``random_return``, ``learned_return`` and ``wall_s``, where
score = (return - random) / (oracle - random). Every final policy is saved in SB3's own
format inside its run directory.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from prefrl.agents.evaluate import evaluate_returns, train_on_true_reward
from prefrl.agents.sb3 import (
    ALGOS,
    AgentConfig,
    check_env_id,
    make_env,
    resolve_algo,
)
from prefrl.storage.checkpoint import dumps, write_json
from prefrl.sweep.runner import apply_options as apply_sweep_options
from prefrl.sweep.runner import parse_options
from prefrl.teachers import PRESETS
from prefrl.training.loop import LoopConfig
from prefrl.training.run import TrainConfig, train

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
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--first-seed", type=int, default=0, help="seeds run are first_seed .. first_seed+seeds-1")
    p.add_argument(
        "--only",
        default="both",
        choices=["both", "learned", "oracle"],
        help="run only one side (to spread seeds over processes; combine with --combine)",
    )
    p.add_argument("--combine", action="store_true", help="only combine the per-seed results found in --out")
    p.add_argument("--method", default="baseline", choices=list(METHODS),
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
    initial = min(1000, a.steps // 10)
    agent_cfg = AgentConfig(algo=a.agent)
    random_ret = float(evaluate_returns(a.env, None, a.eval_episodes).mean())
    if not a.combine:
        for seed in range(a.first_seed, a.first_seed + a.seeds):
            run_seed(a, agent_cfg, out, seed, initial)
    have = [list(out.glob(f"seed*-{side}.json")) for side in ("learned", "oracle")]
    if a.only != "both" and not all(have):
        print(f"{out}: {a.only} results written; score them with --combine once the other side is done",
              file=sys.stderr)  # fmt: skip
        return 0
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
METHODS: dict[str, dict[str, object]] = {
    "baseline": {},
    "crop": {"trainer.crop_min_frac": 0.7},  # SURF's temporal cropping alone
    "pseudo": {k: v for k, v in SURF.items() if "pseudo" in k},  # SURF's pseudo-labels alone
    "surf": SURF,
    "rime": {"trainer.noise_filter": True},
    "rune": {"exploration_bonus": 0.05, "exploration_bonus_decay": 1e-5},
    "qpa": {"agent.hybrid_replay": 0.5},  # queries already come from the latest episodes
    "all": {**SURF, "trainer.noise_filter": True, "exploration_bonus": 0.05, "exploration_bonus_decay": 1e-5,
            "agent.hybrid_replay": 0.5},
}  # fmt: skip
"""Technique presets (``--method``): option sets of the learned runs, as ``--loop`` takes them."""


def parse_loop_options(items: list[str]) -> dict[str, object]:
    """``["name=value", "trainer.name=value", ...]`` -> options of the learned runs, with clear errors.

    A bare name is a LoopConfig field; ``section.name`` names a field of that section of
    :class:`TrainConfig`. Keys come back as given (bare for the loop).
    """
    bad = [i for i in items if i.partition("=")[0].rpartition(".")[0] not in ("", *SECTIONS)]
    try:
        if bad:
            raise ValueError(f"{bad[0]!r}: expected NAME=VALUE naming an option of prefrl train")
        return parse_options(items, bare="loop")
    except ValueError as e:
        loop_fields = sorted(f.name for f in dataclasses.fields(LoopConfig))
        raise SystemExit(
            f"--loop {e} (NAME: a LoopConfig field, or SECTION.NAME with SECTION one of {list(SECTIONS)}); "
            f"loop fields: {loop_fields}"
        ) from None


def apply_options(cfg: TrainConfig, options: dict[str, object]) -> None:
    """Set parsed ``--loop`` options on ``cfg`` (lists become tuples where the default is one)."""
    apply_sweep_options(cfg, options, bare="loop")


def find_oracle(root: Path, env: str, agent: str, steps: int, seed: int) -> Path | None:
    """An oracle result for this seed in any benchmark directory under ``root``, if one exists.

    The true-reward run depends only on env, agent, steps and seed, so one made for another
    label budget, teacher or option is reused instead of trained again.
    """
    found = sorted(root.glob(f"{env}-{agent}-*-*l-{steps}s*/seed{seed}-oracle.json"))
    return found[0] if found else None


def run_seed(a: argparse.Namespace, agent_cfg: AgentConfig, out: Path, seed: int, initial: int) -> None:
    """Run one seed (learned and/or oracle), writing ``seed<k>-<side>.json`` in ``out``.

    A side whose result file exists is skipped, so an interrupted benchmark resumes.
    """
    out.mkdir(parents=True, exist_ok=True)
    if a.only in ("both", "learned") and not (out / f"seed{seed}-learned.json").exists():
        cfg = TrainConfig(seed=seed, teacher=a.teacher, run_dir=str(out / f"learned-seed{seed}"), force=True,
                          progress=False, eval_episodes=a.eval_episodes, agent=dataclasses.replace(agent_cfg),
                          threads=a.threads)  # fmt: skip
        cfg.env.id = a.env
        cfg.loop.total_steps, cfg.loop.total_labels = a.steps, a.labels
        cfg.loop.iterations, cfg.loop.initial_steps = a.iterations, initial
        apply_options(cfg, a.loop_options)
        rep = train(cfg)
        res = {"return": rep["true_return"], "wall_s": rep["train_wall_s"], "cpu_s": rep["train_cpu_s"],
               "labels": rep["labels_used"]}  # fmt: skip
        write_json(out / f"seed{seed}-learned.json", res)
        print(f"seed {seed}: learned {rep['true_return']:.1f}", file=sys.stderr, flush=True)
    done = out / f"seed{seed}-oracle.json"
    if a.only in ("both", "oracle") and not done.exists():
        if (prev := find_oracle(Path(a.out), a.env, a.agent, a.steps, seed)) is not None:
            done.write_text(prev.read_text())
            print(f"seed {seed}: oracle reused from {prev.parent.name}", file=sys.stderr, flush=True)
            return
        ret, wall, cpu = train_on_true_reward(
            agent_cfg, a.env, a.steps, seed, out / f"oracle-seed{seed}", a.eval_episodes, initial
        )
        write_json(out / f"seed{seed}-oracle.json", {"return": ret, "wall_s": wall, "cpu_s": cpu})
        print(f"seed {seed}: oracle {ret:.1f}", file=sys.stderr, flush=True)


def combine(out: Path, random_ret: float) -> dict[str, object]:
    """Scores from every ``seed<k>-learned.json`` / ``seed<k>-oracle.json`` in ``out``."""

    def load(side: str) -> dict[int, dict[str, float]]:
        return {
            int(p.name[4:].split("-")[0]): json.loads(p.read_text())
            for p in sorted(out.glob(f"seed*-{side}.json"))
        }

    learned, oracle = load("learned"), load("oracle")
    if not learned or not oracle:
        raise SystemExit(f"{out}: need at least one learned and one oracle result to score")
    oracle_mean = float(np.mean([o["return"] for o in oracle.values()]))
    denom = oracle_mean - random_ret
    seeds = sorted(learned)
    scores = [(learned[s]["return"] - random_ret) / denom if denom != 0 else float("nan") for s in seeds]
    wall_l = float(np.mean([v["wall_s"] for v in learned.values()]))
    wall_o = float(np.mean([v["wall_s"] for v in oracle.values()]))
    cpu = {k: [v["cpu_s"] for v in d.values() if "cpu_s" in v] for k, d in (("l", learned), ("o", oracle))}
    cpu_ratio = float(np.mean(cpu["l"]) / np.mean(cpu["o"])) if cpu["l"] and cpu["o"] else None
    return {
        "seeds": seeds, "median_normalized_score": float(np.median(scores)), "scores": scores,
        "learned_returns": [learned[s]["return"] for s in seeds],
        "oracle_returns": [oracle[s]["return"] for s in sorted(oracle)],
        "learned_return": float(np.mean([learned[s]["return"] for s in seeds])),
        "oracle_return": oracle_mean, "random_return": random_ret,
        "learned_train_wall_s": wall_l, "oracle_train_wall_s": wall_o, "wall_ratio": wall_l / wall_o,
        "cpu_ratio": cpu_ratio,
    }  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
