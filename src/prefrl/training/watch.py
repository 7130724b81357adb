"""Signs that a run is going wrong, read without the true reward (so they work with people).

Each iteration, before the reward trains on the agent's newest episodes, :class:`RunWatch`
measures the current reward on them (``watch/*`` in ``metrics.csv``):

``watch/agreement``
    Mean pairwise Pearson correlation of the ensemble members' per-step rewards on the newest
    steps. Near 1: the members rank the agent's steps alike. Low: the ensemble is split on
    exactly the behaviour the agent is learning.
``watch/novelty``
    Mean ensemble std on the newest steps over the mean ensemble std on the labelled clips'
    steps. Above 1: the agent is where the labels do not reach.
``watch/learned_gain``
    How much more the current reward pays the newest steps than the previous iteration's, in
    units of the per-step reward's std. The agent believes it is improving when this is
    positive; a gain while agreement falls is the reward being exploited.
``watch/stay_margin``
    Where episodes terminate (once one has): how much more the reward pays the agent's newest
    steps than the absorbing state after an episode's end, in units of the per-step std.
    The agent is paid ``reward - absorbing``, so below 0 every further step costs it and
    ending the episode pays: right where ending is the goal, a crash course where it is not.
``watch/standing``
    Where the reward puts the agent's newest steps between the steps of the clips its labels
    rejected (0) and those they preferred (1): the mean per-step reward of each, the agent's
    relative to the two. Below 0.5 the agent's behaviour looks more like what lost than what
    won (``tie_exploration_stuck`` explores then, where its newest labels were all ties).

``watch/climb``
    After the reward's fit: how far the agent's newest kept policy's episodes score above its
    oldest kept policy's (the copies of ``watch_restore``, :mod:`prefrl.training.restore`),
    under the reward as it stands, in standard errors. Near 0: by its current reward the agent
    has stopped improving over the window the copies span.

The reward fit adds ``reward/fresh_accuracy`` (the model's guesses on the labels that came
since the previous fit, before it trains on them: the trust record of
:mod:`prefrl.preference.trust`; ``reward/fresh_hits`` and ``reward/fresh_n`` per fit).

The alarm (``watch/alarm``, :meth:`RunWatch.alarm`) fires where the members' agreement falls
below ``LoopConfig.watch_agreement``. What the loop does then is a switch each
(``watch_requery``: more queries now, by disagreement; ``watch_penalty``: pessimism while it
fires), and so is what it does where the stay margin falls below 0 (``watch_end_clips``, on
by default: half the query clips at episode ends) and giving the agent an earlier policy back
that the reward now rates higher (``watch_restore``, :mod:`prefrl.training.restore`);
:func:`summary` condenses it all for the run's report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

import numpy as np

from prefrl.data.arrays import Obs, obs_map
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.rewards.nets import RewardNet
from prefrl.seeding import stream

SAMPLE_STEPS = 2048
"""At most this many steps of each batch (and of the labelled clips) are scored."""


Steps = tuple[Obs, np.ndarray, Obs, np.ndarray]
"""A sample of transitions ``(obs, acts, next_obs, dones)``, each ``[n, ...]``
(:meth:`TrajectoryBatch.transitions`)."""


def members(net: RewardNet, steps: Steps) -> np.ndarray:
    """Each member's reward ``[E, n]`` on ``steps``."""
    return net.predict_members(*steps)


def batch_steps(batch: TrajectoryBatch, rng: np.random.Generator, n: int = SAMPLE_STEPS) -> Steps | None:
    """Up to ``n`` transitions of ``batch`` drawn without replacement; ``None`` if it has none."""
    rows = batch.step_rows
    if len(rows) == 0:
        return None
    if len(rows) > n:
        rows = np.sort(rng.choice(rows, n, replace=False))
    return batch.transitions(rows)


