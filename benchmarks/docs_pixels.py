"""The pixel tables of the benchmark docs: Atari and CoinRun beside the true reward (``atari.py``),
the image reward offline, what a learned reward pays (``refit_labels.py``, ``prefrl interpret
policies`` and ``events``) and the CoinRun reward's checks (``coinrun.py``).

Loaded from its file by ``docs_tables.py``, whose :data:`TABLES` takes this file's; each table is
a function of ``docs_tables.Results`` returning Markdown.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol


def _load(name: str) -> Any:
    """A benchmark script beside this file, loaded once. ``docs_tables.py`` replaces this with
    its own loader when it loads this file, so both share one copy of each script."""
    raise RuntimeError(
        f"{__name__} is loaded by docs_tables.py, which gives it its loader (asked for {name})"
    )


class Results(Protocol):
    """What these tables read of ``docs_tables.Results``: the results folder."""

    root: Path


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    return str(_load("docs_comparisons").markdown_table(head, rows))


def with_worst(median: float, scores: list[float], digits: int = 2, worst: float | None = None) -> str:
    return str(_load("docs_comparisons").with_worst(median, scores, digits, worst))


def atari_table(res: Results, folder: str) -> str:
    """``atari.py``'s table of the results under ``folder`` (of ``benchmarks/results``)."""
    at = _load("atari")
    return str(at.markdown(at.summarize(res.root / folder, None)))


def atari_tables(res: Results, folders: tuple[str, ...]) -> str:
    """The tables of :func:`atari_table` for several folders as one: one header, every folder's
    rows in order (each names its learned side's ``--set`` options), the first folder's notes,
    and each row's training time."""
    head: list[str] = []
    rows: list[str] = []
    notes, times = "", list[str]()
    mark = "Training time of each finished run: "
    for folder in folders:
        lines = atari_table(res, folder).splitlines()
        head = head or lines[:2]
        body = [line for line in lines[2:] if line.startswith("| ")]
        rows += body
        note = " ".join(line for line in lines[2 + len(body) :] if line.strip())
        notes = notes or note.split(mark)[0].strip()
        for _ in body:
            times.append(f"row {len(times) + 1}: {note.split(mark)[1].rstrip('.')}" if mark in note else "")
    trained = f" {mark}{'; '.join(t for t in times if t)}." if any(times) else ""
    return "\n".join([*head, *rows, "", notes + trained])


def atari(res: Results) -> str:
    """Atari from preferences beside the same agent on the game's reward (``atari.py``)."""
    return atari_table(res, "atari")


def atari_flat_cnn(res: Results) -> str:
    """CoinRun's learned side run again with the flat CNN's learning rate and linear output of
    2026-11-28 (``atari.py``, its results under ``atari-flat-cnn-2026-11-28``), beside the same
    true-reward seeds as the committed rows."""
    return atari_table(res, "atari-flat-cnn-2026-11-28")


def atari_pong_broad(res: Results) -> str:
    """Pong's learned side run again with a broad first reward (``atari.py --set
    loop.initial_steps_per_label=100``, its results under ``atari-pong-broad-2026-11-28``), beside
    the same true-reward seed as the committed row."""
    return atari_table(res, "atari-pong-broad-2026-11-28")


def atari_enduro_floor(res: Results) -> str:
    """Enduro's learned side run again with the entropy floor (today's default; ``atari.py``, its
    results under ``atari-enduro-floor-2026-11-28``), beside the same true-reward seed as the
    committed row."""
    return atari_table(res, "atari-enduro-floor-2026-11-28")


