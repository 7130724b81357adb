"""The tables of the benchmark docs that set settings side by side (:data:`COMPARISONS`), and the
cell formats every generated table shares: a median with its worst seed and every seed's score.

Loaded from its file by ``docs_tables.py``, which renders each :class:`Comparison` into the doc
markers of its name. A comparison names result folders under ``benchmarks/results/`` (built from
the constants below, one per row or series), so adding a run to a table is one folder name here.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol


def _load(name: str) -> Any:
    """A benchmark script beside this file, loaded once. ``docs_tables.py`` replaces this with
    its own loader when it loads this file, so both share one copy of each script."""
    raise RuntimeError(
        f"{__name__} is loaded by docs_tables.py, which gives it its loader (asked for {name})"
    )


class Results(Protocol):
    """What a comparison reads of ``docs_tables.Results``: one folder's combined result."""

    def folder(self, name: str) -> dict[str, Any]: ...


# ---------------------------------------------------------------------------- formatting
def with_worst(median: float, scores: list[float], digits: int = 2, worst: float | None = None) -> str:
    """``**median**, worst W (seed, seed, ...)``: the median over seeds, the worst seed's score
    (``worst``, else the lowest of ``scores``: a median hides a failed seed) and every seed's;
    ``**median** (1 seed)`` for one."""
    if len(scores) == 1:
        return f"**{median:.{digits}f}** (1 seed)"
    every = ", ".join(f"{s:.{digits}f}" for s in scores)
    low = min(scores) if worst is None else worst
    return f"**{median:.{digits}f}**, worst {low:.{digits}f} ({every})"


def per_seed(result: dict[str, Any]) -> str:
    """A label-efficiency result as :func:`with_worst` writes it, its worst seed as
    ``summarize.worst`` reads it (recorded, or from the scores of a result combined before)."""
    worst = _load("summarize").worst(result)
    low = None if worst is None else worst[0]
    return with_worst(result["median_normalized_score"], list(result["scores"]), worst=low)


def ret(x: float) -> str:
    return f"{x:,.1f}".replace("-", "−")


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


# ------------------------------------------------------------------- settings side by side
class Text(NamedTuple):
    """A cell written as it is (a note such as "= uniform"), not a result."""

    text: str


Cell = str | Text | None
"""A result folder under ``benchmarks/results/`` (its median and per-seed scores), a note, or
nothing (not run)."""


class Comparison(NamedTuple):
    """Settings side by side: one row per setting of the environment, one column per option set,
    each cell the result of one folder of ``benchmarks/results/``.

    (NamedTuples, not dataclasses: the benchmark scripts are loaded from their files, outside
    ``sys.modules``, where a dataclass cannot resolve its own module.)"""

    head: tuple[str, ...]
    rows: tuple[tuple[str, tuple[Cell, ...]], ...]

    def __call__(self, res: Results) -> str:
        out = []
        for label, cells in self.rows:
            if len(cells) != len(self.head) - 1:
                raise SystemExit(
                    f"comparison row {label!r}: {len(cells)} cells for {len(self.head) - 1} columns"
                )
            out.append([label, *(self.cell(res, c) for c in cells)])
        return markdown_table(list(self.head), out)

    @staticmethod
    def cell(res: Results, cell: Cell) -> str:
        if cell is None:
            return "–"
        if isinstance(cell, Text):
            return cell.text
        return per_seed(res.folder(cell))


HC = "HalfCheetah-v5-sac-{teacher}-{labels}l-100000s"
HC50 = HC.format(teacher="oracle", labels=50)
HC100_NOISY, HC100_MISTAKE = HC.format(teacher="noisy", labels=100), HC.format(teacher="mistake", labels=100)
HOP = "Hopper-v5-sac-oracle-100l-100000s"
PEND10, PEND20 = "Pendulum-v1-sac-oracle-10l-15000s", "Pendulum-v1-sac-oracle-20l-15000s"
ACRO, CART = "Acrobot-v1-ppo-oracle-100l-100000s", "CartPole-v1-ppo-oracle-50l-50000s"
IDP, IP = "InvertedDoublePendulum-v5-sac-oracle-50l-30000s", "InvertedPendulum-v5-sac-oracle-30l-15000s"
REACH, SWIM = "Reacher-v5-sac-oracle-30l-15000s", "Swimmer-v5-sac-oracle-30l-15000s"
PUSH = "Pusher-v5-sac-oracle-30l-15000s"
WALK50, WALK100 = "Walker2d-v5-sac-oracle-50l-30000s", "Walker2d-v5-sac-oracle-100l-100000s"
NEXT = "-reward.use_next_obs=True"
PROB = "-active_selection=True-uncertainty_measure=probability"  # from the first query (`active`)
WARM = "-active_selection=True-active_selection_from=30"  # after a 30-label warm-up (`active_warm`)