def labelled_steps(
    dataset: PreferenceDataset,
    rng: np.random.Generator,
    n: int = SAMPLE_STEPS,
    clips: np.ndarray | None = None,
) -> Steps | None:
    """Up to ``n`` real (not absorbing) steps of the labelled clips (of ``clips``, indices into
    the dataset's fragments, where given); ``None`` without labels."""
    frags = dataset.fragments
    if frags is None or len(dataset) == 0:
        return None
    used = np.unique(dataset.pairs) if clips is None else np.unique(clips)
    if len(used) == 0:
        return None
    most = -(-n // frags.length)  # enough clips for n steps: never materialise them all (images)
    if len(used) > most:
        used = np.sort(rng.choice(used, most, replace=False))
    fa = frags.arrays(used)  # [u, L, ...]
    real = np.argwhere(~fa.absorbing)  # [k, 2] (clip, step)
    if len(real) == 0:
        return None
    if len(real) > n:
        real = real[np.sort(rng.choice(len(real), n, replace=False))]
    i, t = real[:, 0], real[:, 1]
    return (
        obs_map(lambda a: a[i, t], fa.obs),
        fa.acts[i, t],
        obs_map(lambda a: a[i, t], fa.next_obs),
        fa.dones[i, t],
    )


def decided_clips(dataset: PreferenceDataset) -> tuple[np.ndarray, np.ndarray]:
    """The clips ``(won, lost)`` of the labels that prefer one (indices into the fragments)."""
    lab, pairs = dataset.labels, dataset.pairs
    first, second = lab > 0.5, lab < 0.5  # NaN (no answer) is neither
    won = np.concatenate([pairs[first, 0], pairs[second, 1]])
    lost = np.concatenate([pairs[first, 1], pairs[second, 0]])
    return won, lost


def agreement(rewards: np.ndarray) -> float:
    """Mean pairwise Pearson correlation of the members' ``rewards`` ``[E, n]`` (rows with no
    spread are left out); NaN with fewer than two rows that vary."""
    r = rewards[rewards.std(1) > 0]
    if len(r) < 2 or r.shape[1] < 2:
        return float("nan")
    c = np.corrcoef(r)
    return float(c[np.triu_indices(len(r), 1)].mean())


class RunWatch:
    """Measures the ``watch/*`` signals each iteration (see the module docstring).

    Args:
        net: the reward being learned.
        seed: the run's seed (the step samples come from a stream of their own).

    The previous iteration's step sample (for ``learned_gain``) is not checkpointed: the first
    iteration after a resume has no gain.
    """

    def __init__(self, net: RewardNet, seed: int) -> None:
        self.net, self.seed = net, seed
        self.previous: Steps | None = None
        self.ends = False  # an episode has terminated (not checkpointed: set again by the next one)

    def measure(self, batch: TrajectoryBatch, dataset: PreferenceDataset, iteration: int) -> dict[str, float]:
        """The signals on ``batch`` (the newest episodes) under the reward as it stands."""
        rng = stream(self.seed, "watch", iteration)
        new = batch_steps(batch, rng)
        previous, self.previous = self.previous, new
        if new is None or len(dataset) == 0:
            return {}
        rewards = members(self.net, new)  # [E, n]
        out = {"watch/agreement": agreement(rewards)}
        self.ends = self.ends or bool(batch.terminated.any())
        now = rewards.mean(0)
        if self.ends and now.std() > 0:
            out["watch/stay_margin"] = float(now.mean() - self.net.absorbing_value()) / float(now.std())
        labelled = labelled_steps(dataset, rng)
        if labelled is not None and rewards.shape[0] > 1:
            spread = float(members(self.net, labelled).std(0).mean())
            if spread > 0:
                out["watch/novelty"] = float(rewards.std(0).mean()) / spread
        won, lost = decided_clips(dataset)
        won_steps, lost_steps = (
            labelled_steps(dataset, rng, clips=won),
            labelled_steps(dataset, rng, clips=lost),
        )
        if won_steps is not None and lost_steps is not None:
            hi = float(members(self.net, won_steps).mean())
            lo = float(members(self.net, lost_steps).mean())
            if hi > lo:
                out["watch/standing"] = (float(now.mean()) - lo) / (hi - lo)
        if previous is not None:
            old = members(self.net, previous).mean(0)
            scale = float(np.concatenate([old, now]).std())
            if scale > 0:
                out["watch/learned_gain"] = float(now.mean() - old.mean()) / scale
        return out

    def alarm(self, metrics: Mapping[str, float], floor: float) -> bool:
        """Whether this iteration's ``watch/agreement`` in ``metrics`` is below ``floor``
        (never without a measured agreement)."""
        a = metrics.get("watch/agreement", float("nan"))
        return bool(np.isfinite(a) and a < floor)


class WatchSummary(TypedDict):
    """What a run's report says of its watch."""

    iterations: int
    """Iterations the watch measured."""
    alarms: list[int]
    """Environment steps of the iterations where the alarm fired (the ensemble split)."""
    labels_ahead: int
    """Queries asked early where it fired (``watch_requery``)."""
    ending_pays: list[int]
    """Environment steps of the iterations where ending an episode paid (stay margin below 0)."""
    end_clips: int
    """Iterations whose queries took half their clips at episode ends for it (``watch_end_clips``)."""
    against_older: list[list[float]]
    """``[step, teacher, reward]`` of each iteration that asked newest clips against older ones
    (``watch_against_older``): the share where the teacher preferred the newer clip (NaN while
    its answers are out) and how likely the reward found it better."""
    restored: list[list[int]]
    """``[[step, policy's step]]`` where the run ended with an earlier policy (``watch_restore``)."""
    stuck: list[int]
    """Environment steps of the iterations that explored because the agent looked stuck
    (``tie_exploration_stuck``: the newest labels ties, ``watch/standing`` below 0.5)."""
    reset: list[int]
    """Environment steps where the agent restarted (``agent_reset_at``)."""
    reset_spared: list[list[float]]
    """``[[step, standing]]`` where ``agent_reset_standing`` spared a climbing agent its restart."""
    reset_trial: list[list[float]]
    """``[[step, lead, undone]]`` where a restart's trial ended (``agent_reset_trial``): the fresh
    agent's lead over the policy it replaced, in standard errors, and 1 where that policy came
    back."""
    text: str
    """The same in one line (:func:`describe`), for the report and the run's page."""


def summary(history: Sequence[Mapping[str, float]]) -> WatchSummary:
    """Condense a loop's per-iteration metrics (``LoopState.history``) into a :class:`WatchSummary`."""
    rows = [h for h in history if "watch/alarm" in h]
    alarms = [int(h["step"]) for h in rows if h["watch/alarm"] > 0]
    ending = [int(h["step"]) for h in rows if h.get("watch/stay_margin", 0.0) < 0]
    s = WatchSummary(
        iterations=len(rows),
        alarms=alarms,
        labels_ahead=int(sum(h.get("watch/labels_ahead", 0.0) for h in rows)),
        ending_pays=ending,
        end_clips=sum(1 for h in rows if h.get("watch/end_clips")),
        against_older=[
            [h["step"], h.get("watch/teacher_newer", float("nan")), h["watch/reward_newer"]]
            for h in rows
            if "watch/reward_newer" in h
        ],
        restored=[
            [int(h["step"]), int(h["watch/restored_from_end"])]
            for h in rows
            if "watch/restored_from_end" in h
        ],
        stuck=[int(h["step"]) for h in history if h.get("agent/stuck_exploration")],
        reset=[int(h["step"]) for h in history if h.get("agent/reset")],
        reset_spared=[
            [int(h["step"]), float(h.get("watch/standing", float("nan")))]
            for h in history
            if h.get("agent/reset_spared")
        ],
        reset_trial=[
            [int(h["step"]), float(h["agent/reset_trial"]), float(h.get("agent/reset_undone", 0.0))]
            for h in history
            if "agent/reset_trial" in h
        ],
        text="",
    )
    s["text"] = describe(s)
    return s


def describe(s: WatchSummary) -> str:
    """One line for the run's report, e.g. ``the reward ensemble split on the agent's newest
    steps at 3 of 13 iterations (first at step 22,000)``."""
    n = s["iterations"]
    if not n:
        return "not measured (no reward fitted during agent training)"
    alarms, ending = s["alarms"], s["ending_pays"]
    if alarms:
        ahead = f"; {s['labels_ahead']} labels asked early there" if s["labels_ahead"] else ""
        parts = [
            f"the reward ensemble split on the agent's newest steps at {len(alarms)} of {n} iterations "
            f"(first at step {alarms[0]:,}{ahead})"
        ]
    else:
        parts = [f"the reward ensemble agreed on the agent's steps at all {n} iterations"]
    if ending:
        done = "; half the query clips cut at episode ends there" if s["end_clips"] else ""
        parts.append(
            f"ending an episode paid more than going on at {len(ending)} (first at step {ending[0]:,}{done})"
        )
    versus = [v for v in s.get("against_older", []) if np.isfinite(v[1])]
    if versus:
        worse = [int(v[0]) for v in versus if v[1] < 0.5 < v[2]]
        where = f" (first at step {worse[0]:,})" if worse else ""
        parts.append(
            f"the teacher preferred the agent's newer clips to its older ones in "
            f"{np.mean([v[1] for v in versus]):.0%} of those asked, the reward expected "
            f"{np.mean([v[2] for v in versus]):.0%}; the reward saw progress the teacher did not at "
            f"{len(worse)} of {len(versus)} iterations{where}"
        )
    if s.get("stuck"):
        st = s["stuck"]
        parts.append(
            f"the newest labels tied while the agent's steps looked like the rejected clips at {len(st)} "
            f"(first at step {st[0]:,}); the agent explored (state entropy) there"
        )
    if s.get("reset"):
        parts.append(
            f"the agent restarted at step {s['reset'][0]:,} (--loop.agent-reset-at; on images by "
            "default, a soft restart: its value head redrawn, its action head flattened)"
        )
    if s.get("reset_spared"):
        step, standing = s["reset_spared"][0]
        parts.append(
            f"the agent kept its policy at step {int(step):,}: the reward paid it {standing:.1f} of the way "
            "from the rejected to the preferred clips, so it was climbing (--loop.agent-reset-standing)"
        )
    if s.get("reset_trial"):
        step, lead, undone = s["reset_trial"][0]
        if not np.isfinite(lead):
            parts.append(
                f"at step {int(step):,} the restart's trial could not compare (the replaced policy had "
                "too few complete episodes kept); the restart stood (--loop.agent-reset-trial)"
            )
        else:
            verdict = (
                "paid the fresh agent less than the policy it replaced, which came back"
                if undone
                else "paid the fresh agent at least as much as the policy it replaced, which stayed replaced"
            )
            parts.append(
                f"at step {int(step):,} the reward {verdict} ({lead:+.1f} standard errors; "
                "--loop.agent-reset-trial)"
            )
    if s.get("restored"):
        b = s["restored"][-1][1]
        parts.append(
            f"the run ended with the agent's policy of step {b:,}, which the final reward paid "
            "clearly more than the last one"
        )
    return "; ".join(parts)