def atari_coinrun_floor(res: Results) -> str:
    """CoinRun's learned sides run again with the entropy floor, lifted after the last query
    (today's defaults; ``atari.py``, its results under ``atari-coinrun-floor-2026-11-29``), beside
    the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-floor-2026-11-29")


COINRUN_ENDS = (
    ("the entropy floor, lifted after the last query (today's default)", "atari-coinrun-floor-2026-11-29"),
    ("the same, hidden ends as the next episode (`--set loop.hidden_end=next_episode`)",
     "atari-coinrun-next-2026-11-29"),
    ("the same, and the reward reads the end flag (`--set reward.use_done=true`; seeds 1 and 2)",
     "atari-coinrun-next-done-2026-11-29"),
    ("today's default, the reward reading the end flag (`--set reward.use_done=true`; seeds 1 and 2)",
     "atari-coinrun-usedone-2026-11-29"),
    ("today's default, the agent's reward kept centred (`--set loop.center_hidden_ends=true`; seeds 0 and 1)",
     "atari-coinrun-center-2026-11-29"),
    ("hidden ends as the next episode, the agent's reward kept centred (both `--set`s; seeds 1 and 2)",
     "atari-coinrun-next-center-2026-11-29"),
    ("ends told to the agent, each worth its median step (`--set loop.hide_terminations=false "
     "--set loop.end_value=median`)", "atari-coinrun-median-2026-11-29"),
    ("the same, and the reward trained with an end worth its batch's median step "
     "(`--set reward.absorbing=median`)", "atari-coinrun-anchor-2026-11-29"),
    ("ends told to the agent, each worth its median step, the entropy floor fading with the labels "
     "still to be asked (`--set loop.floor_schedule=labels`)", "atari-coinrun-fade-2026-11-29"),
)  # fmt: skip
"""CoinRun's learned sides whose final evaluations counted how episodes ended: (row, folder)."""


def coinrun_ends(res: Results) -> str:
    """How the final policies' CoinRun episodes ended (``atari.py``'s ``final_eval.ends``: a coin,
    a death, a time limit), per learned run of each folder of :data:`COINRUN_ENDS` that exists; a
    run stopped before it finished by its newest checkpoint's policy (``--stopped-eval``)."""
    rows = []
    for label, folder in COINRUN_ENDS:
        root = res.root / folder / "coinrun"
        finished = [json.loads(p.read_text()) for p in sorted(root.glob("learned-seed[0-9].json"))]
        stopped = [json.loads(p.read_text()) for p in sorted(root.glob("learned-seed*.stopped.json"))]
        evals = [(r["final_eval"], "") for r in finished if "ends" in r.get("final_eval", {})]
        evals += [(r["final_eval"], f" (stopped, {r['env_steps'] // 1000}k steps)") for r in stopped]
        if not evals:
            continue
        kinds = ("scored", "ended", "time_limit")  # a coin, a death, the time limit
        ends = [" / ".join(str(e["ends"][k]) for k in kinds) + at for e, at in evals]
        share = {k: statistics.median(e["ends"][k] / e["episodes"] for e, _ in evals) for k in kinds[1:]}
        rows.append([label, ", ".join(ends), f"{share['ended']:.0%} / {share['time_limit']:.0%}"])
    head = ["learned side (PPO, 1,000 labels, 1M steps)",
            "coins / deaths / time limits of 100 final episodes (seeds)",
            "deaths / time limits, median of seeds"]  # fmt: skip
    return markdown_table(head, rows)


def atari_coinrun_next(res: Results) -> str:
    """CoinRun's learned sides with hidden ends told as the next episode (``atari.py --set
    loop.hidden_end=next_episode``, its results under ``atari-coinrun-next-2026-11-29``; stopped
    part-way), beside the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-next-2026-11-29")


def atari_coinrun_usedone(res: Results) -> str:
    """CoinRun's learned sides whose reward reads the end flag (``atari.py --set
    reward.use_done=true``, its results under ``atari-coinrun-usedone-2026-11-29``), beside the
    same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-usedone-2026-11-29")


def atari_coinrun_center(res: Results) -> str:
    """CoinRun's learned sides whose agent's reward stays centred where it is told no episode
    end (``atari.py --set loop.center_hidden_ends=true``, its results under
    ``atari-coinrun-center-2026-11-29``), beside the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-center-2026-11-29")


def atari_coinrun_median(res: Results) -> str:
    """CoinRun's learned sides told every episode end, an end worth the agent's median step
    (``atari.py --set loop.hide_terminations=false --set loop.end_value=median``, its results
    under ``atari-coinrun-median-2026-11-29``), beside the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-median-2026-11-29")


def atari_coinrun_anchor(res: Results) -> str:
    """CoinRun's learned sides told every episode end, an end worth the agent's median step, whose
    reward was trained with an end worth its batch's median step (``atari.py --set
    loop.hide_terminations=false --set loop.end_value=median --set reward.absorbing=median``, its
    results under ``atari-coinrun-anchor-2026-11-29``), beside the same true-reward seeds."""
    return atari_table(res, "atari-coinrun-anchor-2026-11-29")