WATCH = "watch-2026-11-27/"  # the run watch's rows (issue 48), in their own folder
LUNAR, CART10 = "LunarLanderContinuous-v3-sac-oracle-50l-50000s", "CartPole-v1-ppo-oracle-10l-50000s"
ACRO30 = "Acrobot-v1-ppo-oracle-30l-100000s"
RESTORE, OLDER = "-watch_restore=True", "-watch_against_older=True"  # restore: margin 2
WATCH28, RESTORE36 = "watch-2026-11-28/", "-watch_restore=3.6"  # the restore's default margin
EARLY, EARLY_ON = "watch-early/", "-watch_against_older_early=True"  # early newest-vs-older queries
SWIM50 = "Swimmer-v5-sac-oracle-50l-15000s"
EARLY30, REACH50 = "early-2026-11-30/", "Reacher-v5-sac-oracle-50l-15000s"  # the early queries at 50 labels
PUSH50 = "Pusher-v5-sac-oracle-50l-15000s"
TIES, NO_PROBE = "tie-probe/", "-tie_probe=0"  # the tie probe's rows, in their own folder
EXPLORE, STUCK = "tie-explore/", "-tie_exploration_stuck=True"  # standardised tie exploration's rows
CART10_WATCH = "watch-2026-11-28/" + CART10 + "-watch_restore=3.6"  # CartPole 10 at the defaults before
BONUS30 = "bonus-labels-2026-11-30/"  # RUNE's bonus at a weight that matters, fading with the labels
BONUS_ON = "-exploration_bonus=3.0-exploration_bonus_schedule=labels"
GATE30 = "bonus-gate-2026-11-30/"  # the bonus gated by the fresh labels, beside no bonus and the bonus alone
GATE_ON = "-exploration_bonus=3.0-exploration_bonus_gate=0.75-exploration_bonus_schedule=labels"
CENTRED30 = (
    "bonus-centred-2026-11-30/"  # the same, measured from the newest steps' mean std where episodes end
)
DEFAULT30 = "bonus-default-2026-11-30/"  # rows the gated bonus became the default on, measured for it
SEEDS30 = "bonus-seeds-2026-11-30/"  # HalfCheetah's five seeds of both columns and five more of each
PEND10_MISTAKE = "Pendulum-v1-sac-mistake-10l-15000s"
OLDER30 = "against-older-2026-11-30/"  # the failed HalfCheetah seed again, on the machine of sessions 41-48
OLDER28 = "against-older-2026-11-28/"  # newest-vs-older forms and today's default, on a second machine
CONFIRM_ON = "-watch_against_older_confirm=True"  # the early queries until confirmed (removed)
PROBE_ON = "-watch_older_probe=True"  # one newest-vs-older query a round (removed)
RESET, RESET_ON = "agent-reset/", "-agent_reset_at=0.5"  # the agent restarted half-way, in their own folder
HEADS_ON = "-agent_reset_layers=heads"  # the restart of the heads only (an on-policy agent's last layers)
TRIAL_ON = "-agent_reset_trial=2"  # the restart as a trial, undone where the fresh agent is paid less
RESET28 = "agent-reset-2026-11-28/"  # the same rows again on another machine (runs differ across machines)
RESET29 = "agent-reset-2026-11-29/"  # LunarLander-v3 again, on the machine of the heads-only restart
DOT200 = "prefrl/MovingDot-v0-ppo-oracle-200l-100000s"  # (its rows name fragment_length=10 after the restart)
LANDER = "LunarLander-v3-ppo-oracle-50l-100000s"  # PPO on LunarLander's discrete actions, chosen on nothing
LANDER100 = "LunarLander-v3-ppo-oracle-100l-100000s"
FLOOR, FLOOR_ON = "entropy-floor/", "-agent.min_entropy=0.5"  # the entropy floor's rows, in their own folder
LIFTED, KEPT = "-floor_after_queries=False", "-floor_after_queries=True"  # lifted: today's default
TIMING = "label-timing/"  # when the moving dot's labels come in, against the agent's steps
DOT200_CLIPS = DOT200 + "-fragment_length=10"  # the 10-step clips of the 2-core budget, after the restart
DOT_LIFTED = FLOOR + DOT200 + LIFTED + "-fragment_length=10"  # today's default on the dot (floor lifted)
DOT_AGAIN = OLDER30 + DOT200_CLIPS + EARLY_ON  # today's default again (asks nothing)
DOT_THIRD = "dot-machine-2026-11-30/"  # the dot's default and heads-only restart, on a third machine
DOT_WHICH = "dot-which-head-2026-11-30/"  # the restart of one head only, the default's stuck seeds
DOT_FADE = "floor-fade-2026-11-30/" + DOT200 + "-floor_schedule=labels-fragment_length=10"  # the fading floor
KW32 = '-env.kwargs={"size": 32}'  # the moving dot at 32 px
DOT32 = "prefrl/MovingDot-v0-ppo-oracle-400l-50000s"  # at 400 labels and 50,000 steps
DOT32_29 = "dot32-2026-11-29/" + DOT32  # its rows of 2026-11-29
TRIAL01 = "reset-trial-2026-12-01/"  # the action head redrawn half-way on trial, beside no restart
HEAD_TRIAL = "-agent_reset_at=0.5-agent_reset_layers=action-agent_reset_trial=2"  # its options
HEADS_TRIAL01 = "dot-heads-trial-2026-12-01/"  # both heads redrawn half-way on trial, the dot's seeds 0, 1, 4
SOFT01 = "soft-reset-2026-12-01/"  # the soft restart half-way: the value head redrawn, the action head scaled
SOFT_ON = "-agent_reset_at=0.5-agent_reset_layers=soft"  # its options
SOFT02 = "soft-default-2026-12-02/"  # the soft restart as today's default on images, nothing named
STANDING02 = "standing-2026-12-02/"  # the restart that spares a climbing agent (agent_reset_standing)

