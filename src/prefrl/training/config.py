"""Configuration of :class:`~prefrl.training.loop.PreferenceLoop`, and what it reports of its state."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from prefrl.config_types import HIDDEN_ENDS, HiddenEnd, OptBool, OptFloat, OptInt
from prefrl.selection.selectors import MEASURES
from prefrl.training.schedules import SCHEDULES

TRIAL_MAX = 6
"""The longest trial of a restart, in iterations (``agent_reset_trial``): the replaced policy
must still be among the policies the restore keeps (the newest 8)."""

ResetLayers = Literal["all", "heads", "action", "value", "soft"]  # what agent_reset_at redraws
OptResetLayers = ResetLayers | None  # None: soft for the automatic restart on images, else all
RESET_LAYERS: tuple[ResetLayers, ...] = get_args(ResetLayers)
"""What ``agent_reset_at`` restarts: every weight, an on-policy agent's last layers (both heads),
one of them (the action head, the value head), or ``soft`` (the value head redrawn, the action
head scaled down)."""

EndValue = Literal["absorbing", "median", "mean"]  # what an episode end the agent is told is worth
END_VALUES: tuple[EndValue, ...] = get_args(EndValue)

UNLABELLED_CLIPS = 512
"""Unlabelled clips drawn per reward update for semi-supervised pseudo-labels."""
HELDOUT_PAIRS = 200
"""Fresh clip pairs per iteration for ``reward/heldout_accuracy`` (see ``RewardFit.measure``)."""

AUTO_END_CLIP_FRAC = 0.5
"""Share of query clips drawn at episode ends while most labels are ties (``end_clip_frac=None``):
on Acrobot-v1 with 30 labels it turned a run whose every label was a tie (return -500) into
one that learned (see docs/benchmarks/label-efficiency.md)."""


@dataclass(frozen=True)
class LoopConfig:
    """The preference-learning loop (schedule of steps, queries and reward updates)."""

    total_steps: int = 15_000
    """Environment steps in all (initial random + pre-training + agent training)."""
    total_labels: int = 20
    """Query budget: comparisons asked of the teacher over the whole run."""
    iterations: int = 14
    """Reward-update iterations; the agent trains between consecutive ones."""
    initial_steps: int = 1_000
    """Random-action steps collected before the first query (at least; see
    initial_steps_per_label)."""
    initial_steps_per_label: OptInt = None
    """Random-action steps per label of the budget before the first query, up to a tenth of
    total_steps; the run takes the larger of this and initial_steps (0: initial_steps alone).
    The first reward is fitted on clips of this random behaviour: more of it gives the initial
    queries clips of several episodes to choose from rather than overlapping clips of one.
    Default auto: 100 where random actions only meet time limits (their episodes are long),
    0 where they reach a termination within initial_steps (many short episodes already);
    resolved by prefrl train (a loop built in code takes 0). Evidence: docs/benchmarks/defaults.md."""
    pretrain_steps: int = 0
    """Unsupervised pre-training steps (PEBBLE state-entropy reward) before the first query."""
    fragment_length: int = 50
    """Transitions per clip."""
    initial_label_frac: float = 0.3
    """Share of the label budget asked before any agent training."""
    initial_epoch_multiplier: float = 5.0
    """The first reward training runs this many times more epochs."""
    query_schedule: Literal["constant", "hyperbolic", "inverse_quadratic", "front"] = "hyperbolic"
    """How the remaining labels are spread over the iterations: constant, hyperbolic (1/(1+t)),
    inverse_quadratic (1/(1+t)^2) in the run's progress t, or front (evenly over the first
    third of the iterations, none after)."""
    labels_per_round: OptInt = None
    """Front-loaded rounds instead of query_schedule: ask this many labels before agent
    training and again every round_interval iterations until total_labels are asked
    (initial_label_frac is then unused). None: query_schedule."""
    round_interval: int = 1
    """With labels_per_round: iterations from one round of queries to the next."""
    transition_oversampling: float = 1.0
    """Fragments drawn per fragment needed (>1: pairs picked from a larger pool of clips)."""
    active_selection: OptBool = None
    """Choose each query among active_selection_oversampling candidate pairs by ensemble
    disagreement (PEBBLE) instead of uniformly, once active_selection_from labels are in.
    None (auto, the default): on where it can work (ensemble_size >= 2, or the entropy
    measure), written to config.json as the one chosen (against uniform queries:
    docs/benchmarks/defaults.md)."""
    active_selection_oversampling: int = 5
    """With active selection: candidate pairs considered per query asked."""
    active_selection_from: int = 30
    """With active selection: queries stay uniform until the reward has been trained on this
    many labels that prefer a clip (ties do not count; 0: disagreement from the first query
    after the initial batch, PEBBLE's way). An ensemble trained on a handful of labels, or on
    ties, disagrees mostly by chance (docs/benchmarks/defaults.md)."""
    active_selection_share: float = 1.0
    """With active selection: share of each iteration's queries chosen by disagreement; the
    rest are drawn uniformly among the other candidates (1: all by disagreement)."""
    uncertainty_measure: Literal["logit", "probability", "label", "entropy"] = "probability"
    """Disagreement measure for active selection. probability (PEBBLE's): the spread of the
    members' preference probabilities, largest where members disagree on which clip is better.
    logit: the variance of their logits, which grows with the size of a return gap the members
    agree on (long absorbing tails); see docs/benchmarks/queries.md, "Which disagreement"."""
    max_labels_kept: OptInt = 3000
    """Train on at most this many of the newest labels (older ones dropped, bounding memory in
    long pixel runs); None keeps all."""
    tie_exploration: bool = True
    """While every label so far is a tie (the learned reward is flat: no clip yet showed a
    difference, e.g. a sparse reward never reached), the agent trains on PEBBLE's state-entropy
    reward instead, so that it reaches states whose clips differ; from the first label that
    prefers a clip on, the learned reward. Changes nothing in runs whose labels are not all ties."""
    hide_terminations: bool = False
    """The agent is told every episode end as a truncation: it bootstraps from the last frame's
    value instead of an absorbing state worth 0, so the learned reward's level (above or below
    the absorbing state's) pays neither for ending episodes nor for avoiding their end. The
    clips, labels and reward still see the true terminations. As the original work on Atari
    (no episode-end signal to the agent). Also the agents of --reward-from and of
    --final-agent-steps."""
    hidden_end: HiddenEnd = "truncation"
    """What the agent is told at a hidden termination (with --loop.hide-terminations).
    truncation: the episode was cut, so its value target bootstraps from the last frame's
    value, as if the episode had gone on from there; an end costs the agent nothing, neither
    a fall nor a death. next_episode: nothing ended, so the agent's stream runs on into the
    next episode's first frame and its value target bootstraps from there, as an agent playing
    on through a game over would: an end the reward's level does not pay for, but one that
    costs what the agent would have earned had it lived on (a CoinRun death costs the coin).
    Time limits stay truncations either way."""
    center_hidden_ends: bool = False
    """With --loop.hide-terminations: keep the agent's reward centred (its running mean taken
    off) after episodes have terminated, instead of normalising it by scale only from the first
    termination on. Scale only keeps an absorbing state worth 0, which matters where the agent
    is told an end; told none, the reward's level pays neither for ending nor for avoiding an
    end, and centring only keeps the agent's value targets near 0 rather than at the level's
    level / (1 - gamma), which its value head must re-learn after every reward update (CoinRun's
    learned rewards put the agent's steps 0.4 to 1.8 per-step stds below the absorbing state).
    Also the agents of --final-agent-steps; --reward-from reads the run's normaliser."""
    end_value: EndValue = "absorbing"
    """What an episode's end is worth to an agent that is told it (episodes that terminate,
    without --loop.hide-terminations), on the agent's normalised reward. absorbing: the learned
    absorbing state's reward (the agent's reward is normalised by scale only from the first
    termination on, so that state stays worth 0); where strictly preferred clips end in it (a
    CoinRun coin is always followed by the level's end) it can take part of their credit and
    pay for every end. median: the median of the agent's steps under the current reward (the
    reward is centred on it after each update), so an end pays as a typical step does and
    costs what the agent would have earned above it (a CoinRun death costs the coin); the
    learned absorbing value plays no part. mean: the same with the mean of its steps, which
    the few steps where something happens pull away from the typical one."""
    tie_exploration_stuck: bool = False
    """Explore (as tie_exploration) for an iteration also where labels preferring clips exist,
    but the newest 3 labels (some of this iteration) were ties while the reward puts the agent's newest steps
    nearer the clips its labels rejected than those they preferred (watch/standing below 0.5): an
    agent stuck where no clip differs, which the labels cannot lead out (Acrobot's arm hanging
    still once its first labels are in). Logged as agent/stuck_exploration."""
    floor_after_queries: bool = False
    """Keep the agent's entropy floor (--agent.min-entropy) once the label budget is spent.
    Off (the default): the floor is there so that the clips the labels compare stay varied;
    the agent's steps after the last query (the last iteration's) make no clip that will be
    compared, so there it trains on the final reward with its configured entropy bonus, and
    the policy it ends with is not held at the floor's randomness. Logged as
    agent/floor (the share of the floor that may act: 1 or 0 under floor_schedule constant)."""
    floor_schedule: Literal["constant", "labels"] = "constant"
    """How the agent's entropy floor (--agent.min-entropy) follows the label budget while queries
    remain. constant: the whole floor, as configured. labels: the floor's share scaled by the
    share of the budget still to be asked after the iteration's queries, so it acts in full while
    most labels are to come (an agent that stops sampling early brings one behaviour to every
    later comparison) and fades as they run out (a policy kept random where few more clips will be
    compared pays for it in its own play: CoinRun's learned agents took fewer coins with the
    floor than without it). Either way the floor goes at the last query unless
    floor_after_queries keeps it. Logged as agent/floor (the floor's scale, 0 to 1). Off: on the
    moving dot (200 labels, 2 seeds) labels scored 0.07 and -0.00, constant 0.11 and -0.00 on the
    same machine: not shown to win."""
    agent_reset_at: OptFloat = None
    """Restart the agent once, at this share of its training iterations (0.5: before iteration
    round(0.5 x iterations)): a policy shaped by the first rewards, fitted to the fewest labels,
    can stay in what they paid after the reward has learned better (the primacy bias of Nikishin
    et al. 2022). Off-policy agents keep their replay buffer, relabelled. None (auto): the soft
    restart at IMAGE_RESET_AT (0.5) for an on-policy sb3 agent on a learned reward with discrete
    actions on images, as the entropy floor, and none elsewhere: on the moving dot (200 labels,
    five seeds) 0.91 (worst 0.84) against 0.28 (worst 0.05) without it; Enduro's and CoinRun's
    seed 0 a little below no restart, within one seed's noise (0.09 against 0.12; 0.85 against
    0.90). Not on state vectors: the soft restart lost LunarLander-v3 at 100 labels (0.19 of ten
    seeds against 0.71), the full one two climbing LunarLander seeds and HalfCheetah-v5's late
    recovery (SAC). Logged as agent/reset; the report says where. 0: never."""
    agent_reset_layers: OptResetLayers = None
    """What agent_reset_at restarts. all: every weight (policy, value function, optimiser).
    heads: an on-policy agent's last layers (action and value heads; a Gaussian policy's log-std)
    and its optimiser, keeping the layers that read the observation (Nikishin et al. 2022).
    action, value: that head only. soft: the value head redrawn and the action head's weights
    scaled by 0.1 (prefrl.training.agent_step.SOFT_KEEP): the policy samples near uniformly again
    but keeps the order of its preferences; a stuck policy on a frozen reward was freed by the two
    together, by neither alone. On the moving dot (200 labels, five seeds) heads 0.89 (worst 0.85),
    soft 0.91 (worst 0.84); on Enduro's seed 0 heads 0.00, soft 0.09, no restart 0.12. None: soft
    for the automatic restart on images (agent_reset_at None), all for a given agent_reset_at."""
    agent_reset_trial: OptInt = None
    """With agent_reset_at: the restart is a trial. This many iterations later the reward, as it
    stands after that iteration's fit, compares the fresh agent's newest episodes with the last
    episodes of the policy it replaced (the copies of watch_restore); where the fresh agent is
    paid less, the replaced policy comes back and trains on (logged as agent/reset_trial, the
    fresh agent's lead in standard errors, and agent/reset_undone; where episodes outlast the
    copies' memory, as in long Atari games, windows of their newest steps are compared instead,
    prefrl.training.restore). A trial that would run past the last iteration ends there (none
    where the restart comes at the last). Off: it kept the
    fresh agent where the restart saved runs (the moving dot, Acrobot-v1's stuck seed) and gave
    Acrobot's good seeds their policy back, but LunarLander-v3 seeds whose old policy came back
    still ended below the same seeds without a restart. None: the restart stands."""
    agent_reset_standing: OptFloat = None
    """With agent_reset_at: restart only an agent that its reward does not yet pay beyond what its
    labels preferred: where watch/standing at the restart's iteration (the agent's newest steps
    between the steps of the clips its labels rejected, 0, and those they preferred, 1, under the
    reward before that iteration's fit) is below this. An agent paid above it is climbing and
    keeps its policy (logged as agent/reset_spared; the report says where). None: the restart
    comes whatever the agent does. Off: on the moving dot at 1.5 it spared exactly the seeds that
    were climbing (standing 2.1 to 3.5; the others 0.8 to 1.3), but their endings moved both ways
    (0.96 against 0.91 restarted; 0.94 against 0.87; 0.82 against 0.93), within a seed's noise."""
    tie_probe: int = 5
    """While every label so far is a tie (or none is in yet), an iteration's queries start with
    this many: the rest are asked only if one of those answers prefers a clip, and otherwise go
    back to the budget of later iterations (logged as labels/deferred), so that a sparse reward
    no clip reaches yet (CoinRun's coin, a goal) does not spend the first round on ties. A
    teacher that answers later (people) is asked at most this many per iteration once its
    answers so far are all ties. 0: off (every iteration asks its share)."""
    exploration_frac: float = 0.0
    """Share of query clips taken from random-action episodes (exploration mixing)."""
    archive_share: float = 0.0
    """Mixture queries (PPE): share of each round's queries whose clips come from the episodes of
    earlier iterations, the pairs the reward ensemble disagrees on most; the rest come from the
    latest episodes as usual. 0: off (PPE used 0.5)."""
    archive_steps: int = 50_000
    """Mixture queries: environment steps of earlier episodes kept for them (the newest)."""
    exploration_bonus: OptFloat = None
    """RUNE: the agent's reward gets this weight x the reward ensemble's std (its disagreement),
    fading by exploration_bonus_schedule and exploration_bonus_gate; 0: off. None (auto): 3.0
    (near the learned reward's own scale; RUNE's 0.05 moves nothing), fading with the labels and
    gated at 0.75, where random episodes only meet time limits and the reward reads state vectors
    (an MLP ensemble) in a run with an agent, neither penalty and no pretrain_steps; 0 elsewhere
    (where episodes end it lost seeds, and after PEBBLE's pre-training on DMC walker_walk; on
    images it is not measured). A
    PreferenceLoop built without prefrl train's resolving treats None as 0 (docs/techniques.md)."""
    exploration_bonus_decay: float = 1e-4
    """RUNE: decay of the exploration bonus per environment step (exploration_bonus_schedule
    steps)."""
    exploration_bonus_schedule: Literal["auto", "steps", "labels"] = "auto"
    """How the exploration bonus fades. steps: RUNE's exponential decay per environment step,
    exploration_bonus x (1 - exploration_bonus_decay)^env_steps, the same whatever the run's
    length and label schedule. labels: the bonus scaled by the share of the label budget still to
    be asked, as floor_schedule labels scales the entropy floor, so the agent is drawn to what
    the reward's members dispute while labels can still settle it, whatever the run's length, and
    not at all once the last query is asked (exploration_bonus_decay is then unused). auto:
    labels where the bonus is auto, steps (RUNE's) where a weight is given."""
    exploration_bonus_gate: OptFloat = None
    """The exploration bonus only where the reward is unreliable: with a level above 0.5, the
    bonus is scaled by (level - a) / (level - 0.5), clipped to [0, 1], where a is the reward
    model's accuracy on the labels that came since its previous update, guessed before it trains
    on them (reward/fresh_accuracy, a held-out figure that needs no true reward): the whole bonus
    while the reward guesses its fresh labels no better than chance, none once it guesses at
    least the level. The whole bonus before the first labels are scored. 0: no gate (the bonus
    is paid by its schedule alone). None (auto): 0.75 where the bonus is auto, no gate where a
    weight is given."""
    uncertainty_penalty: float = 0.0
    """Pessimism: the agent's reward loses this weight x the reward ensemble's std (no decay), so
    where the members disagree (states no label covers) the reward counts for less and the agent
    is not drawn there (the conservative ensemble reward against over-optimisation). Subtracted
    from the exploration bonus where both are set. 0: off."""
    watch_agreement: float = 0.4
    """The run watch's alarm (prefrl.training.watch): it fires at an iteration where the
    reward ensemble's members agree less than this on the agent's newest steps (the mean pairwise
    correlation of their rewards, watch/agreement; -1 turns it off). It needs no true reward,
    so it works with people; the run's report and page say where it fired."""
    watch_requery: bool = False
    """When the run watch fires, ask twice this iteration's queries (the extra ones taken from
    later iterations' share of the budget), all chosen by disagreement among the agent's newest
    clips: labels go where the members split."""
    watch_end_clips: bool = True
    """While the run watch finds that the reward pays the agent to end its episodes
    (watch/stay_margin below 0, where episodes terminate), half of the iteration's query
    clips are cut at episode ends (as end_clip_frac 0.5), so the labels say how each
    ending compares with going on. On by default: it saved both failed seeds of
    LunarLanderContinuous-v3 at 50 labels and changed nothing where it never fired
    (docs/benchmarks/label-efficiency.md, "Acting on it")."""
    watch_restore: float = 3.6
    """Keep the agent's last policies (one per iteration, in memory, with the last episodes
    each played) and end the run with the one the final reward pays most, where it beats the
    final policy by more than this many standard errors of the difference
    (prefrl.training.restore): a policy led astray late by a reward that was wrong for a while
    ends with what it had. During the run the comparison is only logged (watch/restore_gap).
    3.6 is where noise alone puts one of the 7 earlier kept policies that far ahead about once
    in 1,000 runs (one-sided, Bonferroni); 2 also gave back a policy on LunarLanderContinuous-v3
    and lost there. On by default: it saved Hopper-v5's failed seed and lost nothing on the other
    rows measured (docs/benchmarks/label-efficiency.md, "Acting on it"). 0: off."""
    watch_against_older: bool = False
    """Half of each iteration's queries (of those mixture queries leave) put a clip of the
    agent's newest episodes against a clip of its earlier ones (kept as for mixture queries,
    archive_steps), chosen by ensemble disagreement: the teacher's answers say whether the
    agent's progress, as the reward sees it, is real, and they correct the reward exactly where
    the agent is going. Logged: watch/reward_newer (how likely the reward finds the newer clip
    better) and, with a teacher that answers at once, watch/teacher_newer (how often the
    teacher did)."""
    watch_against_older_early: bool = False
    """watch_against_older only until active_selection_from labels are in: while the reward has
    seen the fewest labels and the agent changes fastest, half of each round puts the newest
    clips against older ones, so a first reward that points the agent the wrong way is corrected
    where it leads; afterwards every query goes where the ensemble splits among the newest clips.
    Not while ending an episode pays (watch_end_clips): those rounds' labels all go to episode
    ends. Since 2026-11-30 only where the budget holds labels past the warm-up (total_labels >
    active_selection_from; else half of every label checks the agent's direction instead of
    teaching the task: Swimmer-v5 at 30 labels lost seeds) and where none of the run's episodes
    has terminated (where episodes end, the first labels are needed for what ends them:
    LunarLanderContinuous-v3 lost a seed); logged as rollout/terminated. Off: it saved
    HalfCheetah-v5's failed seed, but on DMC walker_walk (protocol) it lost the two seeds that
    walk without it. (watch_against_older on as well: all along.)"""
    watch_penalty: float = 0.0
    """When the run watch fires, the agent's reward loses this weight x the ensemble's std for the
    iteration (pessimism only while the members split; see uncertainty_penalty). 0: off."""
    end_clip_frac: OptFloat = None
    """Share of query clips drawn among those that contain a terminated episode's end (a fall,
    a goal), when the episodes to query have any; the rest are drawn uniformly. None (auto):
    0.5 while at least half the labels so far are ties (e.g. a sparse reward that clips only
    show where an episode ends), else 0."""
    answer_wait_s: float = 600.0
    """With people answering (an async teacher, e.g. --teacher web): when training is done,
    wait up to this many seconds for the queries still open (a progress line says how many
    and where to answer), take what arrives, then close the rest so nobody answers them."""
    checkpoint_interval: int = 1
    """Save a resumable checkpoint every this many iterations (0: only at the end)."""
    relabel_batch: int = 16_384
    """Transitions per batched reward pass when relabelling the replay buffer."""
    normalize_reward: bool = True
    """Normalise the learned reward (running mean/std) before the agent sees it."""
    seed: int = 0
    """Seed of the loop's random generator (fragments, pairs, selection); prefrl train sets it from --seed."""

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {self.iterations}")
        if self.total_labels < 1:
            raise ValueError(f"total_labels must be >= 1, got {self.total_labels}")
        if self.end_clip_frac is not None and not 0.0 <= self.end_clip_frac <= 1.0:
            raise ValueError(f"end_clip_frac must lie in [0, 1], got {self.end_clip_frac}")
        if not 0.0 <= self.archive_share < 1.0 or self.archive_steps < 1:
            raise ValueError(
                f"need archive_share in [0, 1) and archive_steps >= 1, got {self.archive_share} "
                f"and {self.archive_steps}"
            )
        if not 0.0 <= self.exploration_frac < 1.0:
            raise ValueError(f"exploration_frac must lie in [0, 1), got {self.exploration_frac}")
        if not -1.0 <= self.watch_agreement <= 1.0 or self.watch_penalty < 0:
            raise ValueError(
                f"need watch_agreement in [-1, 1] (a correlation) and watch_penalty >= 0, got "
                f"{self.watch_agreement} and {self.watch_penalty}"
            )
        if isinstance(self.watch_restore, bool) or not self.watch_restore >= 0:  # NaN too
            raise ValueError(
                f"need watch_restore >= 0, a margin in standard errors (3.6 by default; 0: off), got "
                f"{self.watch_restore!r}"
            )
        if self.floor_schedule not in ("constant", "labels"):
            raise ValueError(f"floor_schedule must be constant or labels, got {self.floor_schedule!r}")
        if self.floor_schedule == "labels" and self.floor_after_queries:
            raise ValueError(
                "floor_schedule labels fades the entropy floor to 0 at the last query, and "
                "floor_after_queries keeps it after: choose one"
            )
        if self.uncertainty_penalty < 0:
            raise ValueError(f"need uncertainty_penalty >= 0, got {self.uncertainty_penalty}")
        if self.exploration_bonus_schedule not in ("auto", "steps", "labels"):
            raise ValueError(
                "exploration_bonus_schedule must be auto, steps or labels, got "
                f"{self.exploration_bonus_schedule!r}"
            )
        gate = self.exploration_bonus_gate
        if gate is not None and gate != 0 and not 0.5 < gate <= 1.0:
            raise ValueError(
                f"exploration_bonus_gate must be in (0.5, 1] (an accuracy above chance) or 0 (no "
                f"gate), got {gate}"
            )
        if self.exploration_weight < 0 or not 0.0 <= self.exploration_bonus_decay < 1.0:
            raise ValueError(
                f"need exploration_bonus >= 0 and exploration_bonus_decay in [0, 1), got "
                f"{self.exploration_bonus} and {self.exploration_bonus_decay}"
            )
        if self.transition_oversampling < 1.0:
            raise ValueError(f"transition_oversampling must be >= 1, got {self.transition_oversampling}")
        if self.active_selection_oversampling < 1:
            raise ValueError("active_selection_oversampling must be >= 1")
        if not 0.0 <= self.active_selection_share <= 1.0:
            raise ValueError(f"active_selection_share must lie in [0, 1], got {self.active_selection_share}")
        if not self.answer_wait_s >= 0:
            raise ValueError(f"answer_wait_s must be >= 0 seconds, got {self.answer_wait_s}")
        if self.active_selection_from < 0:
            raise ValueError(f"active_selection_from must be >= 0 labels, got {self.active_selection_from}")
        if self.labels_per_round is not None and (self.labels_per_round < 1 or self.round_interval < 1):
            raise ValueError(
                f"need labels_per_round >= 1 and round_interval >= 1, got {self.labels_per_round} "
                f"and {self.round_interval}"
            )
        restart = self.agent_reset_at is not None and self.agent_reset_at > 0  # one is asked for
        if self.agent_reset_trial is not None and not (restart and 1 <= self.agent_reset_trial <= TRIAL_MAX):
            raise ValueError(
                f"agent_reset_trial makes the restart of agent_reset_at a trial of 1 to {TRIAL_MAX} "
                f"iterations: it needs agent_reset_at, got agent_reset_trial={self.agent_reset_trial} "
                f"with agent_reset_at={self.agent_reset_at}"
            )
        if self.agent_reset_at is not None and not 0 <= self.agent_reset_at < 1:
            raise ValueError(
                f"agent_reset_at must lie in [0, 1) (a share of the iterations; 0: never; None: auto), "
                f"got {self.agent_reset_at}"
            )
        if self.agent_reset_layers is not None and self.agent_reset_layers not in RESET_LAYERS:
            raise ValueError(
                f"unknown agent_reset_layers {self.agent_reset_layers!r}; choose from {list(RESET_LAYERS)}"
            )
        maybe = restart or self.agent_reset_at is None  # None: the automatic restart on images
        if self.agent_reset_standing is not None and not (maybe and np.isfinite(self.agent_reset_standing)):
            raise ValueError(
                f"agent_reset_standing={self.agent_reset_standing} spares a climbing agent the restart of "
                "agent_reset_at: it needs a restart (agent_reset_at unset or above 0) and a finite standing "
                "(1: the preferred clips' level)"
            )
        if self.agent_reset_layers is not None and not restart:
            raise ValueError(
                f"agent_reset_layers={self.agent_reset_layers} says what the restart of agent_reset_at "
                f"restarts: it needs agent_reset_at (the automatic restart on images is soft)"
            )
        if self.hidden_end not in HIDDEN_ENDS:
            raise ValueError(f"unknown hidden_end {self.hidden_end!r}; choose from {list(HIDDEN_ENDS)}")
        if self.hidden_end != "truncation" and not self.hide_terminations:
            raise ValueError(
                f"hidden_end={self.hidden_end} says how a hidden termination reaches the agent: "
                "it needs hide_terminations"
            )
        if self.center_hidden_ends and not self.hide_terminations:
            raise ValueError(
                "center_hidden_ends keeps the agent's reward centred where it is told no episode "
                "end: it needs hide_terminations"
            )
        if self.end_value not in END_VALUES:
            raise ValueError(f"unknown end_value {self.end_value!r}; choose from {list(END_VALUES)}")
        if self.end_value != "absorbing" and (self.hide_terminations or not self.normalize_reward):
            raise ValueError(
                f"end_value={self.end_value} says what an episode end the agent is told is worth on "
                "its normalised reward: it needs normalize_reward and no hide_terminations "
                "(center_hidden_ends keeps the reward centred where ends are hidden)"
            )
        if self.tie_probe < 0:
            raise ValueError(f"tie_probe must be >= 0 (0: off), got {self.tie_probe}")
        if self.query_schedule not in SCHEDULES:
            raise ValueError(f"unknown query schedule {self.query_schedule!r}; choose from {list(SCHEDULES)}")
        if self.uncertainty_measure not in MEASURES:
            raise ValueError(
                f"unknown uncertainty measure {self.uncertainty_measure!r}; choose from {list(MEASURES)}"
            )

    @property
    def exploration_weight(self) -> float:
        """The exploration bonus's weight: exploration_bonus, where None (auto, left unresolved by
        a loop built as a library) is 0."""
        return self.exploration_bonus or 0.0

    @property
    def random_steps(self) -> int:
        """Random-action steps before the first query: initial_steps, or
        initial_steps_per_label x total_labels (up to a tenth of the run) where that is more."""
        per_label = min((self.initial_steps_per_label or 0) * self.total_labels, self.total_steps // 10)
        return max(self.initial_steps, per_label)

    @property
    def agent_steps(self) -> int:
        """Steps of agent training after the initial collection and pre-training."""
        return self.total_steps - self.random_steps - self.pretrain_steps

    @property
    def reset_iteration(self) -> int | None:
        """The iteration before whose agent steps ``agent_reset_at`` restarts the agent (None: never)."""
        if not self.agent_reset_at:  # None (unresolved: resolve_agent_reset) or 0: never
            return None
        return max(1, round(self.agent_reset_at * self.iterations))

    @property
    def reset_trial_iteration(self) -> int | None:
        """The iteration whose fit decides ``agent_reset_trial``'s trial: ``agent_reset_trial``
        iterations after the restart, at most the last iteration (None: no trial, also where
        the restart comes at the last iteration)."""
        start, trial = self.reset_iteration, self.agent_reset_trial
        if start is None or trial is None or start >= self.iterations - 1:
            return None
        return min(start + trial, self.iterations - 1)


@dataclass(frozen=True)
class LoopState:
    """Where a loop is, read from its stages (:attr:`PreferenceLoop.state
    <prefrl.training.loop.PreferenceLoop.state>`): each stage keeps and checkpoints its own part."""

    iteration: int
    env_steps: int
    queries_asked: int
    started: bool
    wall_s: float
    history: list[dict[str, float]]
    evaluations: list[tuple[int, float]]
    """``(env_steps, mean true return)`` of each periodic evaluation (``eval_interval``)."""
    fragment_length: int
    """Transitions per clip now: ``LoopConfig.fragment_length``, shortened before the first label
    when no episode is long enough (the config itself is never changed)."""


AUTO_EXPLORATION_BONUS = 3.0
"""The exploration bonus's weight where it is auto (``exploration_bonus=None``) and on: near the
learned reward's own scale (members' std 1-2.4 against gaps of about 3.6 on DMC walker_walk), where
RUNE's 0.05 moves nothing."""
AUTO_BONUS_GATE = 0.75
"""The auto bonus's gate: whole while the reward guesses its fresh labels at chance, none from 0.75
(HalfCheetah-v5's failed seed guessed 0.36-0.5, its good seeds 0.55-1.0)."""


def resolve_bonus(config: LoopConfig, pays_here: bool, ensemble_size: int) -> LoopConfig:
    """``config`` with the exploration bonus's auto options decided. Where the weight is auto
    (``None``): :data:`AUTO_EXPLORATION_BONUS`, fading with the labels and gated at
    :data:`AUTO_BONUS_GATE`, in a run where it ``pays_here`` (``prefrl train``: an agent, a
    state-vector reward, random episodes that only meet time limits) with two or more members,
    neither penalty and no state-entropy pre-training (with it, DMC walker_walk's protocol lost
    on both seeds measured); else 0. Where a weight is given: RUNE's per-step decay and no gate,
    unless named. Options given are kept.

    Example:
        >>> c = resolve_bonus(LoopConfig(), pays_here=True, ensemble_size=3)
        >>> c.exploration_bonus, c.exploration_bonus_schedule, c.exploration_bonus_gate
        (3.0, 'labels', 0.75)
        >>> c = resolve_bonus(LoopConfig(exploration_bonus=0.05), pays_here=True, ensemble_size=3)
        >>> c.exploration_bonus, c.exploration_bonus_schedule, c.exploration_bonus_gate
        (0.05, 'steps', 0.0)
        >>> c = resolve_bonus(LoopConfig(), pays_here=False, ensemble_size=3)
        >>> c.exploration_bonus, c.exploration_bonus_schedule, c.exploration_bonus_gate
        (0.0, 'steps', 0.0)
    """
    penalised = config.uncertainty_penalty > 0 or config.watch_penalty > 0
    explored = config.pretrain_steps > 0  # PEBBLE's state-entropy pre-training (DMC's protocol)
    auto_on = config.exploration_bonus is None and pays_here and ensemble_size >= 2
    auto_on = auto_on and not penalised and not explored
    bonus = AUTO_EXPLORATION_BONUS if auto_on else config.exploration_weight
    schedule = config.exploration_bonus_schedule
    if schedule == "auto":
        schedule = "labels" if auto_on else "steps"
    gate = config.exploration_bonus_gate
    gate = (AUTO_BONUS_GATE if auto_on else 0.0) if gate is None else gate
    return dataclasses.replace(
        config, exploration_bonus=bonus, exploration_bonus_schedule=schedule, exploration_bonus_gate=gate
    )


IMAGE_RESET_AT = 0.5
"""``agent_reset_at`` None (auto): where the soft restart comes for an on-policy agent on a
learned reward with discrete actions on images (a share of the iterations)."""


def resolve_agent_reset(config: LoopConfig, images: bool) -> LoopConfig:
    """``config`` with ``agent_reset_at=None`` (auto) and ``agent_reset_layers=None`` decided: a
    soft restart at :data:`IMAGE_RESET_AT` where ``images`` (an on-policy stable-baselines3 agent
    on a learned reward with discrete actions on images), none (0) elsewhere; a given restart
    redraws every weight unless its layers are named. A copy; ``config`` itself when nothing is
    left to decide."""
    if config.agent_reset_at is None:
        layers: OptResetLayers = "soft" if images else None
        bar = config.agent_reset_standing if images else None  # no restart: nothing to spare
        return dataclasses.replace(
            config, agent_reset_at=IMAGE_RESET_AT if images else 0.0, agent_reset_layers=layers,
            agent_reset_standing=bar,
        )  # fmt: skip
    if config.agent_reset_at > 0 and config.agent_reset_layers is None:
        return dataclasses.replace(config, agent_reset_layers="all")
    return config


def resolve_selection(config: LoopConfig, ensemble_size: int) -> LoopConfig:
    """``config`` with ``active_selection=None`` (auto) decided: on where it can work (a copy;
    ``config`` itself when there is nothing to decide). Raises ``ValueError`` before anything
    runs when active selection asked for cannot work: every disagreement measure but
    ``entropy`` needs an ensemble of two or more reward nets."""
    if config.active_selection is None:
        auto = config.uncertainty_measure == "entropy" or ensemble_size >= 2
        config = dataclasses.replace(config, active_selection=auto)
    if config.active_selection and config.uncertainty_measure != "entropy" and ensemble_size < 2:
        raise ValueError(
            f"active selection (--loop.active-selection) by {config.uncertainty_measure!r} disagreement "
            f"needs --reward.ensemble-size >= 2 (members to disagree), got {ensemble_size}; or use "
            "--loop.uncertainty-measure entropy"
        )
    return config