def atari_coinrun_fade(res: Results) -> str:
    """CoinRun's learned sides told every episode end, an end worth the agent's median step, whose
    entropy floor fades with the share of the label budget still to be asked (``atari.py --set
    loop.hide_terminations=false --set loop.end_value=median --set loop.floor_schedule=labels``,
    its results under ``atari-coinrun-fade-2026-11-29``), beside the same true-reward seeds."""
    return atari_table(res, "atari-coinrun-fade-2026-11-29")


def atari_coinrun_next_center(res: Results) -> str:
    """CoinRun's learned sides with hidden ends told as the next episode and the agent's reward
    kept centred (``atari.py --set loop.hidden_end=next_episode --set
    loop.center_hidden_ends=true``, its results under ``atari-coinrun-next-center-2026-11-29``),
    beside the same true-reward seeds as the pixel rows."""
    return atari_table(res, "atari-coinrun-next-center-2026-11-29")


def atari_pong_floor(res: Results) -> str:
    """Pong's learned side with the entropy floor (``--agent.min-entropy auto``, today's default;
    its results under ``atari-pong-floor-2026-11-28``), beside the same true-reward seed as the
    committed row."""
    return atari_table(res, "atari-pong-floor-2026-11-28")


def atari_pong_defaults(res: Results) -> str:
    """Pong's seed 0, learned side, at the defaults of 2026-11-30 (the fifty-fifth session; its
    results under ``atari-pong-defaults-2026-11-30``), beside the committed true-reward seed."""
    return atari_table(res, "atari-pong-defaults-2026-11-30")


ENDURO_HEADS = (
    "atari-enduro-heads-2026-11-30/default",
    "atari-enduro-heads-2026-11-30/heads",
    "atari-enduro-heads-2026-11-30/soft",
)
"""Enduro's seed 0, learned side, today's default and the heads-only restart, side by side on one
machine (2026-11-30, the fiftieth session), and the soft restart on the same kind of machine
(2026-12-01/02, the sixtieth and sixty-first sessions, resumed from its checkpoints)."""


def atari_enduro_heads(res: Results) -> str:
    """Enduro's learned side at today's default, with the heads-only restart (``--set
    loop.agent_reset_at=0.5 --set loop.agent_reset_layers=heads``) and with the soft restart
    (``loop.agent_reset_layers=soft``), one seed each, beside the committed true-reward seed
    (``atari.py``)."""
    return atari_tables(res, ENDURO_HEADS)


COINRUN_SOFT = ("atari-coinrun-soft-2026-12-02/default", "atari-coinrun-soft-2026-12-02/soft")
"""CoinRun's seed 0, learned side, without a restart and with the soft restart half-way, one run
per core of one 2-core machine (2026-12-02, the sixty-first session)."""


def atari_coinrun_soft(res: Results) -> str:
    """CoinRun's learned side without a restart (``--set loop.agent_reset_at=0`` since the soft
    restart became the default on images) and with the soft restart (``--set
    loop.agent_reset_at=0.5 --set loop.agent_reset_layers=soft``), one seed each, beside the
    committed true-reward seed (``atari.py``)."""
    return atari_tables(res, COINRUN_SOFT)


def image_reward(res: Results) -> str:
    """The offline image-reward probe (``image_reward.py``): per file, each variant's median
    held-out accuracy (with its worst draw), correlation with the true reward, share of its own
    labelled pairs ordered, share of per-step rewards saturated (tanh) and fitting time over its
    draws (files from before the last two were measured show "–")."""
    rows = []
    for path in sorted((res.root / "image_reward").glob("*.json")):
        summary = json.loads(path.read_text())["summary"]
        variants = [k for k, v in summary.items() if isinstance(v, dict)]
        for name in variants:
            v = summary[name]
            budget = [str(summary[k]) for k in ("labels", "steps", "draws")]
            accuracy, pearson = with_worst(v["accuracy"], v["accuracies"], 3), f"{v['pearson']:.2f}"
            fitted = f"{v['train_accuracy']:.3f}" if "train_accuracy" in v else "–"
            saturated = f"{v['saturated']:.2f}" if "saturated" in v else "–"
            fit_s = f"{v['fit_s']:.0f}"
            rows.append([summary["env"], *budget, name, accuracy, pearson, fitted, saturated, fit_s])
    head = [
        "env",
        "labels",
        "optimiser steps",
        "draws",
        "variant",
        "held-out accuracy: median, worst draw (draws)",
        "pearson",
        "labelled pairs ordered",
        "saturated",
        "fit s",
    ]
    return markdown_table(head, rows)


