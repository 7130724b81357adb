"""Plots of what a reward rewards, saved as PNG (matplotlib's Agg canvas, no pyplot state).

- :func:`plot_reward_curves`: learned vs true reward along episodes.
- :func:`plot_gridworld_heatmaps`: reward per state and action of a gridworld.
- :func:`plot_reward_slice`: reward against one or two observation dimensions.
- :func:`plot_training_curves`: a run's ``metrics.csv``: the headline panels, or every metric.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from prefrl.data.trajectories import TrajectoryBatch
from prefrl.envs.gridworld import ACTION_NAMES, GridWorldEnv
from prefrl.interpret.evaluation import predicted_rewards
from prefrl.interpret.rewardfn import RewardFn, as_reward_fn, reward_table
from prefrl.rewards.nets import RewardNet


def new_figure(width: float, height: float) -> Figure:
    """A figure on an Agg canvas (safe in threads and without a display)."""
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, path: str | Path, tight: bool = True) -> Path:
    """Write ``fig`` as PNG to ``path`` (parents created), after ``tight_layout`` if ``tight``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def affine_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares ``(a, b)`` with ``a x + b ≈ y`` (``a = 0`` when ``x`` is constant)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    vx = x.var()
    a = float(((x - x.mean()) * (y - y.mean())).mean() / vx) if vx > 1e-12 else 0.0
    return a, float(y.mean() - a * x.mean())


# ------------------------------------------------------------ reward curves
def plot_reward_curves(
    net: RewardNet,
    batch: TrajectoryBatch,
    path: str | Path,
    episodes: Sequence[int] | None = None,
    match_scale: bool = True,
) -> Path:
    """Learned (and, when known, true) reward at each step of some episodes, one panel each.

    Learned rewards have an arbitrary scale and offset, so with ``match_scale`` and true
    rewards they are mapped by the affine fit ``a r̂ + b`` to the true reward over the batch.

    Args:
        episodes: episode indices to draw (default: up to the first 4).
    """
    eps = list(range(min(4, len(batch)))) if episodes is None else [int(e) for e in episodes]
    if not eps:
        raise ValueError("no episodes to plot")
    bad = [e for e in eps if not 0 <= e < len(batch)]
    if bad:
        raise ValueError(f"episode indices {bad} out of range: the batch has {len(batch)} episodes")
    pred = predicted_rewards(net, batch)
    rows = batch.step_rows
    a, b, label = 1.0, 0.0, "learned"
    if batch.rews is not None and match_scale:
        a, b = affine_fit(pred[rows], batch.rews[rows])
        label = f"learned ({a:.3g}·r̂ {'+' if b >= 0 else '−'} {abs(b):.3g})"
    fig = new_figure(8, 2.2 * len(eps))
    starts = batch.starts
    for i, e in enumerate(eps):
        ax = fig.add_subplot(len(eps), 1, i + 1)
        s, t = int(starts[e]), int(batch.lengths[e])
        steps = np.arange(t)
        if batch.rews is not None:
            ax.plot(steps, batch.rews[s : s + t], label="true", color="black", lw=1.5)
        ax.plot(steps, a * pred[s : s + t] + b, label=label, color="tab:orange", lw=1.2)
        ax.set_title(f"episode {e}", fontsize=9)
        ax.set_ylabel("reward")
        if i == 0:
            ax.legend(fontsize=8, loc="best")
    fig.axes[-1].set_xlabel("step")
    return save_figure(fig, path)


# ------------------------------------------------------------ gridworld
def gridworld_state_action_rewards(
    reward: RewardNet | np.ndarray | RewardFn, env: GridWorldEnv
) -> np.ndarray:
    """Expected reward ``R(s, a) = Σ_s' P(s'|s,a) R(s,a,s')`` as ``[A, H, W]`` (NaN on walls/terminals)."""
    if isinstance(reward, np.ndarray):
        table = np.asarray(reward, np.float64)
    else:
        table = reward_table(as_reward_fn(reward), env.n_states, 4, dones=env.terminal_states())
    if table.shape != (env.n_states, 4, env.n_states):
        raise ValueError(
            f"reward table of shape {table.shape} does not fit a {env.height}x{env.width} gridworld"
        )
    r = (env.transition_table() * table).sum(-1).T  # [A, S]
    r[:, env.wall_states() | env.terminal_states()] = np.nan
    return r.reshape(4, env.height, env.width)


