"""Reward evaluation: EPIC distance, correlation with the true reward, held-out accuracy.

EPIC (Gleave et al., 2021) compares two rewards up to potential shaping and positive
rescaling. Each reward is first *canonicalised* over a coverage distribution,

    C(R)(s, a, s') = R(s, a, s') + E[γ R(s', A, S') − R(s, A, S') − γ R(S, A, S')],

with ``S, S' ~ D_S`` and ``A ~ D_A`` independent, and the distance is the Pearson
distance ``sqrt((1 − ρ) / 2)`` between canonical rewards on coverage transitions.
It is 0 for equivalent rewards, 1 for negated ones and ``sqrt(1/2)`` for unrelated ones.
Terminal flags are taken as false everywhere (the paper's convention).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from scipy import stats

from prefrl.data.arrays import Obs, obs_concat, obs_len, obs_map, obs_stack
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.interpret.rewardfn import RewardFn, as_reward_fn, index_obs, net_reward_fn
from prefrl.preference.trainer import evaluate_preferences
from prefrl.rewards.nets import Batch, RewardNet
from prefrl.seeding import stream_seed


def _weights(w: np.ndarray | None, n: int, name: str) -> np.ndarray:
    if w is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (n,) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"{name} must be {n} non-negative weights with a positive sum, got shape {w.shape}")
    return w / w.sum()


@dataclass(frozen=True)
class Coverage:
    """Where two rewards are compared.

    Attributes:
        obs, acts, next_obs: ``N`` coverage transitions ``[N, ...]`` (the distribution ``D``).
        weights: ``[N]`` probability of each transition (uniform when ``None``).
        mean_obs: ``[Ms, ...]`` samples (support) of ``D_S`` for the canonicalising expectation.
        mean_acts: ``[Ma, ...]`` samples (support) of ``D_A``.
        mean_obs_weights, mean_acts_weights: ``[Ms]`` / ``[Ma]`` probabilities (uniform if ``None``).
    """

    obs: Any
    acts: Any
    next_obs: Any
    mean_obs: Any
    mean_acts: Any
    weights: np.ndarray | None = None
    mean_obs_weights: np.ndarray | None = None
    mean_acts_weights: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = obs_len(self.obs)
        if n == 0 or obs_len(self.next_obs) != n or len(self.acts) != n:
            raise ValueError(
                f"coverage needs equal, non-zero numbers of obs/acts/next_obs, got "
                f"{n}/{len(self.acts)}/{obs_len(self.next_obs)}"
            )
        if obs_len(self.mean_obs) == 0 or len(self.mean_acts) == 0:
            raise ValueError("coverage needs at least one state and one action sample for the expectation")
        _weights(self.weights, n, "weights")

    def __len__(self) -> int:
        return obs_len(self.obs)

    # ----------------------------------------------------------- builders
    @classmethod
    def tabular(
        cls,
        n_states: int,
        n_actions: int,
        state_weights: np.ndarray | None = None,
        action_weights: np.ndarray | None = None,
    ) -> Coverage:
        """Every ``(s, a, s')`` of a tabular MDP, weighted ``D_S(s) D_A(a) D_S(s')`` (exact)."""
        ws = _weights(state_weights, n_states, "state_weights")
        wa = _weights(action_weights, n_actions, "action_weights")
        s, a, s2 = np.meshgrid(np.arange(n_states), np.arange(n_actions), np.arange(n_states), indexing="ij")
        w = ws[s] * wa[a] * ws[s2]
        return cls(
            s.ravel(),
            a.ravel(),
            s2.ravel(),
            np.arange(n_states),
            np.arange(n_actions),
            w.ravel(),
            ws,
            wa,
        )

    @classmethod
    def from_batch(
        cls,
        batch: TrajectoryBatch,
        n: int | None = None,
        n_mean: int = 64,
        rng: np.random.Generator | None = None,
    ) -> Coverage:
        """Transitions of rollouts; ``D_S``/``D_A`` are their state/action marginals.

        Args:
            n: number of coverage transitions (all when ``None`` or larger than available).
            n_mean: number of state and of action samples for the expectation.
        """
        rng = rng or np.random.default_rng(0)
        rows = batch.step_rows
        if len(rows) == 0:
            raise ValueError("the trajectory batch has no transitions")
        if n is not None and n < len(rows):
            rows = rng.choice(rows, n, replace=False)
        s_rows = rng.choice(obs_len(batch.obs), min(n_mean, obs_len(batch.obs)), replace=False)
        a_rows = rng.choice(batch.step_rows, min(n_mean, batch.num_steps), replace=False)
        return cls(
            index_obs(batch.obs, rows),
            batch.acts[rows],
            index_obs(batch.obs, rows + 1),
            index_obs(batch.obs, s_rows),
            batch.acts[a_rows],
        )

    @classmethod
    def from_spaces(
        cls,
        observation_space: spaces.Space[object],
        action_space: spaces.Space[object],
        n: int = 1024,
        n_mean: int = 64,
        seed: int = 0,
    ) -> Coverage:
        """Independent samples of the spaces (``space.sample()``): s, a and s' all unrelated."""
        observation_space.seed(seed)
        action_space.seed(stream_seed(seed, "coverage_actions"))

        def draw(space: spaces.Space[object], k: int) -> Obs:
            return obs_stack(
                [x if isinstance(x, dict) else np.asarray(x) for x in (space.sample() for _ in range(k))]
            )

        return cls(
            draw(observation_space, n),
            draw(action_space, n),
            draw(observation_space, n),
            draw(observation_space, n_mean),
            draw(action_space, n_mean),
        )