def held_out(record: dict[str, Any]) -> str:
    """A refit record's held-out accuracy and its number of pairs ("–" where all were ties)."""
    acc = record["held_out_accuracy"]
    return f"{'–' if acc is None else f'{acc:.2f}'} ({record['held_out_pairs']})"


def refit(res: Results) -> str:
    """A run's own labels fitted again offline (``refit_labels.py``, files under ``refit/``): per
    file, the run's own reward as it left it, then per variant the records after the first,
    second and last stretch of optimiser steps."""

    def num(x: float | None, fmt: str) -> str:
        return "–" if x is None else format(x, fmt)

    rows = []
    for path in sorted((res.root / "refit").glob("*.json")):
        records = json.loads(path.read_text())["records"]
        for key in dict.fromkeys((r["output"], r["lr"]) for r in records):
            mine = [
                r for r in records if (r["output"], r["lr"]) == key and (r["steps"] == 0) == (key[1] is None)
            ]
            for r in [*mine[:2], mine[-1]] if len(mine) > 3 else mine:
                level = " / ".join(f"{x:.1f}" for x in r["level"])
                fit = "the run's own" if r["lr"] is None else f"refit, lr {r['lr']:g}"
                rows.append([path.stem, f"{r['output']}, {fit}", str(r["steps"]), num(r["train_loss"], ".3f"),
                             num(r["train_accuracy"], ".2f"), held_out(r), level, f"{r['saturated']:.2f}",
                             num(r.get("spread"), ".2g")])  # fmt: skip
    head = ["labels of", "reward", "optimiser steps", "loss", "fitted pairs ordered",
            "held-out pairs ordered (pairs)", "level per member (before the squash)",
            "rewards at +-1", "spread of the rewards"]  # fmt: skip
    return markdown_table(head, rows)


def refit_policies(res: Results) -> str:
    """How each refit reward ranks the policies given to ``refit_labels.py --compare`` (records
    with ``per_step_in_spreads``): every record, each policy's mean reward per step in units of
    the per-step rewards' spread, and the order, best first."""
    rows = []
    for path in sorted((res.root / "refit").glob("*.json")):
        records = [r for r in json.loads(path.read_text())["records"] if "per_step_in_spreads" in r]
        names = list(records[0]["per_step_in_spreads"]) if records else []
        for r in records:
            fit = "the run's own" if r["lr"] is None else f"refit, lr {r['lr']:g}"
            per = ", ".join(f"{n} {r['per_step_in_spreads'][n]:+.2f}" for n in names)
            rows.append([path.stem, f"{r['output']}, {fit}", str(r["steps"]), held_out(r), per,
                         " > ".join(r["order"])])  # fmt: skip
    head = ["labels of", "reward", "optimiser steps", "held-out pairs ordered (pairs)",
            "reward per step of each policy (spreads of the per-step reward)", "order"]  # fmt: skip
    return markdown_table(head, rows)


def frozen(res: Results) -> str:
    """Agents trained on a finished run's frozen reward (``prefrl train --reward-from RUN
    --eval-interval N``, reports under ``frozen/``): steps, the mean of the last 10 evaluations,
    the final policy's true return, and a random policy's."""
    rows = []
    for path in sorted((res.root / "frozen").glob("*.json")):
        r = json.loads(path.read_text())
        rows.append([path.stem, r["env"], r["agent"], f"{r['env_steps']:,}", str(r["reward_from"]),
                     f"{r['eval_last10_mean']:.1f}", f"**{r['true_return']:.1f}**",
                     f"{r['random_return']:.1f}"])  # fmt: skip
    head = ["run", "env", "agent", "steps", "frozen reward of", "mean of the last 10 evaluations",
            "final policy", "random policy"]  # fmt: skip
    return markdown_table(head, rows)


def frozen_starts(res: Results) -> str:
    """Agents on a frozen reward from different starting policies (``prefrl train --reward-from
    REWARD [--agent-path POLICY] --eval-interval N``, reports under ``frozen-starts/``, each with
    ``start`` and ``reward`` said in words): the true return at every evaluation, and the final
    policy's."""
    rows = []
    for path in sorted((res.root / "frozen-starts").glob("*.json")):
        r = json.loads(path.read_text())
        curve = ", ".join(f"{v:.0f}" for _, v in r["evaluations"][:-1])  # the last: the final policy
        rows.append([r["start"], r["reward"], f"{r['env_steps']:,}", curve, f"**{r['true_return']:.1f}**"])
    head = ["policy at the start", "frozen reward", "steps", "true return at each evaluation",
            "final policy"]  # fmt: skip
    return markdown_table(head, rows)