STATE_PPO_ROWS: tuple[tuple[str, Cell, str], ...] = (
    ("CartPole-v1, 10 labels, 50,000 steps", TRIAL01 + CART10, CART10),
    ("CartPole-v1, 50 labels, 50,000 steps", TRIAL01 + CART, CART),
    (
        "Acrobot-v1, 30 labels, 100,000 steps (the gated bonus named in the first column: today's "
        "default there, 2026-11-30)",
        DEFAULT30 + ACRO30 + GATE_ON,
        ACRO30,
    ),
    ("Acrobot-v1, 100 labels, 100,000 steps", TRIAL01 + ACRO, ACRO),
    ("LunarLander-v3, 50 labels, 100,000 steps (10 seeds)", TRIAL01 + LANDER, LANDER),
    ("LunarLander-v3, 100 labels, 100,000 steps (10 seeds)", TRIAL01 + LANDER100, LANDER100),
)
"""The PPO rows on state vectors that the restarts of 2026-12-01 ran on: each row's label, today's
default's cell measured on the restarts' machine, and the result folder a restart's options extend."""


def beside_default(
    series: str, options: str, left_out: tuple[str, ...] = ()
) -> tuple[tuple[str, tuple[Cell, ...]], ...]:
    """The rows of :data:`STATE_PPO_ROWS` (but those whose folder is ``left_out``), each today's
    default beside the ``series`` folder's run with ``options``."""
    return tuple(
        (label, (default, series + stem + options))
        for label, default, stem in STATE_PPO_ROWS
        if stem not in left_out
    )