# ------------------------------------------------------------------ EPIC
def _expand(x: Obs | Batch, lead: tuple[int, ...], pos: int) -> Batch:
    """Put the leading dim of ``x`` (tensor or dict) at ``pos`` of a 3-D lead shape, broadcast."""

    def one(t: torch.Tensor) -> torch.Tensor:
        shape = [1, 1, 1]
        shape[pos] = t.shape[0]
        return t.reshape(*shape, *t.shape[1:]).expand(*lead, *t.shape[1:])

    return obs_map(one, obs_map(torch.as_tensor, x))


def mean_next_reward(fn: RewardFn, states: Obs, cov: Coverage, chunk: int = 1 << 16) -> np.ndarray:
    """``g(x) = E_{A ~ D_A, S' ~ D_S} R(x, A, S')`` for each of ``K`` states ``[K, ...]`` -> ``[K]``.

    Evaluates the ``[k, Ma, Ms]`` grid of transitions in chunks of at most ``chunk`` rewards.
    """
    ma, ms = len(cov.mean_acts), obs_len(cov.mean_obs)
    wa = torch.as_tensor(_weights(cov.mean_acts_weights, ma, "mean_acts_weights"))
    ws = torch.as_tensor(_weights(cov.mean_obs_weights, ms, "mean_obs_weights"))
    k_total = obs_len(states)
    step = max(1, chunk // (ma * ms))
    out = []
    for k0 in range(0, k_total, step):
        x = index_obs(states, slice(k0, k0 + step))
        lead = (obs_len(x), ma, ms)
        r = fn(
            _expand(x, lead, 0),
            _expand(cov.mean_acts, lead, 1),
            _expand(cov.mean_obs, lead, 2),
            torch.zeros(lead),
        )
        out.append(torch.einsum("kas,a,s->k", r.double().cpu(), wa, ws))
    return torch.cat(out).numpy()


def canonicalize(
    reward: RewardNet | np.ndarray | RewardFn, cov: Coverage, gamma: float = 0.99, chunk: int = 1 << 16
) -> np.ndarray:
    """Canonical rewards ``C(R)`` ``[N]`` of the coverage transitions (float64)."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    fn = as_reward_fn(reward)
    n, ms = len(cov), obs_len(cov.mean_obs)
    if not isinstance(cov.obs, dict) and np.ndim(cov.obs) >= 4:  # images: keep each forward pass small
        chunk = min(chunk, 4096)
    g = mean_next_reward(fn, obs_concat([cov.next_obs, cov.obs, cov.mean_obs]), cov, chunk)
    g_next, g_s, g_mean = g[:n], g[n : 2 * n], g[2 * n :]
    const = float(g_mean @ _weights(cov.mean_obs_weights, ms, "mean_obs_weights"))
    r = []
    for s in range(0, n, chunk):
        sl = slice(s, s + chunk)
        o, a, o2 = (obs_map(torch.as_tensor, index_obs(x, sl)) for x in (cov.obs, cov.acts, cov.next_obs))
        r.append(fn(o, a, o2, torch.zeros(len(a))).double().cpu())
    return torch.cat(r).numpy() + gamma * g_next - g_s - gamma * const


def pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """(Weighted) Pearson correlation of ``[N]`` arrays; NaN when either is constant."""
    x, y = np.asarray(x, np.float64).ravel(), np.asarray(y, np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"cannot correlate arrays of shapes {x.shape} and {y.shape}")
    w = _weights(weights, len(x), "weights")
    dx, dy = x - w @ x, y - w @ y
    vx, vy = w @ (dx * dx), w @ (dy * dy)
    scale = max(np.abs(x).max(initial=0.0), np.abs(y).max(initial=0.0), 1e-300)
    if vx <= (1e-12 * scale) ** 2 or vy <= (1e-12 * scale) ** 2:
        return float("nan")
    return float(np.clip((w @ (dx * dy)) / math.sqrt(vx * vy), -1.0, 1.0))


def pearson_distance(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """``sqrt((1 − ρ) / 2)`` in [0, 1]; NaN when either input is constant."""
    rho = pearson(x, y, weights)
    return math.sqrt(max(0.0, (1.0 - rho) / 2.0)) if not math.isnan(rho) else float("nan")


def epic_distance(
    reward_a: RewardNet | np.ndarray | RewardFn,
    reward_b: RewardNet | np.ndarray | RewardFn,
    coverage: Coverage,
    gamma: float = 0.99,
    chunk: int = 1 << 16,
) -> float:
    """EPIC distance between two rewards over ``coverage`` (see module docstring).

    Returns NaN if a canonical reward is constant (a reward equivalent to zero).
    """
    ca = canonicalize(reward_a, coverage, gamma, chunk)
    cb = canonicalize(reward_b, coverage, gamma, chunk)
    return pearson_distance(ca, cb, coverage.weights)


# --------------------------------------------------------- correlations
@torch.no_grad()
def predicted_rewards(net: RewardNet, batch: TrajectoryBatch, chunk: int = 8192) -> np.ndarray:
    """Ensemble-mean reward ``[S]`` of every row of ``batch`` (0 in each episode's final row)."""
    rows = batch.step_rows
    fn = net_reward_fn(net)
    dones = batch.dones
    out = np.zeros(len(batch.acts), dtype=np.float64)
    for s in range(0, len(rows), chunk):
        r = rows[s : s + chunk]
        out[r] = fn(
            index_obs(batch.obs, r), batch.acts[r], index_obs(batch.obs, r + 1), torch.as_tensor(dones[r])
        ).numpy()
    return out


def reward_correlations(net: RewardNet, batch: TrajectoryBatch) -> dict[str, float]:
    """Correlation of the learned with the true reward along rollouts.

    Returns:
        ``pearson`` and ``spearman`` over all transitions, and ``return_pearson``: over
        episodes, between learned and true returns (NaN with fewer than 2 episodes).
        A correlation is NaN when either side is constant.
    """
    if batch.rews is None:
        raise ValueError("reward correlations need a trajectory batch with true rewards (rews)")
    rows = batch.step_rows
    if len(rows) < 2:
        raise ValueError(f"need at least 2 transitions to correlate rewards, got {len(rows)}")
    pred = predicted_rewards(net, batch)
    true = batch.rews.astype(np.float64)
    rho = pearson(pred[rows], true[rows])
    if math.isnan(rho):
        spear = float("nan")
    else:
        spear = float(stats.spearmanr(pred[rows], true[rows]).statistic)
    ep = np.repeat(np.arange(len(batch)), batch.lengths + 1)
    ret_pred = np.bincount(ep, weights=pred, minlength=len(batch))
    ret_true = np.bincount(ep, weights=true, minlength=len(batch))
    ret_rho = pearson(ret_pred, ret_true) if len(batch) > 1 else float("nan")
    return {"pearson": rho, "spearman": spear, "return_pearson": ret_rho}


def heldout_preference_metrics(
    net: RewardNet,
    dataset: PreferenceDataset,
    val_fraction: float | None = 0.1,
    discount: float = 1.0,
) -> dict[str, float]:
    """Loss/accuracy of ``net`` on the pairs the trainer held out.

    Args:
        val_fraction: the trainer's ``val_fraction`` (same stable split by pair id);
            ``None`` evaluates every pair (a dataset held out as a whole).

    Returns:
        ``loss``, ``accuracy``, ``tie_fraction``, ``tie_abs_error`` and ``pairs`` (count);
        NaN metrics when no pair is held out.
    """
    if dataset.fragments is None or len(dataset) == 0:
        raise ValueError("held-out metrics need a non-empty preference dataset")
    mask = np.ones(len(dataset), bool) if val_fraction is None else dataset.validation_mask(val_fraction)
    if not mask.any():
        nan = float("nan")
        return {"loss": nan, "accuracy": nan, "tie_fraction": nan, "tie_abs_error": nan, "pairs": 0.0}
    m = evaluate_preferences(net, dataset.fragments, dataset.pairs[mask], dataset.labels[mask], discount)
    return {**m, "pairs": float(mask.sum())}


def heldout_accuracy(net: RewardNet, dataset: PreferenceDataset, val_fraction: float | None = 0.1) -> float:
    """Accuracy on held-out strict preferences (see :func:`heldout_preference_metrics`)."""
    return heldout_preference_metrics(net, dataset, val_fraction)["accuracy"]


@dataclass
class RewardEvaluator:
    """Everything above in one call, for logging once per iteration of the training loop.

    Attributes:
        true_reward: the true reward (table ``[S, A, S']``, net or callable) for EPIC, if known.
        coverage: transitions for EPIC (required with ``true_reward``).
        batch: rollouts with true rewards for correlations.
        gamma: discount used by EPIC's canonicalisation.
        val_fraction: the trainer's validation split, for held-out accuracy.
    """

    true_reward: Any = None
    coverage: Coverage | None = None
    batch: TrajectoryBatch | None = None
    gamma: float = 0.99
    val_fraction: float | None = 0.1

    def __call__(self, net: RewardNet, dataset: PreferenceDataset | None = None) -> dict[str, float]:
        """Metrics named ``epic``, ``pearson``, ``spearman``, ``return_pearson``, ``heldout_accuracy``."""
        out: dict[str, float] = {}
        if self.true_reward is not None:
            if self.coverage is None:
                raise ValueError("EPIC against the true reward needs a coverage distribution")
            out["epic"] = epic_distance(net, self.true_reward, self.coverage, self.gamma)
        if self.batch is not None and self.batch.rews is not None:
            out.update(reward_correlations(net, self.batch))
        if dataset is not None and len(dataset):
            out["heldout_accuracy"] = heldout_accuracy(net, dataset, self.val_fraction)
        return out