def frozen_finals(res: Results) -> str:
    """Fresh agents on a finished label-efficiency run's final reward, held still, for the run's
    own steps (``prefrl train --config RUN/config.json --reward-from RUN --eval-interval N``,
    files under ``frozen-finals/``, each naming its run's combined ``cell`` result and ``seed``):
    the true return at every evaluation and the final policy's, normalised on the cell's scale
    (its random and mean true-reward returns) beside the run's own score."""
    rows = []
    for path in sorted((res.root / "frozen-finals").glob("*.json")):
        r = json.loads(path.read_text())
        cell = json.loads((res.root / r["cell"]).read_text())
        lo, hi = cell["random_return"], cell["oracle_return"]
        own = cell["scores"][cell["seeds"].index(r["seed"])]
        curve = ", ".join(f"{v:.0f}" for _, v in r["evaluations"][:-1])  # the last: the final policy
        rows.append([r["reward"], f"{r['env_steps']:,}", curve, f"{r['true_return']:.1f}",
                     f"**{(r['true_return'] - lo) / (hi - lo):.2f}**", f"{own:.2f}"])  # fmt: skip
    head = ["frozen reward", "steps", "true return at each evaluation", "final policy",
            "normalised", "the run's own agent (normalised)"]  # fmt: skip
    return markdown_table(head, rows)


def policy_actions(res: Results) -> str:
    """How saved policies spread their actions over the same frames (``policy_actions.py``, files
    under ``policy-actions/``): each policy's mean probability per action, its mean entropy per
    frame, the entropy of its mean and their difference (how much its action depends on the frame)."""
    rows = []
    for path in sorted((res.root / "policy-actions").glob("*.json")):
        for r in json.loads(path.read_text())["records"]:
            probs = " / ".join(f"{p:.2f}" for p in r["mean_probs"])
            rows.append([r["policy"], probs, f"{r['mean_entropy']:.2f}", f"{r['entropy_of_mean']:.2f}",
                         f"**{r['mutual_information']:.2f}**", f"{r['max_entropy']:.2f}"])  # fmt: skip
    head = ["policy", "mean probability of each action", "mean entropy (nats)", "entropy of the mean",
            "what the frame decides (their difference)", "largest entropy"]  # fmt: skip
    return markdown_table(head, rows)


STANDING_BAR = 1.5
"""``--loop.agent-reset-standing`` of the restart-signals table's last columns (the default's)."""


def restart_signals(res: Results, folder: str = "restart-signals") -> str:
    """What the loop's label-free signals showed where the agent's restart comes, beside how each
    seed ended without and with it (``restart_signals.py``, files under ``folder``), and
    with the restart that spares an agent standing at :data:`STANDING_BAR` or above: measured
    where the seed ran so (``score_gated``), else the side the bar picks (the runs are the same up
    to the restart). Each file ends with a row of the medians."""

    def f(x: float | None, digits: int = 2) -> str:
        return "–" if x is None else f"{x:.{digits}f}"

    rows = []
    for path in sorted((res.root / folder).glob("*.json")):
        data = json.loads(path.read_text())
        sides: dict[str, list[float]] = {"without": [], "with": [], "gated": []}
        for r in data["records"]:
            spared = r["standing"] is not None and r["standing"] >= STANDING_BAR
            repeats = "without" if spared else "with"  # the committed run a gated one repeats
            gated, where = (
                (r["score_gated"], "run")
                if r.get("score_gated") is not None
                else (r[f"score_{repeats}"], f"as {repeats}")
            )
            gated_text = "–" if gated is None else f"{f(gated)} ({where})"
            for side, x in (("without", r["score_without"]), ("with", r["score_with"]), ("gated", gated)):
                if x is not None:
                    sides[side].append(x)
            rows.append([f"{path.stem}, seed {r['seed']}, iteration {data['iteration']}",
                         f(r["true_return"], 1), f(r["climb"], 1), f(r["learned_gain"]), f(r["standing"]),
                         f(r["agreement"]), f(r["fresh_accuracy"]), f(r["entropy"]),
                         f(r.get("frame_decides")), f(r["score_without"]), f(r["score_with"]),
                         "yes" if spared else "no", gated_text])  # fmt: skip
        med = {k: f"**{statistics.median(v):.2f}** ({len(v)})" if v else "–" for k, v in sides.items()}
        rows.append(
            [f"{path.stem}: median (seeds)", *[""] * 8, med["without"], med["with"], "", med["gated"]]
        )
    head = ["run", "true return of its newest episodes (truth)", "`watch/climb` (standard errors)",
            "`watch/learned_gain`", "`watch/standing`", "`watch/agreement`", "`reward/fresh_accuracy`",
            "policy entropy (nats)", "what the frame decides (nats)",
            "the committed run of the seed ended, without the restart", "with it",
            f"spared at `--loop.agent-reset-standing {STANDING_BAR}`", "with that bar"]  # fmt: skip
    return markdown_table(head, rows)


