"""Query selection: choose which ``k`` of ``m`` candidate pairs to ask the teacher.

Disagreement measures are computed from one batched ensemble pass over all candidates
(chunked only to bound memory): logits ``[E, m]`` for every member at once.
"""

from __future__ import annotations

from typing import Literal, Protocol

import numpy as np
import torch

from prefrl.data.fragments import Fragments
from prefrl.rewards.encode import encode_fragments, fragments_per_chunk
from prefrl.rewards.nets import RewardNet

Measure = Literal["logit", "probability", "label", "entropy"]
MEASURES: tuple[str, ...] = ("logit", "probability", "label", "entropy")


class QuerySelector(Protocol):
    """Picks ``k`` rows of ``candidates`` ``[m, 2]``; returns their indices ``[k]``."""

    def select(self, fragments: Fragments, candidates: np.ndarray, k: int) -> np.ndarray: ...


def _check(candidates: np.ndarray, k: int) -> np.ndarray:
    candidates = np.asarray(candidates)
    if candidates.ndim != 2 or candidates.shape[1] != 2:
        raise ValueError(f"candidate pairs must have shape [m, 2], got {candidates.shape}")
    if not 0 <= k <= len(candidates):
        raise ValueError(f"cannot select {k} of {len(candidates)} candidate pairs")
    return candidates


class UniformSelector:
    """Uniformly random ``k`` of the candidates (no replacement)."""

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def select(self, fragments: Fragments, candidates: np.ndarray, k: int) -> np.ndarray:
        candidates = _check(candidates, k)
        return np.sort(self.rng.choice(len(candidates), size=k, replace=False))


@torch.no_grad()
def ensemble_logits(
    net: RewardNet,
    fragments: Fragments,
    pairs: np.ndarray,
    discount: float = 1.0,
    chunk: int = 4096,
) -> torch.Tensor:
    """``[E, m]`` Bradley–Terry logits of every member for pairs ``[m, 2]``.

    Each fragment is encoded and scored once, however many pairs it appears in.
    """
    pairs = np.asarray(pairs)
    used, inverse = np.unique(pairs, return_inverse=True)
    inv = torch.as_tensor(inverse.reshape(-1, 2), device=net.device)
    returns = []
    w = discount ** torch.arange(fragments.length, dtype=torch.float32, device=net.device)
    chunk = fragments_per_chunk(net, fragments, chunk)  # a few Atari clips at a time, not thousands
    for s in range(0, len(used), chunk):
        feats = encode_fragments(net, fragments, used[s : s + chunk])
        returns.append(net.score(feats) @ w)  # [E, n]
    ret = torch.cat(returns, 1)  # [E, len(used)]
    return ret[:, inv[:, 0]] - ret[:, inv[:, 1]]


def disagreement(logits: torch.Tensor, measure: Measure) -> torch.Tensor:
    """Uncertainty score ``[m]`` from member logits ``[E, m]`` (higher = more informative).

    - ``logit``: variance of the logits across members.
    - ``probability``: variance of σ(logit) across members.
    - ``label``: variance of the predicted label (logit > 0) across members.
    - ``entropy``: entropy of the ensemble-mean probability.
    """
    if measure == "logit":
        return logits.var(0, unbiased=False)
    if measure == "probability":
        return torch.sigmoid(logits).var(0, unbiased=False)
    if measure == "label":
        return (logits > 0).float().var(0, unbiased=False)
    if measure == "entropy":
        p = torch.sigmoid(logits).mean(0).clamp(1e-7, 1 - 1e-7)
        return -(p * p.log() + (1 - p) * (1 - p).log())
    raise ValueError(f"unknown uncertainty measure {measure!r}; choose from {MEASURES}")


class DisagreementSelector:
    """Top-``k`` candidates by ensemble disagreement (or mean-prediction entropy).

    Ties are broken at random so equal scores (e.g. all-zero label variance) do not
    favour the first candidates.
    """

    def __init__(
        self,
        net: RewardNet,
        measure: Measure = "probability",
        discount: float = 1.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        if measure not in MEASURES:
            raise ValueError(f"unknown uncertainty measure {measure!r}; choose from {MEASURES}")
        if measure != "entropy" and net.ensemble_size < 2:
            raise ValueError(f"measure {measure!r} needs an ensemble (ensemble_size >= 2)")
        self.net, self.measure, self.discount = net, measure, discount
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def scores(self, fragments: Fragments, candidates: np.ndarray) -> np.ndarray:
        """``[m]`` disagreement of each candidate pair."""
        logits = ensemble_logits(self.net, fragments, candidates, self.discount)
        return disagreement(logits, self.measure).cpu().numpy()

    def select(self, fragments: Fragments, candidates: np.ndarray, k: int) -> np.ndarray:
        candidates = _check(candidates, k)
        return self.top_k(self.scores(fragments, candidates), k)

    def top_k(self, s: np.ndarray, k: int) -> np.ndarray:
        """Sorted indices ``[k]`` of the ``k`` largest scores ``s [m]`` (ties broken at random)."""
        jitter = self.rng.random(len(s)) * 1e-9 * (np.abs(s).max() + 1e-12)
        return np.sort(np.argpartition(-(s + jitter), k - 1)[:k]) if k else np.zeros(0, np.int64)

    def mixed(self, s: np.ndarray, k: int, share: float) -> np.ndarray:
        """Sorted indices ``[k]``: a ``share`` of them the largest scores ``s [m]``, the rest
        uniformly among the other candidates. ``share * k`` is rounded at random (up with
        probability its fraction), so small batches keep the share on average."""
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"the disagreement share must lie in [0, 1], got {share}")
        if not 0 <= k <= len(s):
            raise ValueError(f"cannot select {k} of {len(s)} candidate pairs")
        if share == 1.0:  # all by disagreement (draws nothing more from the generator)
            return self.top_k(s, k)
        k_top = min(k, int(np.floor(share * k + self.rng.random())))
        top = self.top_k(s, k_top)
        rest = np.setdiff1d(np.arange(len(s)), top)
        drawn = self.rng.choice(rest, size=k - k_top, replace=False)
        return np.sort(np.concatenate([top, drawn]).astype(np.int64))
