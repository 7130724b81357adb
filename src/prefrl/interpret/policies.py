"""Which behaviour a learned reward prefers: policies ranked by it and by the true reward.

A run whose agent scores badly has one of two faults, and they need different fixes:

- the reward **misranks** behaviour: it pays a worse policy (by the true reward) more than a
  better one, so an agent that optimises it well still plays badly;
- the reward ranks behaviour right, but the agent **did not optimise it**: its own policy is paid
  less than another's (a random one, the true-reward agent's).

:func:`rank_policies` tells them apart from trajectory files of several policies (``prefrl
rollouts`` of the run's policy, of a true-reward agent, of random actions), each scored by the
reward per step and per episode, the learned one measured from its absorbing state as the agent
sees it. Per step is the measure where the agent never sees an episode end
(``--loop.hide-terminations``), per episode where it does. Each policy also gets the reward
ensemble's disagreement on its steps (its members' spread): where the reward pays a worse policy
over a better one and disagrees most on the better one, the labels never covered that behaviour,
and the fix is to bring it into the clips people compare, not to fit the same labels again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.rewardfn import index_obs
from prefrl.rewards.nets import RewardNet

CHUNKS = 20
"""Contiguous chunks of a policy's steps whose means give its per-step standard error (steps in
one episode are correlated; chunks far apart much less)."""

SEPARATION = 2.0
"""Two policies are ordered (by either reward) where their per-step means differ by more than
this many standard errors of the difference; closer ones are a tie and never a misranking."""


@dataclass(frozen=True)
class PolicyScore:
    """One policy's rollouts scored by both rewards."""

    name: str
    steps: int
    episodes: int
    learned_per_step: float
    """Mean learned reward per step (ensemble mean, from the absorbing state's)."""
    learned_per_step_se: float
    learned_per_step_std: float
    """Standard deviation of its per-step learned rewards (their spread, not the mean's error)."""
    learned_return: float
    """Mean learned return of its episodes (the last one may be cut short by the file)."""
    true_per_step: float | None
    true_per_step_se: float | None
    true_return: float | None
    learned_disagreement: float | None = None
    """Mean over its steps of the reward ensemble members' standard deviation (how unsure the
    reward is of this behaviour; None for a one-member reward)."""


def member_rewards(net: RewardNet, batch: TrajectoryBatch, chunk: int = 8192) -> np.ndarray:
    """Each ensemble member's reward ``[E, T]`` on the transitions of ``batch`` (its
    ``step_rows``), in one pass per chunk: their mean is the reward, their spread the
    disagreement."""
    rows, dones, obs = batch.step_rows, batch.dones, batch.obs
    out = [
        net.predict_members(index_obs(obs, r), batch.acts[r], index_obs(obs, r + 1), dones[r])
        for r in (rows[s : s + chunk] for s in range(0, len(rows), chunk))
    ]
    return np.concatenate(out, axis=-1).astype(np.float64)


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    """Mean of ``x`` ``[T]`` and its standard error over :data:`CHUNKS` contiguous chunks."""
    chunks = [c.mean() for c in np.array_split(x, min(CHUNKS, len(x))) if len(c)]
    se = float(np.std(chunks, ddof=1) / np.sqrt(len(chunks))) if len(chunks) > 1 else float("nan")
    return float(x.mean()), se


def score_policy(net: RewardNet, name: str, batch: TrajectoryBatch) -> PolicyScore:
    """``batch``'s steps scored by ``net`` and by their true rewards (where the file has them)."""
    rows = batch.step_rows
    if len(rows) < 2:
        raise ValueError(f"{name}: need at least 2 transitions to score a policy, got {len(rows)}")
    members = member_rewards(net, batch)  # [E, T]: the ensemble runs once for mean and spread
    learned = np.zeros(len(batch.acts), dtype=np.float64)  # final rows hold no transition: 0
    learned[rows] = members.mean(0) - net.absorbing_value()
    episode = np.repeat(np.arange(len(batch)), batch.lengths + 1)
    l_mean, l_se = _mean_se(learned[rows])
    score = dict(
        name=name,
        steps=len(rows),
        episodes=len(batch),
        learned_per_step=l_mean,
        learned_per_step_se=l_se,
        learned_per_step_std=float(learned[rows].std()),
        learned_return=float(np.bincount(episode, learned, len(batch)).mean()),
        true_per_step=None,
        true_per_step_se=None,
        true_return=None,
    )
    if len(members) > 1:  # one member: no disagreement to give
        score["learned_disagreement"] = float(members.std(0).mean())
    if batch.rews is not None:
        t_mean, t_se = _mean_se(batch.rews[rows].astype(np.float64))
        true_ret = float(np.bincount(episode, batch.rews.astype(np.float64), len(batch)).mean())
        score.update(true_per_step=t_mean, true_per_step_se=t_se, true_return=true_ret)
    return PolicyScore(**score)  # type: ignore[arg-type]