def plot_gridworld_heatmaps(
    rewards: Mapping[str, RewardNet | np.ndarray | RewardFn], env: GridWorldEnv, path: str | Path
) -> Path:
    """One row per reward: ``R(s, a)`` for each action, and the best action per cell (arrows).

    Args:
        rewards: named rewards (nets, ``[S, A, S']`` tables or callables), e.g. true and learned.
    """
    if not rewards:
        raise ValueError("give at least one reward to draw")
    n = len(rewards)
    fig = new_figure(14, 2.8 * n + 0.3)
    arrows = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]], float)  # (dx, dy) for up, right, down, left
    bars = []  # (last axes of the row, image) -> one shared colour scale per row
    for i, (name, rew) in enumerate(rewards.items()):
        r = gridworld_state_action_rewards(rew, env)  # [A, H, W]
        finite = r[np.isfinite(r)]
        lim = float(np.abs(finite).max()) if finite.size else 1.0
        for a in range(5):
            ax = fig.add_subplot(n, 5, i * 5 + a + 1)
            data = (
                r[a]
                if a < 4
                else np.where(np.isfinite(r).any(0), np.where(np.isfinite(r), r, -np.inf).max(0), np.nan)
            )
            im = ax.imshow(data, cmap="RdBu_r", vmin=-lim or -1, vmax=lim or 1)
            for (y, x), ch in np.ndenumerate(env.cells):
                if ch in "#GL":
                    ax.text(x, y, ch, ha="center", va="center", fontsize=8, color="dimgray")
            if a == 4 and finite.size:
                best = np.nanargmax(np.where(np.isfinite(r), r, -np.inf), 0)
                ok = np.isfinite(data)
                yy, xx = np.nonzero(ok)
                d = arrows[best[ok]]
                ax.quiver(xx, yy, d[:, 0], -d[:, 1], angles="xy", scale_units="xy", scale=2.5, width=0.01)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{name}: {ACTION_NAMES[a] if a < 4 else 'max, argmax'}", fontsize=8)
        bars.append((ax, im))
    fig.subplots_adjust(left=0.01, right=0.93, top=0.93, bottom=0.03, wspace=0.05, hspace=0.25)
    for ax, im in bars:
        pos = ax.get_position()
        fig.colorbar(im, cax=fig.add_axes((0.945, pos.y0, 0.012, pos.height)))
    return save_figure(fig, path, tight=False)


# ---------------------------------------------------------------- slices
def _ref_action(space: spaces.Space[Any], batch: TrajectoryBatch | None) -> np.ndarray:
    if batch is not None and batch.num_steps:
        acts = batch.acts[batch.step_rows]
        if isinstance(space, spaces.Discrete):
            vals, counts = np.unique(acts, return_counts=True)
            return np.asarray(vals[np.argmax(counts)])
        return np.median(acts, 0).astype(acts.dtype)
    if isinstance(space, spaces.Box):
        return np.clip(np.zeros(space.shape, space.dtype), space.low, space.high)
    return np.asarray(space.sample())