def refit_events(res: Results) -> str:
    """Where each refit reward puts the value of sparse events (``refit_labels.py --events``, files
    under ``refit-events/``): every record, with the oracle labels of other play it was given
    (``--extra-labels``), per events file the share of each event value's true net kept and the
    share of the reward's per-step variance the events explain."""
    rows = []
    for path in sorted((res.root / "refit-events").glob("*.json")):
        for r in json.loads(path.read_text())["records"]:
            fit = "the run's own" if r["lr"] is None else f"refit, lr {r['lr']:g}"
            extra = str(r.get("extra_labels", 0)) if r["lr"] is not None else "–"
            per = "; ".join(
                f"{name}: skipped ({e['skipped']})"
                if "skipped" in e
                else f"{name}: "
                + ", ".join(f"{v} kept {k:.2f}" for v, k in e["kept"].items())
                + f", explained {e['explained']:.2f}"
                for name, e in r["events"].items()
            )
            rows.append([path.stem, f"{r['output']}, {fit}", extra, str(r["steps"]), held_out(r), per])
    head = ["labels of", "reward", "oracle labels of skilled play added", "optimiser steps",
            "held-out pairs ordered (pairs)", "each rollout file: share of each event's value kept, "
            "share of the reward's variance the events explain"]  # fmt: skip
    return markdown_table(head, rows)


def policies(res: Results, prefix: str = "pong") -> str:
    """Policies ranked by a run's learned reward and by the true one (``prefrl interpret policies``,
    files ``policies/<prefix>-*.json``, one table per prefix: a game or task): per file, each
    policy's rewards per step (two standard errors) and per episode, then the command's verdict."""

    def pm(x: float | None, se: float | None) -> str:
        return "–" if x is None else f"{x:+.4f} ± {2 * (se or 0.0):.4f}"

    rows = []
    for path in sorted((res.root / "policies").glob(f"{prefix}-*.json")):
        r = json.loads(path.read_text())
        for p in r["policies"]:
            true_ret = "–" if p["true_return"] is None else f"{p['true_return']:.1f}"
            spread = p.get("learned_disagreement")  # kept since 2026-11-30
            rows.append([path.stem, p["name"], f"{p['steps']:,} ({p['episodes']})",
                         pm(p["true_per_step"], p["true_per_step_se"]),
                         pm(p["learned_per_step"], p["learned_per_step_se"]),
                         "–" if spread is None else f"{spread:.2f}", true_ret,
                         f"{p['learned_return']:.1f}"])  # fmt: skip
        rows.append([path.stem, "**verdict**", "", "", "", "", "", str(r["verdict"])])
    head = ["run", "policy", "steps (episodes)", "true reward per step", "learned reward per step",
            "members' disagreement per step", "true return per episode",
            "learned return per episode"]  # fmt: skip
    return markdown_table(head, rows)


