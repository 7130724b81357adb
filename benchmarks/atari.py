"""Pixel games from preferences: Atari as the original work showed it (Pong, Enduro) and Procgen's
CoinRun, oracle labels, beside the same agent on the game's own reward.

    python benchmarks/atari.py --task pong --seeds 3 --jobs 2 --out ../atari-runs
    python benchmarks/atari.py --table --out ../atari-runs --copy-to benchmarks/results/atari
    python benchmarks/atari.py --task coinrun --seeds 3 --jobs 2 --out ../atari-runs

Two runs per game and seed, each the same agent: SB3 PPO with RL Baselines3 Zoo's Atari
hyperparameters (8 environments x 128 steps, 4 epochs of minibatches of 256, learning rate
2.5e-4, clip range 0.1, entropy bonus 0.01, value coefficient 0.5; the Nature CNN with no
hidden layers after it), on ``ALE/<Game>-v5`` with the usual preprocessing (frame skip 4,
84x84 grayscale, 4 frames stacked; sticky actions as v5 has them) and the score strip hidden:

* ``learned``: ``prefrl train`` with an oracle teacher, the game's label budget (Atari 1,400,
  CoinRun 1,000), 25-step clips (1.7 s of Atari play, as in the original work), a reward update
  every :data:`EVAL_INTERVAL` steps capped at :data:`FIT_STEPS` optimiser steps, the ensemble on
  one shared convolution trunk (``--reward.cnn-shared-trunk``: 3.5x less compute per clip),
  a reward of the frames alone (``--reward.no-use-act``) and episode ends told to the agent
  as truncations (``--loop.hide-terminations``), everything else prefrl's defaults. The last two
  are the original work's Atari setup: with one reward output per action (``auto`` for a flat CNN
  with Discrete actions) Pong's reward paid one button in every state and CoinRun's mostly one,
  and each agent held that button; with the frames alone but episode ends seen, CoinRun's reward
  paid its agent for ending episodes, and its coin rate fell to nothing (docs/benchmarks/pixels.md).
* ``true``: the same agent on the game's reward.

CoinRun (``procgen/coinrun``, easy, 200 levels; the Procgen extra) runs the same agent on its
64x64 colour frames (one per step), and its reward reads them through the flat CNN
(``--reward.cnn-features flat``, as ``benchmarks/coinrun.py`` fits it: the keypoint features
``auto`` picks for frames this small fit about 35x slower). Its game score is 10 x the coin rate,
and its figure is the learned side's coin rate over the true side's at the same steps (issue
45's), where Atari's is the normalised score below.

Every run evaluates its policy on the game's score every :data:`EVAL_INTERVAL` steps over
:data:`EVAL_EPISODES` episodes (actions sampled, as the Zoo evaluates Atari). A result gives
the mean of the last :data:`LAST_N` evaluations and the normalised score of the learned side,
``(learned - random) / (true - random)`` at the same steps (CoinRun: ``learned / true``). Runs
are resumable: the same command after a kill continues each run from its last checkpoint; a finished run (its
``<side>-seed<k>.json``) is skipped. Keep ``--out`` outside the checkout; ``--table`` prints the
table (Markdown, then JSON), copies the result and progress files to ``--copy-to`` and draws
each game's learning curves (``<game>.png``: score against frames, learned and true side).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ATARI: dict[str, Any] = {"steps": 1_000_000, "labels": 1_400, "env_kwargs": {"hide_score": True},
                         "frames_per_step": 4, "figure": "normalized", "reward": {},
                         "final_episodes": 10}  # fmt: skip
TASKS: dict[str, dict[str, Any]] = {
    "pong": {**ATARI, "env": "ALE/Pong-v5"},
    "enduro": {**ATARI, "env": "ALE/Enduro-v5"},
    "coinrun": {"env": "procgen/coinrun", "steps": 1_000_000, "labels": 1_000,
                "env_kwargs": {"num_levels": 200, "start_level": 0, "distribution_mode": "easy"},
                "frames_per_step": 1, "figure": "ratio", "reward": {"cnn_features": "flat"},
                "final_episodes": 100},
}  # fmt: skip
"""Per game: the environment, its ``env_kwargs`` (``hide_score``: Atari's score strip blanked),
the default steps and labels, frames per agent step (the curves' axis), the figure (``normalized``:
``(learned - random) / (true - random)``; ``ratio``: ``learned / true``, CoinRun's coin rate),
options of the learned side's reward network, and the episodes of each finished run's final
evaluation (a CoinRun episode is short, and 5 episodes tell coin rates apart only by 0.2)."""
SIDES = ("learned", "true")
LABELS = ATARI["labels"]
FRAGMENT_LENGTH = 25
EVAL_INTERVAL = 50_000
EVAL_EPISODES = 5
LAST_N = 3
"""The figure of a run: mean score of its last ``LAST_N`` evaluations (the last 150k steps)."""
RANDOM_EPISODES = 10
FINAL_SEED = 20_000
"""First seed of the final evaluations' episodes (the periodic ones start at 10,000)."""
FIT_STEPS = 40
"""Optimiser steps per reward update (``--trainer.max-steps``; 5x in the first): 50 epochs over
every label at every update, the default, would cost several times the agent's own compute."""


def agent_config() -> Any:
    """The agent of both sides: SB3 PPO with the Zoo's Atari hyperparameters (constant rates)."""
    from prefrl.agents.sb3 import AgentConfig

    extra = {"n_epochs": 4, "clip_range": 0.1, "vf_coef": 0.5}
    return AgentConfig(
        algo="ppo",
        policy="CnnPolicy",
        cnn="nature",
        learning_rate=2.5e-4,
        n_envs=8,
        n_steps=128,
        batch_size=256,
        net_arch=[],
        ent_coef=0.01,
        extra=json.dumps(extra),
    )


def learned_config(
    task: str, seed: int, run: Path, steps: int, labels: int, overrides: Sequence[str] = ()
) -> Any:
    """The ``prefrl train`` config of the learned side, with ``overrides`` (``section.field=value``,
    the value as JSON or a bare string) applied (:func:`apply_overrides`)."""
    from prefrl.envs.config import EnvConfig
    from prefrl.preference.trainer import RewardTrainerConfig
    from prefrl.rewards.config import RewardNetConfig
    from prefrl.run.config import TrainConfig
    from prefrl.training.config import LoopConfig

    t = TASKS[task]
    kwargs = {k: v for k, v in t["env_kwargs"].items() if k != "hide_score"}
    env = EnvConfig(
        id=t["env"], kwargs=json.dumps(kwargs), hide_score=bool(t["env_kwargs"].get("hide_score"))
    )
    cfg = TrainConfig(
        seed=seed,
        run_dir=str(run),
        force=True,
        progress=False,
        eval_episodes=EVAL_EPISODES,
        eval_interval=EVAL_INTERVAL,
        agent=agent_config(),
        page=False,
        env=env,
        loop=LoopConfig(
            total_steps=steps,
            total_labels=labels,
            fragment_length=FRAGMENT_LENGTH,
            iterations=max(1, steps // EVAL_INTERVAL),
            hide_terminations=True,
        ),
        trainer=RewardTrainerConfig(max_steps=FIT_STEPS),
        reward=RewardNetConfig(cnn_shared_trunk=True, use_act=False, **t["reward"]),
    )
    return apply_overrides(cfg, overrides)


def apply_overrides(cfg: Any, overrides: Sequence[str]) -> Any:
    """``cfg`` with each ``section.field=value`` of ``overrides`` set (``loop.agent_reset_at=0.5``):
    an ablation of one mechanism on the learned side, the rest of the game's setup kept. The value
    is read as JSON (numbers, true/false, null, lists), else kept as a string."""
    for item in overrides:
        key, sep, text = item.partition("=")
        section, _, name = key.partition(".")
        part = getattr(cfg, section, None)
        names = {f.name for f in dataclasses.fields(part)} if dataclasses.is_dataclass(part) else set()
        if not sep or name not in names:
            raise ValueError(
                f"--set {item!r}: expected section.field=value with a field of TrainConfig's "
                "agent, env, loop, trainer or reward (field names with underscores)"
            )
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        cfg = dataclasses.replace(cfg, **{section: dataclasses.replace(part, **{name: value})})  # type: ignore[type-var]
    return cfg


def run_learned(
    task: str, seed: int, run: Path, steps: int, labels: int, overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """Train (or resume) the learned side; its result."""
    from prefrl.run.config import parse_args
    from prefrl.run.train import train

    if (run / "config.json").exists():
        cfg = parse_args(["--resume", str(run), "--no-progress"])
    else:
        cfg = learned_config(task, seed, run, steps, labels, overrides)
    rep = train(cfg)
    return {
        "final_return": rep["true_return"],
        "evaluations": rep.get("evaluations", []),
        "labels_used": rep["labels_used"],
        "train_wall_s": rep["train_wall_s"],
        "reward_accuracy": rep.get("reward_accuracy"),
        "heldout": heldout(run),
    }


def run_true(task: str, seed: int, run: Path, steps: int) -> dict[str, Any]:
    """Train (or resume) the agent on the game's reward, evaluating and checkpointing (policy and
    optimiser, :func:`prefrl.agents.policy_io.save_agent`) every :data:`EVAL_INTERVAL` steps."""
    from prefrl.agents.evaluate import evaluate_returns
    from prefrl.agents.policy_io import load_agent, save_agent
    from prefrl.agents.sb3 import make_agent, make_vec_env
    from prefrl.storage.checkpoint import write_json

    env_id, env_kwargs, cfg = TASKS[task]["env"], TASKS[task]["env_kwargs"], agent_config()
    run.mkdir(parents=True, exist_ok=True)
    state_path = run / "state.json"
    venv = make_vec_env(env_id, cfg.n_envs, env_kwargs, seed=seed)
    state: dict[str, Any] = {"steps": 0, "evaluations": [], "wall_s": 0.0}
    if state_path.exists():
        state = json.loads(state_path.read_text())
        agent = load_agent(cfg.algo, run / "policy.zip", venv, backend=cfg.backend, config=cfg)
    else:
        agent = make_agent(cfg, venv, seed=seed)
    t0 = time.perf_counter() - state["wall_s"]
    while state["steps"] < steps:
        n = min(EVAL_INTERVAL - state["steps"] % EVAL_INTERVAL, steps - state["steps"])
        agent.learn(n, reset_num_timesteps=state["steps"] == 0, progress_bar=False)
        state["steps"] += n
        k = len(state["evaluations"])
        t_train = time.perf_counter()
        ret = float(
            evaluate_returns(env_id, agent, EVAL_EPISODES, seed=10_000 + k, env_kwargs=env_kwargs).mean()
        )
        state["eval_wall_s"] = state.get("eval_wall_s", 0.0) + time.perf_counter() - t_train
        state["evaluations"].append([state["steps"], ret])
        state["wall_s"] = time.perf_counter() - t0
        save_agent(agent, run / "policy.zip", cfg)
        write_json(state_path, state)
        print(
            f"{task} true seed {seed}: {state['steps']} steps, score {ret:.1f}", file=sys.stderr, flush=True
        )
    return {
        "final_return": state["evaluations"][-1][1],
        "evaluations": state["evaluations"],
        "labels_used": 0,
        "train_wall_s": state["wall_s"] - state.get("eval_wall_s", 0.0),
    }


def final_score(task: str, run: Path, policy: Path | None = None) -> dict[str, Any]:
    """The final policy of a finished run (``run/policy.zip``, or ``policy``) over the game's
    ``final_episodes`` episodes (their own seeds, apart from the periodic evaluations'):
    ``{"episodes", "score", "ends"}``, ``ends`` counting how the episodes ended
    (:func:`episode_ends`)."""
    from prefrl.agents.evaluate import evaluate_episodes
    from prefrl.agents.policy_io import load_agent
    from prefrl.agents.sb3 import make_vec_env

    t, cfg = TASKS[task], agent_config()
    venv = make_vec_env(t["env"], 1, t["env_kwargs"], seed=0)
    agent = load_agent(cfg.algo, policy or run / "policy.zip", venv, backend=cfg.backend, config=cfg)
    n = int(t["final_episodes"])
    batch = evaluate_episodes(t["env"], agent, n, seed=FINAL_SEED, env_kwargs=t["env_kwargs"])
    venv.close()
    ends = episode_ends(batch.episode_returns(), batch.terminated, batch.truncated)
    return {"episodes": n, "score": float(batch.episode_returns().mean()), "ends": ends}


def episode_ends(returns: Any, terminated: Any, truncated: Any) -> dict[str, int]:
    """How ``[n]`` episodes ended: ``scored`` (terminated with a positive return: CoinRun's coin),
    ``ended`` (terminated without: a CoinRun death, Pong's lost game) and ``time_limit``
    (truncated)."""
    import numpy as np

    returns, terminated, truncated = np.asarray(returns), np.asarray(terminated), np.asarray(truncated)
    return {
        "scored": int((terminated & (returns > 0)).sum()),
        "ended": int((terminated & (returns <= 0)).sum()),
        "time_limit": int((truncated & ~terminated).sum()),
    }


def add_final_scores(out: Path, task: str) -> list[str]:
    """Give every finished run of ``task`` under ``out`` without one its final score (written into
    its result file); the runs scored."""
    from prefrl.storage.checkpoint import write_json

    done = []
    for result in sorted((out / task).glob("*-seed*.json")):
        if result.name.endswith(".progress.json"):
            continue
        r = json.loads(result.read_text())
        done_before = r.get("final_eval", {}).get("episodes") == TASKS[task]["final_episodes"]
        policy = out / task / result.stem / "policy.zip"
        if done_before and ("ends" in r["final_eval"] or not policy.exists()):
            continue  # scored (a score from before ends were counted gets them where its policy is)
        r["final_eval"] = final_score(task, out / task / result.stem)
        write_json(result, r)
        done.append(result.stem)
    return done


def add_stopped_scores(out: Path, task: str) -> list[str]:
    """Score the newest checkpoint of every learned run of ``task`` under ``out`` that was stopped
    before it finished (no result file), as a finished run's final policy is scored, into
    ``<run>.stopped.json`` (``{"seed", "env_steps", "checkpoint", "final_eval"}``); the runs scored."""
    from prefrl.storage.checkpoint import write_json

    done = []
    for run in sorted(p for p in (out / task).glob("learned-seed*") if p.is_dir()):
        latest = run / "checkpoints" / "LATEST"
        if (out / task / f"{run.name}.json").exists() or not latest.exists():
            continue
        ckpt = run / "checkpoints" / latest.read_text().strip()
        state = json.loads((ckpt / "state.json").read_text())
        write_json(out / task / f"{run.name}.stopped.json", {
            "seed": int(run.name.rsplit("seed", 1)[1]), "env_steps": int(state["env_steps"]),
            "checkpoint": ckpt.name, "final_eval": final_score(task, run, ckpt / "policy.zip"),
        })  # fmt: skip
        done.append(run.name)
    return done


def random_score(task: str, out: Path) -> float:
    """Mean score of uniformly random actions over :data:`RANDOM_EPISODES` episodes (cached)."""
    from prefrl.agents.evaluate import evaluate_returns

    path = out / task / "random.json"
    if path.exists():
        return float(json.loads(path.read_text())["random_return"])
    t = TASKS[task]
    ret = float(evaluate_returns(t["env"], None, RANDOM_EPISODES, env_kwargs=t["env_kwargs"]).mean())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": task, "episodes": RANDOM_EPISODES, "random_return": ret}) + "\n")
    return ret


def last_n(evaluations: list[list[float]], n: int = LAST_N) -> float:
    """Mean of the last ``n`` evaluation scores."""
    return float(np.mean([r for _, r in evaluations[-n:]]))


def run_one(a: argparse.Namespace) -> int:
    """One run (``--side`` and ``--seed``): train or resume it, write its result file."""
    from prefrl.run.machine import machine_record
    from prefrl.storage.checkpoint import write_json

    root = Path(a.out) / a.task
    steps = a.steps or TASKS[a.task]["steps"]
    run, result = root / f"{a.side}-seed{a.seed}", root / f"{a.side}-seed{a.seed}.json"
    if result.exists():
        return 0
    t0 = time.perf_counter()
    res = (
        run_true(a.task, a.seed, run, steps)
        if a.side == "true"
        else run_learned(a.task, a.seed, run, steps, a.labels, a.set)
    )
    res.update(
        task=a.task,
        env=TASKS[a.task]["env"],
        side=a.side,
        seed=a.seed,
        steps=steps,
        labels=a.labels,
        overrides=list(a.set) if a.side == "learned" else [],
        agent=dataclasses.asdict(agent_config()),
        last_n_mean=last_n(res["evaluations"]),
        wall_s=time.perf_counter() - t0,
        peak_memory_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,  # this process's (KiB)
        machine=machine_record(),  # runs repeat seed for seed only on one machine
    )
    res["final_eval"] = final_score(a.task, run)
    write_json(result, res)
    return 0


def run_all(a: argparse.Namespace) -> int:
    """Every (side, seed) of ``--task`` not finished yet, ``--jobs`` at a time, each in its own
    process with one torch thread, unfinished ones resuming from their checkpoints."""
    from prefrl.run.jobs import run_jobs, unfinished

    root = Path(a.out) / a.task
    root.mkdir(parents=True, exist_ok=True)
    random_score(a.task, Path(a.out))
    jobs = []
    for side, seed in unfinished(root, a.sides, range(a.first_seed, a.first_seed + a.seeds)):
        cmd = [sys.executable, __file__, "--task", a.task, "--side", side, "--seed", str(seed),
               "--out", a.out, "--labels", str(a.labels),
               "--eval-interval", str(a.eval_interval)]  # fmt: skip
        cmd += [arg for item in a.set for arg in ("--set", item)]
        jobs.append((f"{side}-seed{seed}", cmd + (["--steps", str(a.steps)] if a.steps else [])))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return 1 if run_jobs(jobs, root, a.jobs, env, label=a.task) else 0


def progress(run: Path) -> list[list[float]]:
    """Evaluations ``[[step, score], ...]`` a run has written so far (learned: ``evaluations.csv``;
    true: ``state.json``)."""
    if (run / "evaluations.csv").exists():
        rows = run.joinpath("evaluations.csv").read_text().splitlines()[1:]
        return [[int(r.split(",")[0]), float(r.split(",")[1])] for r in rows if r]
    if (run / "state.json").exists():
        return list(json.loads((run / "state.json").read_text()).get("evaluations", []))
    return []


def heldout(run: Path) -> list[list[float]]:
    """``[[env step, accuracy], ...]``: a learned run's reward on the agent's newest clips at each
    iteration, before it trains on their labels (``reward/heldout_accuracy`` of ``metrics.csv``)."""
    path = run / "metrics.csv"
    if not path.exists():
        return []
    with path.open() as f:
        rows = list(csv.DictReader(f))
    return [[int(float(r["env_steps"])), float(r["reward/heldout_accuracy"])]
            for r in rows if r.get("reward/heldout_accuracy")]  # fmt: skip


def paired(learned: list[list[float]], true: list[list[float]]) -> list[list[float]]:
    """``[[step, learned score, true score], ...]``: each learned evaluation with the true side's
    nearest one within half an evaluation interval (a learned run evaluates a rollout's few
    steps past each multiple of the interval, 50,054 for 50,000)."""
    out = []
    for s, v in learned:
        near = min(true, key=lambda e: abs(e[0] - s), default=None)
        if near is not None and abs(near[0] - s) < EVAL_INTERVAL / 2:
            out.append([s, v, near[1]])
    return out


def summarize(out: Path, copy_to: Path | None) -> dict[str, Any]:
    """Per game: the random score, per side the seeds' figures (finished or running), and the
    normalised score of each learned seed whose true-reward seed has reached the same steps."""
    from prefrl.storage.checkpoint import write_json

    table: dict[str, Any] = {}
    for task in TASKS:
        root = out / task
        if not root.exists():
            continue
        rand_path = root / "random.json"
        rand = json.loads(rand_path.read_text())["random_return"] if rand_path.exists() else None
        sides: dict[str, dict[int, dict[str, Any]]] = {s: {} for s in SIDES}
        for side in SIDES:
            names = {
                p.name.split(".")[0] for p in root.glob(f"{side}-seed*")
            }  # runs, results, progress files
            for name in sorted(names):
                run, seed = root / name, int(name.rsplit("seed", 1)[1])
                result, kept = root / f"{name}.json", root / f"{name}.progress.json"
                if result.exists():
                    r = json.loads(result.read_text())
                    sides[side][seed] = {
                        "finished": True,
                        "evaluations": r["evaluations"],
                        "labels_used": r["labels_used"],
                        "train_wall_s": r["train_wall_s"],
                        **({"final_eval": r["final_eval"]} if "final_eval" in r else {}),
                        "heldout": r.get("heldout", []),
                        "overrides": r.get("overrides", []),
                        **({"peak_memory_gib": r["peak_memory_gib"]} if "peak_memory_gib" in r else {}),
                    }
                elif evals := progress(run):
                    sides[side][seed] = {"finished": False, "evaluations": evals, "heldout": heldout(run)}
                elif kept.exists():  # a committed copy of a running run's progress
                    kept_r = json.loads(kept.read_text())
                    sides[side][seed] = {
                        "finished": False,
                        "evaluations": kept_r["evaluations"],
                        "heldout": kept_r.get("heldout", []),
                    }
        for side in SIDES:
            for r in sides[side].values():
                r["steps"] = int(r["evaluations"][-1][0])
                r["score"] = r["final_eval"]["score"] if "final_eval" in r else last_n(r["evaluations"])
        norm, final = {}, {}
        for seed, r in sides["learned"].items():
            t = sides["true"].get(seed)
            if rand is None or t is None:
                continue
            both = "final_eval" in r and "final_eval" in t  # finished: the final policies, many episodes
            if both:
                learned, true = r["final_eval"]["score"], t["final_eval"]["score"]
            else:  # running: the last evaluations at the steps both sides reached
                pairs = paired(r["evaluations"], t["evaluations"])  # [[step, learned, true], ...]
                if len(pairs) < LAST_N:
                    continue
                learned, true = last_n([[s, v] for s, v, _ in pairs]), last_n([[s, w] for s, _, w in pairs])
            if TASKS[task]["figure"] == "ratio" and true != 0:  # CoinRun: of the true coin rate
                norm[seed], final[seed] = learned / true, both
            elif TASKS[task]["figure"] == "normalized" and true != rand:
                norm[seed], final[seed] = (learned - rand) / (true - rand), both
        table[task] = {
            "env": TASKS[task]["env"],
            "random_return": rand,
            "sides": sides,
            "normalized": norm,
            "from_final": final,
            "median_normalized": float(np.median(list(norm.values()))) if norm else None,
        }
        if copy_to is not None:
            (copy_to / task).mkdir(parents=True, exist_ok=True)
            if rand_path.exists():
                (copy_to / task / "random.json").write_bytes(rand_path.read_bytes())
            for side in SIDES:
                for seed, r in sides[side].items():
                    name = f"{side}-seed{seed}"
                    if r["finished"]:
                        (copy_to / task / f"{name}.json").write_bytes((root / f"{name}.json").read_bytes())
                        (copy_to / task / f"{name}.progress.json").unlink(missing_ok=True)
                    else:
                        write_json(copy_to / task / f"{name}.progress.json", {"seed": seed, **r})
                    if (stopped := root / f"{name}.stopped.json").exists():
                        (copy_to / task / stopped.name).write_bytes(stopped.read_bytes())
            plot(task, table[task], copy_to / task / f"{task}.png")
    return table


def plot(task: str, t: dict[str, Any], path: Path) -> None:
    """Learning curves: game score against frames (4 per agent step), learned and true side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for side, colour in (("learned", "tab:blue"), ("true", "tab:orange")):
        for i, (_seed, r) in enumerate(sorted(t["sides"][side].items())):
            ev = np.asarray(r["evaluations"], dtype=float)
            label = f"{'learned reward' if side == 'learned' else 'true reward'}" if i == 0 else None
            frames = ev[:, 0] * TASKS[task]["frames_per_step"] / 1e6
            ax.plot(frames, ev[:, 1], color=colour, alpha=0.8, label=label, lw=1.2)
    if t["random_return"] is not None:
        ax.axhline(t["random_return"], color="grey", ls=":", label="random")
    ax.set_xlabel("frames (millions)")
    ax.set_ylabel("game score")
    ax.set_title(f"{t['env']}: PPO, {TASKS[task]['labels']:,} oracle labels vs true reward")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def markdown(table: dict[str, Any]) -> str:
    """One row per game: per side the seeds' scores (running ones with their steps), and the
    median normalised score (CoinRun: learned over true) with the worst seed's."""

    def cell(runs: dict[int, dict[str, Any]]) -> str:
        if not runs:
            return "—"
        parts = [
            f"{r['score']:.1f}" + ("" if r["finished"] else f" (running, {r['steps'] // 1000}k)")
            for _, r in sorted(runs.items())
        ]
        return ", ".join(parts)

    def worst(norm: dict[int, float]) -> str:  # a median hides a failed seed: name the worst
        return f"worst {min(norm.values()):.2f}, {len(norm)} seeds" if len(norm) > 1 else "1 seed"

    def accuracy(runs: dict[int, dict[str, Any]]) -> str:  # the learned reward on the newest clips
        parts = [f"{np.mean([a for _, a in r['heldout'][-LAST_N:]]):.2f}" if r.get("heldout") else "—"
                 for _, r in sorted(runs.items())]  # fmt: skip
        return ", ".join(parts) or "—"

    def ablation(runs: dict[int, dict[str, Any]]) -> str:  # --set options of the learned side
        sets = sorted({o for r in runs.values() for o in r.get("overrides", [])})
        return f" (learned side: {', '.join(f'`{o}`' for o in sets)})" if sets else ""

    head = ["game", "labels / steps", "random", "learned reward (seeds)", "true reward (seeds)",
            "normalised (CoinRun: learned / true), finished seeds; running ones",
            "learned reward on the agent's newest clips (seeds)"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def figure(t: dict[str, Any]) -> str:  # finished seeds (final policies) apart from running ones
        sides = t["sides"]
        done = {
            k: v
            for k, v in t["normalized"].items()
            if sides["learned"][k]["finished"] and sides["true"][k]["finished"]
        }
        going = [f"{v:.2f}" for k, v in sorted(t["normalized"].items()) if k not in done]
        parts = [f"{np.median(list(done.values())):.2f} ({worst(done)})"] if done else []
        return "; ".join(parts + (["running: " + ", ".join(going)] if going else [])) or "—"

    for task, t in table.items():
        rand = "—" if t["random_return"] is None else f"{t['random_return']:.1f}"
        lines.append(
            "| "
            + " | ".join(
                [
                    t["env"] + ablation(t["sides"]["learned"]),
                    f"{TASKS[task]['labels']} / {TASKS[task]['steps'] // 1000}k",
                    rand,
                    cell(t["sides"]["learned"]),
                    cell(t["sides"]["true"]),
                    figure(t),
                    accuracy(t["sides"]["learned"]),
                ]
            )
            + " |"
        )
    finals = ", ".join(f"{t['env']} {TASKS[task]['final_episodes']}" for task, t in table.items())
    note = (f"Finished runs: their final policy over its game's final episodes ({finals}); running runs: "
            f"the mean of their last {LAST_N} evaluations ({EVAL_EPISODES} episodes each), and the "
            "normalised score at the steps both sides reached. The learned reward's accuracy: the share "
            "of pairs of the agent's newest clips it ordered as the teacher did, before training on them "
            f"(mean of its last {LAST_N} iterations; — for runs from before it was kept).")  # fmt: skip
    return "\n".join(lines) + ("\n\n" + note + cost(table) if table else "")


def cost(table: dict[str, Any]) -> str:
    """What a finished run cost: per game and side, the hours its training took (each run in its
    own process with one torch thread, the machine shared with the other side) and, where the
    result recorded it, its peak memory."""
    parts = []
    for t in table.values():
        for side in SIDES:
            done = [r for r in t["sides"][side].values() if r["finished"]]
            if not done:
                continue
            hours = "/".join(f"{r['train_wall_s'] / 3600:.1f}" for r in done)
            mem = [r["peak_memory_gib"] for r in done if r.get("peak_memory_gib")]
            parts.append(
                f"{t['env']} {side} side {hours} h" + (f", at most {max(mem):.1f} GiB" if mem else "")
            )
    return (" Training time of each finished run: " + "; ".join(parts) + ".") if parts else ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=list(TASKS), default="pong", help="game (coinrun: the Procgen extra)")
    p.add_argument("--seeds", type=int, default=3, help="seeds first_seed .. first_seed+seeds-1")
    p.add_argument("--first-seed", type=int, default=0, help="the first seed")
    p.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES), help="which runs of each seed")
    p.add_argument("--side", choices=SIDES, default=None, help="run only this side of --seed in this process")
    p.add_argument("--seed", type=int, default=None, help="with --side: the seed (default 0)")
    p.add_argument(
        "--steps", type=int, default=None, help="agent steps (default: the game's, 1M = 4M frames)"
    )
    p.add_argument("--labels", type=int, default=None,
                   help="label budget of the learned runs (default: the game's, Atari 1,400, "
                        "CoinRun 1,000)")  # fmt: skip
    p.add_argument("--eval-interval", type=int, default=50_000, help="agent steps between evaluations")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="learned side only, repeatable: change one option of its prefrl train config "
        "(loop.initial_steps_per_label=100); an ablation, so give it its own --out",
    )
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)), help="runs at a time")
    p.add_argument(
        "--out", default="../atari-runs", help="folder of the run directories (outside the checkout)"
    )
    p.add_argument("--table", action="store_true", help="only print the table of the results found")
    p.add_argument("--final-eval", action="store_true",
                   help="with --task: evaluate the final policy of every finished run without a final "
                        "evaluation, or without its count of how episodes ended (runs finished "
                        "before either existed); written into its result")  # fmt: skip
    p.add_argument("--stopped-eval", action="store_true",
                   help="with --task: score the newest checkpoint of every learned run stopped before "
                        "it finished, as a final policy is scored (into <run>.stopped.json)")  # fmt: skip
    p.add_argument(
        "--copy-to",
        default=None,
        metavar="DIR",
        help="with --table: also copy result and progress files and draw the curves there",
    )
    a = p.parse_args(argv)
    a.labels = a.labels or TASKS[a.task]["labels"]
    globals()["EVAL_INTERVAL"] = a.eval_interval  # the runs of this process (and its children) use it
    if a.table:
        table = summarize(Path(a.out), None if a.copy_to is None else Path(a.copy_to))
        print(markdown(table))
        print(json.dumps(table, default=float))
        return 0
    if a.final_eval:
        print("final evaluations:", ", ".join(add_final_scores(Path(a.out), a.task)) or "none needed")
        return 0
    if a.stopped_eval:
        print("stopped runs scored:", ", ".join(add_stopped_scores(Path(a.out), a.task)) or "none")
        return 0
    if a.side is not None:
        a.seed = 0 if a.seed is None else a.seed
        return run_one(a)
    if a.seed is not None:
        p.error("--seed goes with --side; for one seed of the driver, --first-seed K --seeds 1")
    return run_all(a)


if __name__ == "__main__":
    sys.exit(main())