def _order(a: float, b: float, se_a: float, se_b: float) -> int:
    """+1 where ``a`` is above ``b`` by more than :data:`SEPARATION` standard errors, -1 below, else 0."""
    gap = a - b
    se = float(np.hypot(se_a, se_b)) if np.isfinite(se_a) and np.isfinite(se_b) else 0.0
    return 0 if abs(gap) <= SEPARATION * se else int(np.sign(gap))


def rank_policies(net: RewardNet, batches: dict[str, TrajectoryBatch]) -> dict[str, object]:
    """Score every policy of ``batches`` (name -> its rollouts) and compare the two rankings.

    Returns:
        ``policies`` (a :class:`PolicyScore` dict each, best by the learned reward first),
        ``order_learned`` and ``order_true`` (names, best first; the latter only where every file
        has true rewards), ``misranked`` (``"A over B"`` where the learned reward clearly pays A
        more per step and the true reward clearly pays B more), ``agreement`` (the share of pairs
        the true reward orders that the learned one orders the same way, ties counting half;
        NaN where the true reward orders none) and ``verdict`` (one line).
    """
    if len(batches) < 2:
        raise ValueError(f"rank at least 2 policies (trajectory files), got {len(batches)}")
    scores = sorted(
        (score_policy(net, name, b) for name, b in batches.items()),
        key=lambda s: s.learned_per_step,
        reverse=True,
    )
    out: dict[str, object] = {
        "policies": [asdict(s) for s in scores],
        "order_learned": [s.name for s in scores],
    }
    if any(s.true_per_step is None for s in scores):
        out["verdict"] = "the files hold no true rewards: only the learned ranking is known"
        return out
    out["order_true"] = [s.name for s in sorted(scores, key=lambda s: s.true_per_step or 0.0, reverse=True)]
    misranked: list[str] = []
    agree, ordered = 0.0, 0
    for i, a in enumerate(scores):
        for b in scores[i + 1 :]:
            t = _order(a.true_per_step or 0.0, b.true_per_step or 0.0, a.true_per_step_se or 0.0,
                       b.true_per_step_se or 0.0)  # fmt: skip
            if t == 0:
                continue
            ordered += 1
            lo = _order(a.learned_per_step, b.learned_per_step, a.learned_per_step_se, b.learned_per_step_se)
            agree += 1.0 if lo == t else 0.5 if lo == 0 else 0.0
            if lo == -t:
                hi, low = (a, b) if lo > 0 else (b, a)
                misranked.append(f"{hi.name} over {low.name}")
    out["misranked"] = misranked
    out["agreement"] = agree / ordered if ordered else float("nan")
    out["verdict"] = (
        "the reward misranks behaviour: it pays " + "; ".join(misranked) + " against the true reward"
        if misranked
        else "the reward ranks these policies as the true reward does (or calls them even): a policy "
        "it pays less than another was not optimised on it"
    )
    unsure = max(scores, key=lambda s: s.learned_disagreement or 0.0)
    if (
        misranked
        and unsure.learned_disagreement
        and any(m.endswith(f" over {unsure.name}") for m in misranked)
    ):
        out["verdict"] = str(out["verdict"]) + (
            f"; its members disagree most on {unsure.name}: behaviour its labels did not cover"
        )
    return out


def plot_policy_ranking(result: dict[str, object], path: str | Path) -> Path:
    """Each policy at (true, learned) reward per step with two-standard-error bars (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pols = result["policies"]
    assert isinstance(pols, list)
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    for p in pols:
        x = p["true_per_step"] if p["true_per_step"] is not None else 0.0
        xerr = 2 * p["true_per_step_se"] if p["true_per_step_se"] is not None else None
        ax.errorbar(
            x, p["learned_per_step"], xerr=xerr, yerr=2 * p["learned_per_step_se"], fmt="o", capsize=3
        )
        ax.annotate(p["name"], (x, p["learned_per_step"]), textcoords="offset points", xytext=(6, 6))
    ax.set_xlabel("true reward per step")
    ax.set_ylabel("learned reward per step (from the absorbing state)")
    ax.set_title("Policies as each reward ranks them", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