def plot_reward_slice(
    net: RewardNet,
    dims: Sequence[int],
    path: str | Path,
    batch: TrajectoryBatch | None = None,
    ranges: Sequence[tuple[float, float]] | None = None,
    resolution: int = 60,
    action: Any = None,
) -> Path:
    """Reward against one or two observation dimensions, the others held at a reference.

    The reference observation is the median of ``batch``'s observations (zeros otherwise),
    the action the most common (Discrete) or median (Box) one unless ``action`` is given,
    and ``next_obs`` equals ``obs``. Ranges default to the 1st-99th percentiles of the data,
    or to finite space bounds, or to [-3, 3].
    """
    space = net.observation_space
    if not isinstance(space, spaces.Box) or len(space.shape) != 1:
        raise ValueError(f"reward slices need a 1-D Box observation space, got {space}")
    d = space.shape[0]
    dims = [int(x) for x in dims]
    if not 1 <= len(dims) <= 2 or any(not 0 <= x < d for x in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"choose one or two distinct observation dimensions in 0..{d - 1}, got {dims}")
    obs_data = np.asarray(batch.obs, np.float64) if batch is not None else None
    ref = np.median(obs_data, 0) if obs_data is not None else np.zeros(d)
    if ranges is None:
        ranges = []
        for x in dims:
            if obs_data is not None:
                lo, hi = np.percentile(obs_data[:, x], [1, 99])
            elif np.isfinite(space.low[x]) and np.isfinite(space.high[x]):
                lo, hi = float(space.low[x]), float(space.high[x])
            else:
                lo, hi = -3.0, 3.0
            ranges.append((float(lo), float(hi) if hi > lo else float(lo) + 1.0))
    if len(ranges) != len(dims):
        raise ValueError(f"give one (low, high) range per dimension: {len(dims)} dims, {len(ranges)} ranges")
    axes = [np.linspace(lo, hi, resolution) for lo, hi in ranges]
    grid = np.meshgrid(*axes, indexing="ij")
    obs = np.broadcast_to(ref, (*grid[0].shape, d)).copy()
    for x, g in zip(dims, grid):
        obs[..., x] = g
    obs = obs.astype(space.dtype)
    act = np.asarray(_ref_action(net.action_space, batch) if action is None else action)
    acts = np.broadcast_to(act, (*grid[0].shape, *act.shape)).copy()
    r = net_slice_rewards(net, obs, acts)
    fig = new_figure(6, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    if len(dims) == 1:
        ax.plot(axes[0], r, color="tab:orange")
        ax.set_xlabel(f"obs[{dims[0]}]")
        ax.set_ylabel("learned reward")
        if obs_data is not None:
            ax.plot(obs_data[:, dims[0]], np.full(len(obs_data), r.min()), "|", color="gray", alpha=0.3)
    else:
        im = ax.pcolormesh(axes[1], axes[0], r, cmap="viridis", shading="auto")
        fig.colorbar(im, ax=ax, label="learned reward")
        ax.set_xlabel(f"obs[{dims[1]}]")
        ax.set_ylabel(f"obs[{dims[0]}]")
        if obs_data is not None:
            ax.plot(obs_data[:, dims[1]], obs_data[:, dims[0]], ".", color="white", ms=2, alpha=0.4)
    ax.set_title(
        f"reward slice (action {np.array2string(act, precision=2)}, other dims at median)", fontsize=9
    )
    return save_figure(fig, path)


@torch.no_grad()
def net_slice_rewards(net: RewardNet, obs: np.ndarray, acts: np.ndarray) -> np.ndarray:
    """Ensemble-mean reward of ``(obs, acts, next_obs=obs)`` with any leading shape."""
    mean, _ = net.predict(obs, acts, obs)
    return mean


# ----------------------------------------------------------- training curves
def read_metrics_csv(path: str | Path) -> dict[str, np.ndarray]:
    """Numeric columns of a CSV (``[rows]`` float, NaN where empty); non-numeric ones are dropped.
    A file that is not a text CSV, or holds no numeric metric, is a one-line ``ValueError`` naming it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such metrics file")
    try:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a text CSV file") from None
    except csv.Error as e:
        raise ValueError(f"{path}: not a readable CSV file ({e})") from None
    if not rows:
        raise ValueError(f"{path}: no metric rows")
    out: dict[str, np.ndarray] = {}
    for col in rows[0]:
        if col is None:
            continue
        vals = []
        for row in rows:
            v = (row.get(col) or "").strip()
            try:
                vals.append(float(v) if v else math.nan)
            except ValueError:
                break
        else:
            if not all(math.isnan(v) for v in vals):
                out[col] = np.asarray(vals, np.float64)
    if not set(out) - {"step", "env_steps"}:
        raise ValueError(f"{path}: no numeric metric columns (besides 'step')")
    return out


HEADLINE_PANELS: tuple[tuple[str, tuple[str, ...], tuple[float, float] | None], ...] = (
    ("agent: true return of its episodes", ("rollout/true_return",), None),
    ("agent: action entropy (0: it stopped sampling), entropy bonus",
     ("agent/entropy", "agent/ent_coef"), None),
    ("reward model: pair accuracy",
     ("reward/heldout_accuracy", "reward/val_accuracy", "reward/train_accuracy"), (0.0, 1.02)),
    ("learned vs true reward (Pearson r)", ("reward/pearson_true",), (-1.02, 1.02)),
    ("labels", ("labels/total", "labels/queries_asked"), None),
    ("reward model: loss", ("reward/train_loss", "reward/val_loss"), None),
    ("time per iteration (s)", ("time/agent_s", "time/reward_s"), None),
)  # fmt: skip
"""The panels of the headline training figure: (title, metrics drawn together, y limits)."""


def _flat(y: np.ndarray) -> bool:
    ok = y[np.isfinite(y)]
    return len(ok) == 0 or bool(np.all(ok == ok[0]))


Panel = tuple[str, list[str], "tuple[float, float] | None"]


def training_panels(cols: Mapping[str, np.ndarray], panels: str = "headline") -> tuple[list[Panel], int]:
    """The panels :func:`plot_training_curves` draws: ``[(title, metric names, y limits)]``
    and how many constant metrics ``"all"`` leaves out. ``"headline"`` falls back to
    ``"all"`` when none of the usual metrics is there."""
    if panels not in ("headline", "all"):
        raise ValueError(f"panels must be 'headline' or 'all', got {panels!r}")
    cols = {k: v for k, v in cols.items() if k not in ("step", "env_steps")}
    if not cols:
        raise ValueError("no numeric metric columns to plot (besides 'step')")
    if panels == "headline":
        chosen: list[Panel] = [
            (t, [m for m in ms if m in cols and np.isfinite(cols[m]).any()], lim)
            for t, ms, lim in HEADLINE_PANELS
        ]
        chosen = [c for c in chosen if c[1]]
        if chosen:
            return chosen, 0
    moving = sorted(k for k, v in cols.items() if not _flat(v))
    if not moving:  # nothing changes: draw them all rather than nothing
        return [(k, [k], None) for k in sorted(cols)], 0
    return [(k, [k], None) for k in moving], len(cols) - len(moving)


def plot_training_curves(
    metrics: str | Path | Mapping[str, np.ndarray], path: str | Path, panels: str = "headline"
) -> Path:
    """Training curves from a run's ``metrics.csv`` against environment steps.

    ``panels="headline"``: the few panels a person reads first (:data:`HEADLINE_PANELS`:
    the agent's true return, the reward model's accuracy, learned-vs-true correlation,
    labels, loss, time), related metrics drawn together; panels without data are left out.
    ``panels="all"``: one panel per numeric metric that changes (constant ones are counted
    in a note, not drawn).
    """
    cols = read_metrics_csv(metrics) if isinstance(metrics, (str, Path)) else dict(metrics)
    chosen, n_flat = training_panels(cols, panels)
    x = cols.get("env_steps", cols.get("step"))
    x = np.arange(len(next(iter(cols.values())))) if x is None else x
    xlabel = "environment steps" if "env_steps" in cols else "step"
    ncol = min(3, len(chosen))
    nrow = math.ceil(len(chosen) / ncol)
    fig = new_figure(4.2 * ncol, 2.8 * nrow)
    for i, (name, names, lim) in enumerate(chosen):
        ax = fig.add_subplot(nrow, ncol, i + 1)
        for m in names:
            y = cols[m]
            ok = np.isfinite(y)
            label = m.split("/", 1)[-1].replace("_", " ")
            ax.plot(x[ok], y[ok], marker="." if ok.sum() < 30 else None, lw=1.2, label=label)
        if lim is not None:
            ax.set_ylim(*lim)
        if len(names) > 1:
            ax.legend(fontsize=7, frameon=False)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.tick_params(labelsize=7)
    if n_flat:
        fig.text(0.5, 0.0, f"{n_flat} constant metrics not drawn", ha="center", va="top", fontsize=8)
    return save_figure(fig, path)