COMPARISONS: dict[str, Comparison] = {
    "reward-inputs": Comparison(
        ("environment, labels, steps", "reward reads (s, a)", "reward reads (s, a, s')"),
        (
            ("HalfCheetah-v5, 50, 100,000", (HC50, HC50 + NEXT)),
            ("Hopper-v5, 100, 100,000 (bounded output)", (HOP + "-reward.output=tanh", HOP + NEXT)),
            ("Acrobot-v1 (PPO), 100, 100,000", (ACRO, ACRO + NEXT)),
            ("CartPole-v1 (PPO), 50, 50,000", (CART, CART + NEXT)),
            ("Pendulum-v1, 20, 15,000", (PEND20, PEND20 + NEXT)),
            ("Pendulum-v1, 10, 15,000", (PEND10, PEND10 + NEXT)),
            (
                "InvertedDoublePendulum-v5, 50, 30,000 (bounded output)",
                (IDP + "-reward.output=tanh", IDP + NEXT),
            ),
            ("InvertedPendulum-v5, 30, 15,000 (bounded output)", (IP + "-reward.output=tanh", IP + NEXT)),
        ),
    ),
    "five-seeds": Comparison(
        ("setting", "uniform queries", "disagreement by probability, from the first query"),
        (
            ("Hopper-v5, 100 labels", (HOP + NEXT, HOP + PROB)),
            ("HalfCheetah-v5, 50 labels", (HC50 + NEXT, HC50 + PROB)),
            ("Pendulum-v1, 10 labels", (PEND10 + NEXT, PEND10 + PROB)),
        ),
    ),
    "warm-up": Comparison(
        ("setting", "uniform", "disagreement from the first query", "warm-up (30 labels)"),
        (
            ("Walker2d-v5, 100 labels (chosen on nothing)", (WALK100, None, WALK100 + WARM)),
            ("HalfCheetah-v5, 50 labels", (HC50 + NEXT, HC50 + PROB, HC50 + WARM)),
            ("CartPole-v1, 50 labels", (CART + NEXT, CART + PROB, CART + WARM)),
            ("InvertedDoublePendulum-v5, 50 labels", (IDP + NEXT, IDP + PROB, IDP + WARM)),
            (
                "Acrobot-v1, 100 labels, tie exploration",
                (ACRO + "-tie_exploration=True", None, ACRO + WARM + "-tie_exploration=True"),
            ),
            ("Hopper-v5, 100 labels", (HOP + NEXT, HOP + PROB, Text("= from the first query"))),
            (
                "HalfCheetah-v5, 100 `noisy` labels",
                (HC100_NOISY + NEXT, HC100_NOISY + PROB, Text("= from the first query")),
            ),
            (
                "HalfCheetah-v5, 100 `mistake` labels",
                (HC100_MISTAKE + NEXT, HC100_MISTAKE + PROB, Text("= from the first query")),
            ),
            ("Pendulum-v1, 10 labels", (PEND10 + NEXT, PEND10 + PROB, Text("= uniform"))),
            ("Reacher-v5, 30 labels", (REACH + "-active_selection=False", REACH + PROB, Text("= uniform"))),
        ),
    ),
    "broad": Comparison(
        ("row", "today's default before (`active_warm`; Hopper 100: `active`)", "broad"),
        (
            ("HalfCheetah-v5, 50 oracle labels", (HC50 + WARM, HC50 + "-method=broad")),
            (
                "HalfCheetah-v5, 100 `mistake` labels (uniform queries)",
                (HC100_MISTAKE + NEXT, HC100_MISTAKE + "-method=broad"),
            ),
            ("Swimmer-v5, 30 labels", (SWIM + "-method=active_warm", SWIM + "-method=broad")),
            ("Reacher-v5, 30 labels", (REACH + "-method=active_warm", REACH + "-method=broad")),
            ("Pendulum-v1, 10 labels", (PEND10 + "-method=active_warm", PEND10 + "-method=broad")),
            ("Pendulum-v1, 20 labels", (PEND20 + "-method=active_warm", PEND20 + "-method=broad")),
            (
                "Acrobot-v1, 100 labels (tie exploration)",
                (ACRO + WARM + "-tie_exploration=True", ACRO + "-method=broad"),
            ),
            ("CartPole-v1, 50 labels", (CART + WARM, CART + "-method=broad")),
            ("InvertedPendulum-v5, 30 labels", (IP + "-method=active_warm", IP + "-method=broad")),
            ("InvertedDoublePendulum-v5, 50 labels", (IDP + WARM, IDP + "-method=broad")),
            ("Walker2d-v5, 100 labels", (WALK100 + WARM, WALK100 + "-method=broad")),
            (
                "Walker2d-v5, 50 labels, 30,000 steps",
                (WALK50 + "-method=active_warm", WALK50 + "-method=broad"),
            ),
            ("Hopper-v5, 100 labels", (HOP + PROB, HOP + "-method=broad")),
        ),
    ),
    "varied": Comparison(
        ("row", "broad (the default before the gated bonus)", "varied+broad", "varied_mixed+broad"),
        (
            ("Pusher-v5", (PUSH + "-method=broad", PUSH + "-method=varied", PUSH + "-method=varied_mixed")),
            (
                "Reacher-v5",
                (REACH + "-method=broad", REACH + "-method=varied", REACH + "-method=varied_mixed"),
            ),
            ("Swimmer-v5", (SWIM + "-method=broad", None, SWIM + "-method=varied_mixed")),
            ("Pendulum-v1, 10 labels", (PEND10 + "-method=broad", None, PEND10 + "-method=varied_mixed")),
        ),
    ),
    "run-watch-actions": Comparison(
        (
            "row (5 seeds unless named)",
            "no action (the default until 2026-11-27)",
            "`--loop.watch-requery`",
            "`--loop.watch-end-clips` (the default from 2026-11-27)",
            "+ `--loop.watch-restore 2`",
            "+ `--loop.watch-restore 3.6` (today's default)",
            "+ `--loop.watch-against-older`",
            "+ `--loop.watch-against-older-early`",
        ),
        (
            (
                "LunarLanderContinuous-v3, 50 labels, 50,000 steps",
                (
                    WATCH + LUNAR,
                    WATCH + LUNAR + "-watch_requery=True",
                    WATCH + LUNAR + "-watch_end_clips=True",
                    WATCH + LUNAR + RESTORE,
                    WATCH28 + LUNAR + RESTORE36,
                    WATCH + LUNAR + OLDER,
                    EARLY + LUNAR + EARLY_ON,
                ),
            ),
            (
                "CartPole-v1 (PPO), 10 labels, 50,000 steps",
                (
                    WATCH + CART10,
                    None,
                    WATCH + CART10 + "-watch_end_clips=True",
                    WATCH + CART10 + RESTORE,
                    WATCH28 + CART10 + RESTORE36,
                    WATCH + CART10 + OLDER,
                    None,
                ),
            ),
            (
                "Acrobot-v1 (PPO), 30 labels, 100,000 steps (3 seeds; ending is the goal)",
                (
                    WATCH + ACRO30,
                    None,
                    WATCH + ACRO30 + "-watch_end_clips=True",
                    None,
                    None,
                    None,
                    None,
                ),
            ),
            (
                "Hopper-v5, 100 labels, 100,000 steps",
                (
                    Text("the same runs: it never fired"),
                    None,
                    WATCH + HOP + "-watch_end_clips=True",
                    WATCH + HOP + RESTORE,
                    WATCH28 + HOP + RESTORE36,
                    None,
                    None,
                ),
            ),
            (
                "HalfCheetah-v5, 50 labels, 100,000 steps (episodes never end)",
                (
                    Text("the same runs"),
                    None,
                    HC50 + "-method=broad",
                    WATCH + HC50 + RESTORE,
                    Text("the same runs: it never fired at 2"),
                    WATCH + HC50 + OLDER,
                    EARLY + HC50 + EARLY_ON,
                ),
            ),
            (
                "Walker2d-v5, 100 labels, 100,000 steps (3 seeds; a row no action was chosen on)",
                (WALK100 + WARM, None, None, None, WATCH28 + WALK100 + RESTORE36, None, None),
            ),
            (
                "InvertedDoublePendulum-v5, 50 labels, 30,000 steps (3 seeds; the same)",
                (IDP + WARM, None, None, None, WATCH28 + IDP + RESTORE36, None, None),
            ),
            (
                "Pendulum-v1, 10 labels, 15,000 steps (the same)",
                (
                    PEND10 + "-method=broad",
                    None,
                    None,
                    None,
                    WATCH28 + PEND10 + RESTORE36,
                    None,
                    EARLY + PEND10 + EARLY_ON,
                ),
            ),
            *(
                (
                    f"{name}, 30 labels, 15,000 steps ({n} seeds; episodes never end; the same)",
                    (row + "-method=broad", None, None, None, None, None, EARLY + row + EARLY_ON),
                )
                for name, row, n in (
                    ("Reacher-v5", REACH, 5),
                    ("Swimmer-v5", SWIM, 5),
                )
            ),
            (
                "Swimmer-v5, 50 labels, 15,000 steps (20 labels past the warm-up; the same)",
                (None, None, None, None, EARLY + SWIM50, None, EARLY + SWIM50 + EARLY_ON),
            ),
            (
                "Reacher-v5, 50 labels, 15,000 steps (the same; 2026-11-30, a third machine)",
                (None, None, None, None, EARLY30 + REACH50, None, EARLY30 + REACH50 + EARLY_ON),
            ),
            (
                "Pusher-v5, 50 labels, 15,000 steps (the same; 2026-11-30, a third machine)",
                (None, None, None, None, EARLY30 + PUSH50, None, EARLY30 + PUSH50 + EARLY_ON),
            ),
        ),
    ),
    "against-older-confirm": Comparison(
        (
            "row (5 seeds unless named)",
            "today's default",
            "`--loop.watch-against-older-early`",
            "a probe (removed)",
            "until confirmed (removed)",
        ),
        (
            (
                "HalfCheetah-v5, 50 labels, 100,000 steps",
                (HC50 + "-method=broad", EARLY + HC50 + EARLY_ON, None, None),
            ),
            (
                "the same, 2026-11-28 (another machine; default, early and probe: seeds 0 and 1)",
                (
                    OLDER28 + HC50,
                    OLDER28 + HC50 + EARLY_ON,
                    OLDER28 + HC50 + PROBE_ON,
                    OLDER28 + HC50 + CONFIRM_ON,
                ),
            ),
            (
                "the same, 2026-11-30 (the 2-core machine of sessions 41-48; seed 1 alone)",
                (OLDER30 + HC50, OLDER30 + HC50 + EARLY_ON, None, None),
            ),
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips (default: 3 seeds on another "
                "machine, 2026-11-28; the switch: 2 seeds, 2026-11-30, where it asks nothing, so its runs "
                "are today's default there: the gap is the machine's or the code's, not the switch's)",
                (DOT_LIFTED, DOT_AGAIN, None, None),
            ),
            (
                "Swimmer-v5, 30 labels, 15,000 steps",
                (SWIM + "-method=broad", EARLY + SWIM + EARLY_ON, None, None),
            ),
            (
                "the same, 2026-11-28 (another machine)",
                (OLDER28 + SWIM, None, None, OLDER28 + SWIM + CONFIRM_ON),
            ),
            (
                "LunarLanderContinuous-v3, 50 labels, 50,000 steps",
                (WATCH28 + LUNAR + RESTORE36, EARLY + LUNAR + EARLY_ON, None, None),
            ),
            (
                "the same, 2026-11-28 (another machine)",
                (OLDER28 + LUNAR, None, OLDER28 + LUNAR + PROBE_ON, OLDER28 + LUNAR + CONFIRM_ON),
            ),
        ),
    ),
    "run-watch-seed": Comparison(
        (
            "HalfCheetah-v5, 50 labels, 100,000 steps",
            "today's default",
            "`--loop.watch-requery`",
            "`--loop.watch-penalty 1`",
            "RUNE's bonus at 3, fading with the labels",
        ),
        (
            (
                "the failed seed (1) alone",
                (
                    WATCH + HC50,
                    WATCH + HC50 + "-watch_requery=True",
                    WATCH + HC50 + "-watch_penalty=1.0",
                    None,
                ),
            ),
            (
                "seeds 0 and 1, 2026-11-30 (the two columns side by side on one 2-core machine)",
                (BONUS30 + HC50, None, None, BONUS30 + HC50 + BONUS_ON),
            ),
        ),
    ),
    "bonus-gate": Comparison(
        (
            "row (5 seeds unless named; 2026-11-30, every column side by side on one 2-core machine)",
            "the default until 2026-11-30 (no bonus)",
            "RUNE's bonus at 3, fading with the labels",
            "+ gated by the fresh labels at 0.75",
            "+ measured from the newest steps' mean where episodes end",
        ),
        (
            (
                "HalfCheetah-v5, 50 labels, 100,000 steps (episodes never end)",
                (GATE30 + HC50, GATE30 + HC50 + BONUS_ON, GATE30 + HC50 + GATE_ON, Text("= gated")),
            ),
            (
                "Pendulum-v1, 10 labels, 15,000 steps (episodes never end)",
                (GATE30 + PEND10, None, GATE30 + PEND10 + GATE_ON, Text("= gated")),
            ),
            *(
                (
                    f"{name}, 30 labels, 15,000 steps (3 seeds; episodes never end)",
                    (GATE30 + row, None, GATE30 + row + GATE_ON, Text("= gated")),
                )
                for name, row in (("Swimmer-v5", SWIM), ("Reacher-v5", REACH))
            ),
            (
                "LunarLanderContinuous-v3, 50 labels, 50,000 steps (the bonus alone: seed 0; gated: 0-2)",
                (
                    GATE30 + LUNAR,
                    GATE30 + LUNAR + BONUS_ON,
                    GATE30 + LUNAR + GATE_ON,
                    CENTRED30 + LUNAR + GATE_ON,
                ),
            ),
            (
                "CartPole-v1 (PPO), 10 labels, 50,000 steps (every seed of both ends at 500)",
                (GATE30 + CART10, None, None, CENTRED30 + CART10 + GATE_ON),
            ),
        ),
    ),
    "bonus-default": Comparison(
        (
            "row where random episodes only meet time limits (5 seeds unless named; 2026-11-30, both "
            "columns side by side on one 2-core machine)",
            "the default until 2026-11-30 (no bonus)",
            "the gated bonus (today's default)",
        ),
        (
            ("HalfCheetah-v5, 50 labels, 100,000 steps", (GATE30 + HC50, GATE30 + HC50 + GATE_ON)),
            (
                "the same, seeds 0-9 (seeds 5-9 run later, scored against the true-reward runs of seeds 0-4)",
                (SEEDS30 + HC50, SEEDS30 + HC50 + GATE_ON),
            ),
            ("Pendulum-v1, 10 labels, 15,000 steps", (GATE30 + PEND10, GATE30 + PEND10 + GATE_ON)),
            ("Swimmer-v5, 30 labels, 15,000 steps (3 seeds)", (GATE30 + SWIM, GATE30 + SWIM + GATE_ON)),
            ("Reacher-v5, 30 labels, 15,000 steps (3 seeds)", (GATE30 + REACH, GATE30 + REACH + GATE_ON)),
            ("Pusher-v5, 30 labels, 15,000 steps (3 seeds)", (DEFAULT30 + PUSH, DEFAULT30 + PUSH + GATE_ON)),
            (
                "Acrobot-v1 (PPO, discrete actions), 30 labels, 100,000 steps",
                (DEFAULT30 + ACRO30, DEFAULT30 + ACRO30 + GATE_ON),
            ),
            (
                "Pendulum-v1, 10 labels of the `mistake` teacher (a tenth of answers flipped), 15,000 steps",
                (DEFAULT30 + PEND10_MISTAKE, DEFAULT30 + PEND10_MISTAKE + GATE_ON),
            ),
        ),
    ),
    "tie-probe": Comparison(
        (
            "row (5 seeds unless named)",
            "`--loop.tie-probe 0` (every round asks its share, the default until 2026-11-27)",
            "`--loop.tie-probe 5` (today's default)",
        ),
        (
            ("Acrobot-v1 (PPO), 30 labels, 100,000 steps", (TIES + ACRO30 + NO_PROBE, TIES + ACRO30)),
            ("CartPole-v1 (PPO), 50 labels, 50,000 steps (3 seeds)", (TIES + CART + NO_PROBE, TIES + CART)),
        ),
    ),
    "tie-exploration": Comparison(
        (
            "row (5 seeds)",
            "raw state entropy (until 2026-11-27)",
            "standardised (today's default)",
            "standardised, and `--loop.tie-exploration-stuck`",
        ),
        (
            (
                "Acrobot-v1 (PPO), 30 labels, 100,000 steps",
                (TIES + ACRO30, EXPLORE + ACRO30, EXPLORE + ACRO30 + STUCK),
            ),
            (
                "CartPole-v1 (PPO), 10 labels, 50,000 steps",
                (CART10_WATCH, EXPLORE + CART10, EXPLORE + CART10 + STUCK),
            ),
        ),
    ),
    "agent-reset": Comparison(
        (
            "row (PPO)",
            "no restart (today's default)",
            "restarted half-way, `--loop agent_reset_at=0.5`",
            "+ as a trial of 2 iterations, `--loop agent_reset_trial=2`",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips (3 seeds)",
                (
                    "pixels-2026-11-27/" + DOT200 + "-fragment_length=10",
                    RESET + DOT200 + RESET_ON + "-fragment_length=10",
                    RESET + DOT200 + RESET_ON + TRIAL_ON + "-fragment_length=10",
                ),
            ),
            (
                "Acrobot-v1, 30 labels, 100,000 steps (5 seeds)",
                (EXPLORE + ACRO30, RESET + ACRO30 + RESET_ON, RESET + ACRO30 + RESET_ON + TRIAL_ON),
            ),
            (
                "the same, measured again on 2026-11-28 (another machine)",
                (None, RESET28 + ACRO30 + RESET_ON, None),
            ),
            (
                "CartPole-v1, 10 labels, 50,000 steps (5 seeds)",
                (EXPLORE + CART10, RESET + CART10 + RESET_ON, RESET + CART10 + RESET_ON + TRIAL_ON),
            ),
            (
                "LunarLander-v3 (chosen on nothing), 50 labels, 100,000 steps "
                "(5 and 3 seeds, against the same 5 true-reward runs)",
                (RESET + LANDER, RESET + LANDER + RESET_ON, None),
            ),
            (
                "the same, measured again on 2026-11-28 (another machine; 10, 5 and 10 seeds, against "
                "10 true-reward runs: those of seeds 0-4 above and 5 more)",
                (RESET28 + LANDER, RESET28 + LANDER + RESET_ON, RESET + LANDER + RESET_ON + TRIAL_ON),
            ),
            (
                "LunarLander-v3, 100 labels, 100,000 steps (10 seeds, 2026-11-28; the same true-reward runs)",
                (RESET28 + LANDER100, None, None),
            ),
            (
                "the same, a trial of 1 iteration (`--loop agent_reset_trial=1`) in the last column",
                (None, None, RESET + LANDER + RESET_ON + "-agent_reset_trial=1"),
            ),
        ),
    ),
    "entropy-floor": Comparison(
        (
            "row (PPO; the floor is on by default on images)",
            "no floor",
            "a floor of half the largest entropy, to the end (until 2026-11-28)",
            "the floor lifted after the last query (today's default)",
            "the same without the entropy bonus of 0.01 (`--loop agent.ent_coef=0.0`; 2 seeds)",
            "the floor fading with the labels still to be asked "
            "(`--loop floor_schedule=labels`; 2 seeds, 2026-11-30)",
            "today's default again, on the fading floor's machine the same day (2 seeds; the runs of "
            "`--loop watch_against_older_early=true`, which asks nothing here)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips (3 seeds)",
                (
                    "pixels-2026-11-27/" + DOT200 + "-fragment_length=10",
                    FLOOR + DOT200 + "-fragment_length=10",
                    DOT_LIFTED,
                    FLOOR + DOT200 + "-agent.ent_coef=0.0" + LIFTED + "-fragment_length=10",
                    DOT_FADE,
                    DOT_AGAIN,
                ),
            ),
        ),
    ),
    "dot-label-timing": Comparison(
        (
            "row (PPO, 200 labels)",
            "today's default: 10,000 random steps, 60 labels before the agent trains, the rest hyperbolic",
            "1,000 random steps (`--loop initial_steps_per_label=0`; 2 seeds)",
            "every label in the first third of the run (`--loop query_schedule=front`; 2 seeds)",
            "100 labels before the agent trains (`--loop initial_label_frac=0.5`)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 100,000 steps, 10-step clips",
                (
                    DOT_LIFTED,
                    TIMING + DOT200_CLIPS + "-initial_steps_per_label=0",
                    TIMING + DOT200_CLIPS + "-query_schedule=front",
                    TIMING + DOT200_CLIPS + "-initial_label_frac=0.5",
                ),
            ),
        ),
    ),
    "dot-reset-heads": Comparison(
        (
            "row (PPO)",
            "no restart (the entropy floor, lifted after the last query; the default until 2026-12-02)",
            "restarted half-way from fresh weights (`--loop agent_reset_at=0.5`; "
            "before the floor, 2026-11-27)",
            "restarted half-way, the heads only "
            "(`--loop agent_reset_at=0.5 --loop agent_reset_layers=heads`)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips (3 seeds)",
                (
                    DOT_LIFTED,
                    RESET + DOT200 + RESET_ON + "-fragment_length=10",
                    RESET + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                ),
            ),
            (
                "LunarLander-v3 (chosen on nothing), 50 labels, 100,000 steps (7 and 10 seeds, "
                "2026-11-29, the machine of the heads-only rows; against the 10 true-reward runs "
                "of the 2026-11-28 rows of the restart's table)",
                (RESET29 + LANDER, None, RESET29 + LANDER + RESET_ON + HEADS_ON),
            ),
        ),
    ),
    "dot-32px": Comparison(
        (
            "row (PPO, 400 labels, 50,000 steps, 10-step clips)",
            "the reward's training shortened to 10 epochs per update (`--loop trainer.epochs=10`)",
            "no restart (the default until 2026-12-02)",
            "restarted half-way, the heads only "
            "(`--loop agent_reset_at=0.5 --loop agent_reset_layers=heads`)",
            "the soft restart half-way, 2026-12-02 on the third machine's kind (today's default; seeds 3 "
            "and 4 two sessions later, the same kind)",
            "no restart (`--loop agent_reset_at=0`): seeds 0 and 1 on the same machine's kind and day, "
            "seed 2 on an AVX2 machine (family 25 model 1), the next session, seed 4 two sessions later "
            "on the third machine's kind",
            "the soft restart that spares a climbing agent (`--loop agent_reset_standing=1.5`), seeds 2 "
            "and 3 on the third machine's kind: both spared, so each ran as without a restart",
        ),
        (
            (
                "prefrl/MovingDot-v0 at 32 px (`--loop 'env.kwargs={\"size\": 32}'`)",
                (
                    "unnamed-check/" + DOT32 + KW32 + "-fragment_length=10-trainer.epochs=10",
                    DOT32_29 + KW32 + "-fragment_length=10",
                    DOT32_29 + RESET_ON + HEADS_ON + KW32 + "-fragment_length=10",
                    SOFT02 + DOT32 + KW32 + "-fragment_length=10",
                    SOFT02 + DOT32 + "-agent_reset_at=0" + KW32 + "-fragment_length=10",
                    STANDING02 + DOT32 + "-agent_reset_standing=1.5" + KW32 + "-fragment_length=10",
                ),
            ),
        ),
    ),
    "dot-machines": Comparison(
        (
            "row (PPO): today's default on three 2-core machines of one kind, then the heads-only restart "
            "on two",
            "2026-11-28 (the floor's rows)",
            "2026-11-30, the forty-eighth session's machine (2 seeds)",
            "2026-11-30, a third machine: AMD EPYC family 25 model 17, AVX512 kernels (the default until "
            "2026-12-02)",
            "restarted half-way, the heads only (`--loop agent_reset_at=0.5 --loop "
            "agent_reset_layers=heads`), 2026-11-29 (the machine of the heads-only rows)",
            "the same, 2026-11-30, on the third machine",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips",
                (
                    DOT_LIFTED,
                    DOT_AGAIN,
                    DOT_THIRD + DOT200_CLIPS,
                    RESET + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                    DOT_THIRD + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                ),
            ),
        ),
    ),
    "dot-which-head": Comparison(
        (
            "row (PPO), on the third machine",
            "no restart (the default until 2026-12-02)",
            "restarted half-way, both heads (`--loop agent_reset_layers=heads`)",
            "the action head only (`--loop agent_reset_layers=action`)",
            "the value head only (`--loop agent_reset_layers=value`)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips: seeds 0-4, then the "
                "default's stuck seeds 1-3 only",
                (
                    DOT_THIRD + DOT200_CLIPS,
                    DOT_THIRD + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                    DOT_WHICH + DOT200 + RESET_ON + "-agent_reset_layers=action-fragment_length=10",
                    DOT_WHICH + DOT200 + RESET_ON + "-agent_reset_layers=value-fragment_length=10",
                ),
            ),
        ),
    ),
    "entropy-floor-states": Comparison(
        (
            "row (PPO; no floor on states by default)",
            "no floor (today's default on states)",
            "`--agent.min-entropy 0.5`, to the end",
            "`--agent.min-entropy 0.5`, lifted after the last query",
        ),
        (
            (
                "Acrobot-v1, 30 labels, 100,000 steps (5, 3 and 5 seeds)",
                (EXPLORE + ACRO30, FLOOR + ACRO30 + FLOOR_ON, FLOOR + ACRO30 + FLOOR_ON + LIFTED),
            ),
            (
                "the same, the floor to the end again with the code of 2026-11-28 (seeds 0 and 1)",
                (None, FLOOR + ACRO30 + FLOOR_ON + KEPT, None),
            ),
            (
                "CartPole-v1, 10 labels, 50,000 steps (5 seeds)",
                (EXPLORE + CART10, FLOOR + CART10 + FLOOR_ON, FLOOR + CART10 + FLOOR_ON + LIFTED),
            ),
            (
                "LunarLander-v3, 50 labels, 100,000 steps (10, 5 and 10 seeds)",
                (RESET28 + LANDER, FLOOR + LANDER + FLOOR_ON, FLOOR + LANDER + FLOOR_ON + LIFTED),
            ),
        ),
    ),
    "reset-trial": Comparison(
        (
            "row (PPO on state vectors; 5 seeds unless named; 2026-12-01, both columns on one 2-core "
            "machine, AMD EPYC family 25 model 17)",
            "no restart (today's default)",
            "the action head redrawn half-way, on trial for two iterations (`--loop agent_reset_at=0.5 "
            "--loop agent_reset_layers=action --loop agent_reset_trial=2`)",
        ),
        beside_default(TRIAL01, HEAD_TRIAL),
    ),
    "dot-trial": Comparison(
        (
            "row (PPO), on the third machine",
            "no restart (the default until 2026-12-02)",
            "the action head redrawn half-way (`--loop agent_reset_layers=action`)",
            "the same on trial for two iterations (`--loop agent_reset_trial=2`)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips: seeds 0-4; the action head: "
                "the default's stuck seeds 1-3; on trial: seeds 0, 1 and 4",
                (
                    DOT_THIRD + DOT200_CLIPS,
                    DOT_WHICH + DOT200 + RESET_ON + "-agent_reset_layers=action-fragment_length=10",
                    TRIAL01 + DOT200 + HEAD_TRIAL + "-fragment_length=10",
                ),
            ),
        ),
    ),
    "dot-heads-trial": Comparison(
        (
            "row (PPO), on the third machine",
            "no restart (the default until 2026-12-02)",
            "both heads redrawn half-way (`--loop agent_reset_layers=heads`)",
            "the same on trial for two iterations (`--loop agent_reset_trial=2`)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips: seeds 0-4; on trial: "
                "seeds 0, 1 and 4",
                (
                    DOT_THIRD + DOT200_CLIPS,
                    DOT_THIRD + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                    HEADS_TRIAL01 + DOT200 + RESET_ON + HEADS_ON + "-agent_reset_trial=2-fragment_length=10",
                ),
            ),
        ),
    ),
    "dot-soft": Comparison(
        (
            "row (PPO), on the third machine",
            "no restart (the default until 2026-12-02)",
            "both heads redrawn half-way (`--loop agent_reset_layers=heads`)",
            "the soft restart half-way, `--loop agent_reset_layers=soft` (today's default)",
        ),
        (
            (
                "prefrl/MovingDot-v0, 200 labels, 100,000 steps, 10-step clips: seeds 0-4",
                (
                    DOT_THIRD + DOT200_CLIPS,
                    DOT_THIRD + DOT200 + RESET_ON + HEADS_ON + "-fragment_length=10",
                    SOFT01 + DOT200 + SOFT_ON + "-fragment_length=10",
                ),
            ),
        ),
    ),
    "soft-reset": Comparison(
        (
            "row (PPO on state vectors; 5 seeds unless named; both columns on one 2-core machine, AMD EPYC "
            "family 25 model 17)",
            "no restart (today's default, 2026-12-01)",
            "the soft restart half-way (`--loop agent_reset_at=0.5 --loop agent_reset_layers=soft`)",
        ),
        beside_default(SOFT01, SOFT_ON, left_out=(CART,)),
    ),
}
"""Tables of settings side by side, named by the prose around them."""