def events(res: Results) -> str:
    """Where a run's learned reward puts the value of the true reward's events (``prefrl interpret
    events``, files ``events/RUN-POLICY.json``): per event value, the learned reward's largest
    response near the event, both rewards' net over the window, the share kept, and the share of
    the learned reward's per-step variance that the events explain (one figure per file)."""
    rows = []
    for path in sorted((res.root / "events").glob("*.json")):
        r = json.loads(path.read_text())
        run, _, policy = path.stem.rpartition("-")
        for e in r["events"]:
            rows.append([run, policy, f"{e['value']:+g}", str(e["count"]),
                         f"{e['peak']:+.2f} at {e['peak_offset']:+d}", f"{e['learned_net']:+.1f}",
                         f"{e['true_net']:+.1f}", f"**{e['kept']:.2f}**",
                         f"{r['explained']:.2f}"])  # fmt: skip
    head = ["run", "rollouts of", "event", "events", "learned reward near it (sd, offset)",
            "learned net over the window", "true net", "share kept",
            "learned reward's variance the events explain"]  # fmt: skip
    return markdown_table(head, rows)


def coinrun(res: Results) -> str:
    """CoinRun rewards from preferences beside their supervised twins (``coinrun.py``, one result
    file each under ``coinrun/``, ``coinrun.json`` first): ranking of clips that reach the coin,
    saliency on the coin and the reward kept with the coin painted out."""
    files = sorted(
        (res.root / "coinrun").glob("coinrun*.json"), key=lambda p: (p.name != "coinrun.json", p.name)
    )
    rows = []
    for path in files:
        r = json.loads(path.read_text())
        features = {"flat": "flat", "spatial": "keypoints"}[r["args"]["features"]]
        erase = r["args"].get("erase_share", 0.0)
        trained = {"preference": f"{r['labels']:,} oracle labels, {r['args']['steps']:,} steps",
                   "supervised": f"true reward of {r['train']['steps']:,} steps"}  # fmt: skip
        if erase:  # random erasing: a share of the clips (and a copy of every frame) partly painted over
            trained = {"preference": f"{trained['preference']}, {erase:.0%} of clips erased",
                       "supervised": f"{trained['supervised']} and an erased copy"}  # fmt: skip
        for name, v in r["rewards"].items():
            for where in ("held_out", "unseen_levels"):
                m = v[where]
                sal = m["saliency_on_coin"]
                rows.append([
                    name, features, trained.get(name, ""), where.replace("_", " "),
                    f"{m['coin_accuracy']:.3f}", f"{m['coin_vs_death']:.3f}", f"{sal['gradient']:.3f}",
                    f"{sal['integrated_gradients']:.3f}", f"{m['saliency_chance']:.3f}",
                    f"{m['without_coin']:.2f}", f"{v['fit_s']:.0f}",
                ])  # fmt: skip
    head = ["reward", "CNN features", "trained on", "clips of", "coin clips ranked first", "vs deaths",
            "saliency on coin: gradient", "integrated gradients", "flat map", "reward kept without coin",
            "fit s"]  # fmt: skip
    return markdown_table(head, rows)


TABLES: dict[str, Callable[[Any], str]] = {
    "atari": atari,
    "image-reward": image_reward,
    "atari-flat-cnn": atari_flat_cnn,
    "atari-pong-broad": atari_pong_broad,
    "atari-pong-floor": atari_pong_floor,
    "atari-pong-defaults": atari_pong_defaults,
    "atari-enduro-floor": atari_enduro_floor,
    "atari-enduro-heads": atari_enduro_heads,
    "atari-coinrun-soft": atari_coinrun_soft,
    "atari-coinrun-floor": atari_coinrun_floor,
    "coinrun-ends": coinrun_ends,
    "atari-coinrun-next": atari_coinrun_next,
    "atari-coinrun-usedone": atari_coinrun_usedone,
    "atari-coinrun-center": atari_coinrun_center,
    "atari-coinrun-next-center": atari_coinrun_next_center,
    "atari-coinrun-median": atari_coinrun_median,
    "atari-coinrun-anchor": atari_coinrun_anchor,
    "atari-coinrun-fade": atari_coinrun_fade,
    "refit": refit,
    "refit-policies": refit_policies,
    "refit-events": refit_events,
    "frozen": frozen,
    "frozen-starts": frozen_starts,
    "frozen-finals": frozen_finals,
    "policy-actions": policy_actions,
    "restart-signals": restart_signals,
    "restart-standing": lambda res: restart_signals(res, "restart-standing"),
    "policies": policies,
    "policies-walker": lambda res: policies(res, "walker"),
    "policies-rune-walker": lambda res: policies(res, "rune-walker"),
    "events": events,
    "coinrun": coinrun,
}
"""Table name (as the doc markers write it) -> the function that renders it (``docs_tables.py``'s
:data:`TABLES` takes these)."""
