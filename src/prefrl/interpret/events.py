"""Where a learned reward puts the value of the true reward's events.

In a game whose reward is sparse (Pong's points, CoinRun's coin) a preference only says which
clip's sum was higher, so a learned reward may mark the event itself and then pay its value back
on the steps around it: on the frames that always come before or after it. Summed over a clip
it still orders the labelled pairs, but an agent that optimises it gains little by avoiding the
event. :func:`event_profiles` measures this from a trajectory file with true rewards: what one
event of each true-reward value adds to the learned and to the true reward at every offset from
it, within its episode (each reward in standard deviations of its per-step values, fitted by least
squares so that nearby events are told apart), and the net over the window.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.evaluation import predicted_rewards
from prefrl.rewards.nets import RewardNet

MAX_EVENT_SHARE = 0.2
"""Events are steps whose true reward differs from its commonest value; above this share of the
steps the reward is dense and has no events to look at."""

NEAR = 3
"""An event is marked where the learned reward's largest response within this many steps of it
has the event's sign (an event's frames show it a step or two early or late)."""

MAX_KINDS = 4
"""At most this many event values are profiled (the commonest)."""

KEPT_WELL = 0.5
"""The verdict calls an event's value kept where the learned net is at least this share of the
true net over the window (both in standard deviations of their per-step rewards)."""

PAID_BACK = 0.25
"""... and paid back where the share lies within this of 0."""


@dataclass(frozen=True)
class EventProfile:
    """The rewards around the events of one true-reward value."""

    value: float
    """The true reward of these events."""
    count: int
    offsets: list[int]
    """``[2W+1]`` steps from the event, -W..W."""
    learned: list[float]
    """``[2W+1]`` what one event adds to the learned reward at each offset, in standard deviations
    of its per-step reward (NaN where no event reaches that offset)."""
    learned_se: list[float]
    """``[2W+1]`` its standard error (ordinary least squares, the steps taken as independent)."""
    true: list[float]
    """``[2W+1]`` the same for the true reward: its value at offset 0, 0 elsewhere."""
    learned_net: float
    """Sum of ``learned`` over the window: what an agent gains or loses with one event and its
    surroundings, beyond as many ordinary steps (in standard deviations of the per-step reward)."""
    true_net: float
    """The same sum for the true reward."""
    kept: float
    """``learned_net / true_net``: 1 for the true reward itself, 0 where the steps around the
    event pay its value back, negative where the surroundings outweigh it the wrong way."""
    peak_offset: int
    """Offset within :data:`NEAR` steps of the event where the learned profile is furthest from 0."""
    peak: float


def _responses(
    ys: np.ndarray, starts: list[np.ndarray], rows: np.ndarray, episode: np.ndarray, window: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least-squares response of each reward of ``ys`` ``[M, S]`` to each kind of event at each offset.

    ``y[t] = c + sum_k sum_o beta[k, o] * [an event of kind k at t - o, in t's episode]``, fitted
    over ``rows`` (one design matrix for every reward), so that events closer together than the
    window are told apart.

    Returns:
        ``beta`` and its standard error (ordinary least squares), ``[M, K, 2W+1]`` each (offsets
        -W..W), and ``[M]`` the share of each reward's variance over ``rows`` that the events
        explain (R squared).
    """
    from scipy import sparse

    offsets = np.arange(-window, window + 1)
    n_off = len(offsets)
    n_cols = len(starts) * n_off + 1  # the last column: the intercept
    n_all = ys.shape[1]
    pos = np.full(n_all, -1)
    pos[rows] = np.arange(len(rows))
    r_idx, c_idx = [np.arange(len(rows))], [np.full(len(rows), n_cols - 1)]
    for k, ev in enumerate(starts):
        at = ev[:, None] + offsets[None, :]  # [E, 2W+1] rows the events reach
        inside = (at >= 0) & (at < n_all)
        at_c = np.clip(at, 0, n_all - 1)
        ok = inside & (pos[at_c] >= 0) & (episode[at_c] == episode[ev][:, None])
        e_i, o_i = np.nonzero(ok)
        r_idx.append(pos[at_c[e_i, o_i]])
        c_idx.append(k * n_off + o_i)
    r_all, c_all = np.concatenate(r_idx), np.concatenate(c_idx)
    x = sparse.csr_matrix((np.ones(len(r_all)), (r_all, c_all)), shape=(len(rows), n_cols))  # [N, K(2W+1)+1]
    target = ys[:, rows].T  # [N, M]
    gram_inv = np.linalg.inv((x.T @ x).toarray() + 1e-6 * np.eye(n_cols))
    beta = gram_inv @ (x.T @ target)  # [K(2W+1)+1, M]
    resid = target - x @ beta
    sse = (resid**2).sum(0)  # [M]
    se = np.sqrt(np.maximum(np.diag(gram_inv), 0.0)[:, None] * sse / max(len(rows) - n_cols, 1))
    covered = (np.asarray(x[:, :-1].sum(0)).ravel() > 0)[:, None]
    shape = (len(starts), n_off, ys.shape[0])
    beta_k = np.where(covered, beta[:-1], np.nan).reshape(shape).transpose(2, 0, 1)
    se_k = np.where(covered, se[:-1], np.nan).reshape(shape).transpose(2, 0, 1)
    total = ((target - target.mean(0)) ** 2).sum(0)
    r2 = np.where(total > 0, 1.0 - sse / np.where(total > 0, total, 1.0), np.nan)
    return beta_k, se_k, r2


def event_profiles(net: RewardNet, batch: TrajectoryBatch, window: int = 30) -> dict[str, object]:
    """Profile the learned reward around each kind of true-reward event of ``batch``.

    Each reward is divided by its standard deviation over the file's steps, and its response to
    each kind of event at each offset is fitted by least squares (:func:`_responses`), so a
    profile is what one event adds to the reward at each step around it, beyond an ordinary step.
    The true reward's own profile is its event's value at offset 0 and nothing elsewhere.

    Returns:
        ``window``, ``steps``, ``baseline`` (the commonest true reward, which events differ from),
        ``explained`` (the share of the learned reward's per-step variance that the events around
        each step explain: 1 for the true reward; the rest is what the reward pays for other things),
        ``events`` (an :class:`EventProfile` dict per event value, commonest first) and
        ``verdict`` (one line per value).

    Raises:
        ValueError: no true rewards, a dense true reward, or no events.
    """
    if window < 1:
        raise ValueError(f"--window must be at least 1 step, got {window}")
    if batch.rews is None:
        raise ValueError("event profiles need a trajectory file with true rewards (rews)")
    rows = batch.step_rows
    true = batch.rews.astype(np.float64)
    values, counts = np.unique(true[rows], return_counts=True)
    baseline = float(values[np.argmax(counts)])
    share = float(np.mean(true[rows] != baseline)) if len(rows) else 0.0
    if share > MAX_EVENT_SHARE:
        raise ValueError(
            f"the true reward is dense ({share:.0%} of steps differ from its commonest value "
            f"{baseline:g}): event profiles are for sparse rewards (at most {MAX_EVENT_SHARE:.0%})"
        )
    if share == 0.0:
        raise ValueError(f"no events: every step's true reward is {baseline:g}")
    commonest = np.argsort(-counts, kind="stable")
    kinds = [float(values[i]) for i in commonest if values[i] != baseline][:MAX_KINDS]
    starts = [rows[true[rows] == v] for v in kinds]
    episode = np.repeat(np.arange(len(batch)), batch.lengths + 1)
    learned = predicted_rewards(net, batch)

    def scaled(x: np.ndarray) -> np.ndarray:
        sd = float(x[rows].std())
        return x / (sd if sd > 0 else 1.0)

    beta, se, r2 = _responses(np.stack([scaled(learned), scaled(true)]), starts, rows, episode, window)
    (l_beta, t_beta), l_se, l_r2 = beta, se[0], float(r2[0])
    offsets = np.arange(-window, window + 1)
    profiles: list[EventProfile] = []
    for k, v in enumerate(kinds):
        l_net, t_net = float(np.nansum(l_beta[k])), float(np.nansum(t_beta[k]))
        near = np.where(np.abs(offsets) <= NEAR, np.abs(l_beta[k]), -1.0)
        peak_i = int(np.nanargmax(near))
        profiles.append(
            EventProfile(
                value=v,
                count=len(starts[k]),
                offsets=offsets.tolist(),
                learned=l_beta[k].tolist(),
                learned_se=l_se[k].tolist(),
                true=t_beta[k].tolist(),
                learned_net=l_net,
                true_net=t_net,
                kept=l_net / t_net,  # t_net: the event's own value (not 0), in true-reward sds
                peak_offset=int(offsets[peak_i]),
                peak=float(l_beta[k][peak_i]),
            )
        )
    return {
        "window": window,
        "steps": len(rows),
        "baseline": baseline,
        "explained": l_r2,
        "events": [asdict(p) for p in profiles],
        "verdict": [_verdict(p) for p in profiles],
    }


def _verdict(p: EventProfile) -> str:
    head = f"events of {p.value:+g} ({p.count}): "
    marks = np.sign(p.peak) == np.sign(p.true[len(p.true) // 2])  # the event's own sign nearby
    mark = f"marked (peak {p.peak:+.2f} sd at offset {p.peak_offset:+d})" if marks else "not marked"
    if p.kept >= KEPT_WELL:
        return head + f"{mark}, and the window keeps {p.kept:.2f} of the true net value"
    if p.kept > PAID_BACK:
        return head + f"{mark}, but the window keeps only {p.kept:.2f} of the true net value"
    if p.kept >= -PAID_BACK:
        return head + f"{mark}, but the steps around pay it back: the window keeps {p.kept:.2f} of its value"
    return head + f"{mark}, but over the window it is worth the opposite ({p.kept:.2f} of its value)"


def plot_event_profiles(result: dict[str, object], path: str | Path) -> Path:
    """Per event value: each reward's response at each offset (top) and summed from -W (bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = result["events"]
    assert isinstance(events, list)
    fig, axes = plt.subplots(2, len(events), figsize=(4.6 * len(events), 5.6), squeeze=False)
    for j, e in enumerate(events):
        x = np.asarray(e["offsets"])
        lm, se, tm = (np.asarray(e[k], dtype=float) for k in ("learned", "learned_se", "true"))
        top, bottom = axes[0, j], axes[1, j]
        top.fill_between(x, lm - 2 * se, lm + 2 * se, alpha=0.25, color="C0")
        top.plot(x, lm, color="C0", label="learned")
        top.plot(x, tm, color="C1", ls="--", label="true")
        top.axvline(0, color="k", lw=0.6)
        top.axhline(0, color="k", lw=0.4)
        top.set_title(f"events of {e['value']:+g} ({e['count']})", fontsize=10)
        top.set_ylabel("reward (sd from the mean step)")
        bottom.plot(x, np.nancumsum(lm), color="C0", label=f"learned (net {e['learned_net']:+.1f})")
        bottom.plot(x, np.nancumsum(tm), color="C1", ls="--", label=f"true (net {e['true_net']:+.1f})")
        bottom.axvline(0, color="k", lw=0.6)
        bottom.axhline(0, color="k", lw=0.4)
        bottom.set_xlabel("steps from the event")
        bottom.set_ylabel("summed from the window's start")
        bottom.legend(fontsize=8)
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
