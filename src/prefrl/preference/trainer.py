"""Fit a reward network to labelled pairs: minibatch AdamW, all ensemble members at once.

Per call to :meth:`RewardTrainer.train`, every fragment of the dataset is encoded once
(``RewardNet.encode``); minibatches then only index that feature table, so a step is one
forward and one backward pass over ``[E, b, 2, L]`` transitions, whatever ``E``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from prefrl.config_types import OptFloat, OptInt
from prefrl.data.arrays import obs_map
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments, random_pairs, sample_fragments, window_counts
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference.allocator import keep_freed_memory
from prefrl.preference.augment import random_shift
from prefrl.preference.model import preference_logits, preference_loss, preference_metrics
from prefrl.preference.optim import FlatAdamW, FlatParameters
from prefrl.preference.self_predictive import SelfPredictiveConfig
from prefrl.preference.trust import TrustRecord
from prefrl.rewards.encode import encode_fragments, fragments_per_chunk, gather
from prefrl.rewards.nets import Features, RewardNet, to_tensor
from prefrl.storage.logger import Logger, NullLogger
from prefrl.teachers.synthetic import SyntheticTeacher

LR, FLAT_CNN_LR = 3e-3, 3e-4
"""``RewardTrainerConfig.lr`` auto: the learning rate of every reward network but a CNN over flat
image features, and that CNN's (see :func:`default_lr`)."""


def default_lr(net: RewardNet) -> float:
    """``lr=None`` (auto): :data:`FLAT_CNN_LR` for a CNN reward over flat image features, else
    :data:`LR`. Adam moves every weight by about the learning rate per step whatever its
    gradient's size; the flat CNN's head reads thousands of features per frame, so at 3e-3 its
    output's level ran away (a tanh saturated within 40 steps) and its convolutions died (Pong)."""
    from prefrl.rewards.cnn import CNNReward

    return FLAT_CNN_LR if isinstance(net, CNNReward) and not net.spatial else LR


@dataclass(frozen=True)
class RewardTrainerConfig:
    """How the reward network is fitted to preferences."""

    lr: OptFloat = None
    """AdamW learning rate. Default auto (resolved by the trainer from its network; prefrl train
    writes the one chosen to config.json): 3e-4 for a CNN reward over flat image features
    (Atari's frames), whose convolutions died at 3e-3 on Pong (every unit of the shared trunk
    zero on every frame, the reward the same everywhere), 3e-3 otherwise (the MLP and the
    keypoint CNN, where every figure was measured); see docs/benchmarks/pixels.md."""
    batch_size: int = 32
    """Pairs per optimiser step (per ensemble member)."""
    grad_accum_steps: int = 1
    """Split each batch into this many chunks whose gradients are accumulated (saves memory)."""
    epochs: float = 50.0
    """Passes over the training pairs per call to train() (fractions allowed): per reward update
    in the loop, per training round in the preference wrapper."""
    weight_decay: float = 0.0
    """AdamW decoupled weight decay."""
    val_fraction: float = 0.1
    """Share of pairs held out for validation (a stable split by pair id)."""
    adaptive_l2: bool = False
    """Adapt an L2 penalty per member to keep validation loss within l2_band x train loss."""
    l2_init: OptFloat = None
    """Initial L2 coefficient (also the fixed coefficient when not adaptive; 0 disables).
    Default auto: prefrl train takes 0.01 for the MLP reward where random actions only meet
    time limits (with --loop.initial-steps-per-label, a broad first reward), else 0; a trainer
    built in code takes 0."""
    l2_band: tuple[float, float] = (1.1, 1.5)
    """Target band of validation loss / training loss (DRLHP: 1.1 to 1.5)."""
    l2_factor: float = 2.0
    """Factor by which the L2 coefficient moves after each epoch outside the band."""
    error_rate: float = 0.0
    """Assumed probability that the teacher answers at random (DRLHP used 0.1)."""
    label_smoothing: float = 0.0
    """Label smoothing (SEER): each training label y is moved towards a tie, to
    (1 - label_smoothing) * y + label_smoothing / 2, so that a few labels cannot push the reward
    gap between two clips without bound; 0: off."""
    discount: float = 1.0
    """Discount applied to rewards within a fragment when forming returns."""
    bootstrap: bool = True
    """Give each ensemble member its own bootstrap resample of the training pairs."""
    update_normalization: bool = True
    """Fold newly added fragments into the network's input normalisation before training."""
    max_grad_norm: OptFloat = None
    """Clip the gradient norm (None: no clipping)."""
    seed: int = 0
    """Seed of the trainer's own random generator (batch order, bootstrap)."""
    keep_freed_memory: bool = True
    """Tune glibc to reuse freed tensor memory instead of returning it to the OS (faster steps)."""
    max_steps: OptInt = None
    """Most optimiser steps per call to train() (the loop's first call: initial_epoch_multiplier
    times as many); fewer epochs are run where the cap binds. None: epochs alone decide. For image
    rewards, where fitting 50 epochs over every label at every update costs far more than the
    agent (Atari: 89% of a run's time), a cap keeps the reward's compute bounded per update
    while the network, kept from update to update, goes on learning."""
    image_shift: int = 0
    """Random-shift augmentation of image rewards (RAD, DrQ): every training clip is shifted by a
    random offset of up to this many pixels on each axis (edges repeated), one offset per clip and
    ensemble member, so the reward cannot key on exact pixel positions. 0: off (vector rewards:
    must be 0)."""
    crop_min_frac: float = 1.0
    """Temporal crop (SURF): each training comparison scores a random window of its two clips,
    of one length drawn in [crop_min_frac * L, L] and a start drawn per clip; 1.0: off."""
    noise_filter: bool = False
    """Noise-robust training (RIME): from the second call on, before each epoch the ensemble
    (warm from earlier training) scores every training pair; a label it gives a probability
    below noise_drop_below is left out of that epoch, below noise_flip_below it is flipped.
    Only in calls where the model is trusted (see filter_min_accuracy)."""
    noise_drop_below: float = 0.1
    """Noise filter: leave out labels the ensemble gives less than this probability."""
    noise_flip_below: float = 0.02
    """Noise filter: flip labels the ensemble gives less than this probability (0: never flip)."""
    pseudo_label_ratio: float = 0.0
    """Semi-supervised (SURF): unlabelled clip pairs per labelled pair in each batch, drawn from
    the recent episodes the loop passes in; pairs the ensemble is sure about (see
    pseudo_label_threshold) are trained on with the label it predicts. 0: off."""
    pseudo_label_threshold: float = 0.99
    """Semi-supervised: an unlabelled pair gets a pseudo-label only when the ensemble-mean
    probability of one side is at least this."""
    pseudo_min_accuracy: float = 0.8
    """Trust gate: pseudo-labels are drawn in a call only while the model, before that call
    trains, predicts at least this share of the newest real labels (see trust_window); never in
    the first call."""
    filter_min_accuracy: float = 0.6
    """Trust gate: the noise filter acts in a call only from this accuracy on the newest real
    labels; below pseudo_min_accuracy because a noisy teacher caps what a right model scores
    (about 0.7 against a teacher wrong on 30% of labels)."""
    trust_window: int = 20
    """Trust gate: the accuracy is measured on this many of the newest non-tied labels, each
    scored by the model before it trained on it."""
    self_predictive: bool = SelfPredictiveConfig.enabled
    """With --reward.kind reed, in prefrl train's loop: before every reward update, train the state
    encoder on REED's self-predictive objective (predict the next state's encoding from the state's
    and the action) on the iteration's episodes plus, for off-policy agents, a sample of the replay
    buffer; off: the REED network learns from the preferences alone. No effect on other networks."""
    self_predictive_steps: int = SelfPredictiveConfig.steps
    """REED self-predictive training: Adam updates per reward update (initial_epoch_multiplier times
    as many in the first)."""
    self_predictive_batch_size: int = SelfPredictiveConfig.batch_size
    """REED self-predictive training: random transitions per update, per ensemble member."""
    self_predictive_lr: float = SelfPredictiveConfig.lr
    """REED self-predictive training: Adam learning rate (its own optimiser, over the encoder and the
    next-latent predictor)."""

    def __post_init__(self) -> None:
        if self.lr is not None and not self.lr > 0:  # NaN too
            raise ValueError(f"lr must be positive (or None: auto), got {self.lr}")
        if self.batch_size < 1 or self.grad_accum_steps < 1:
            raise ValueError("batch_size and grad_accum_steps must be >= 1")
        if self.batch_size % self.grad_accum_steps:
            raise ValueError(
                f"batch_size {self.batch_size} is not divisible by grad_accum_steps {self.grad_accum_steps}"
            )
        if self.epochs <= 0:
            raise ValueError(f"epochs must be positive, got {self.epochs}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1 (or None: no cap), got {self.max_steps}")
        if self.image_shift < 0:
            raise ValueError(f"image_shift must be >= 0 pixels, got {self.image_shift}")
        if not 0.0 <= self.error_rate < 1.0:
            raise ValueError(f"error_rate must lie in [0, 1), got {self.error_rate}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must lie in [0, 1), got {self.label_smoothing}")
        if self.pseudo_label_ratio < 0 or not 0.5 < self.pseudo_label_threshold <= 1.0:
            raise ValueError(
                f"need pseudo_label_ratio >= 0 and pseudo_label_threshold in (0.5, 1], got "
                f"{self.pseudo_label_ratio} and {self.pseudo_label_threshold}"
            )
        if not 0.0 < self.crop_min_frac <= 1.0:
            raise ValueError(f"crop_min_frac must lie in (0, 1], got {self.crop_min_frac}")
        if not 0.0 <= self.noise_flip_below <= self.noise_drop_below < 0.5:
            raise ValueError(
                "need 0 <= noise_flip_below <= noise_drop_below < 0.5, got "
                f"{self.noise_flip_below} and {self.noise_drop_below}"
            )
        for name in ("pseudo_min_accuracy", "filter_min_accuracy"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} is a share of labels, in [0, 1]; got {getattr(self, name)}")
        if self.trust_window < 1:
            raise ValueError(f"trust_window must be >= 1 label, got {self.trust_window}")
        self.self_predictive_config()  # checks the self_predictive_* options

    def self_predictive_config(self) -> SelfPredictiveConfig:
        """The ``self_predictive*`` options as the REED encoder's trainer takes them (seeded by ``seed``)."""
        return SelfPredictiveConfig(
            enabled=self.self_predictive,
            steps=self.self_predictive_steps,
            batch_size=self.self_predictive_batch_size,
            lr=self.self_predictive_lr,
            seed=self.seed,
        )


class RewardTrainer:
    """Trains a :class:`RewardNet` (any ensemble size) on a :class:`PreferenceDataset`."""

    def __init__(
        self,
        net: RewardNet,
        config: RewardTrainerConfig | None = None,
        logger: Logger | None = None,
    ) -> None:
        self.net = net
        self.config = config or RewardTrainerConfig()
        self.logger = logger or NullLogger()
        c = self.config
        if c.keep_freed_memory:
            keep_freed_memory()
        self.flat = FlatParameters(net)
        lr = default_lr(net) if c.lr is None else c.lr
        self.optimizer = FlatAdamW(self.flat, lr=lr, weight_decay=c.weight_decay)
        dev = net.device
        self.l2 = torch.full((net.ensemble_size,), c.l2_init or 0.0, device=dev)
        self.generator = torch.Generator(device="cpu").manual_seed(c.seed)
        self.stats_seen = 0  # pairs (by id) already folded into input normalisation
        self.calls = 0
        self.global_step = 0
        self.trust = TrustRecord(c.trust_window)  # the model's record on fresh labels (trust gate)

    # ------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue training exactly (optimiser, L2, RNG, counters, the
        trust gate's record): tensors and JSON values, nothing to pickle."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "l2": self.l2.clone(),
            "generator": self.generator.get_state(),
            "stats_seen": self.stats_seen,
            "calls": self.calls,
            "global_step": self.global_step,
            "trust": self.trust.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.l2 = state["l2"].to(self.net.device)
        self.generator.set_state(state["generator"])
        self.stats_seen = int(state["stats_seen"])
        self.calls = int(state["calls"])
        self.global_step = int(state["global_step"])
        trust = state.get("trust")
        if trust is None:  # older checkpoints: the normaliser's mark is where the last call stood
            trust = {"seen": self.stats_seen if self.config.update_normalization else None}
        self.trust.load_state_dict(trust)

    # ------------------------------------------------------------ train
    def _update_stats(self, ds: PreferenceDataset) -> None:
        new = ds.pair_ids >= self.stats_seen
        if not new.any() or ds.fragments is None:
            return
        frag_idx = np.unique(ds.pairs[new])
        fa = ds.fragments.arrays(frag_idx)
        keep = ~fa.absorbing  # [n, L]: absorbing steps are not states the network sees
        dev = self.net.device
        self.net.update_stats(
            to_tensor(obs_map(lambda a: a[keep], fa.obs), dev),
            to_tensor(fa.acts[keep], dev),
            to_tensor(obs_map(lambda a: a[keep], fa.next_obs), dev),
            to_tensor(fa.dones[keep], dev),
        )
        self.stats_seen = int(ds.next_id)

    @torch.no_grad()
    def _score_fresh(self, ds: PreferenceDataset) -> tuple[int, int]:
        """Trust gate: the model as it stands (before this call trains or updates its input
        normalisation) guesses the side of each label added since the last call; the outcomes
        go to :attr:`trust`. Nothing is scored in the first call (no trained model yet).
        Returns (labels guessed right, labels scored) of this call."""
        idx = self.trust.take_new(ds)  # [n] the newest non-tied new labels
        if self.calls == 0 or not len(idx) or ds.fragments is None:
            return 0, 0
        used, inv = np.unique(ds.pairs[idx], return_inverse=True)
        feats = encode_fragments(self.net, ds.fragments, used)
        self.net.eval()
        rews = self.net.score(gather(feats, torch.as_tensor(inv.reshape(-1, 2), device=self.net.device)))
        p = torch.sigmoid(preference_logits(rews, self.config.discount)).mean(0)  # [n] ensemble-mean P(first)
        side = np.sign(p.cpu().numpy() - 0.5)  # 0: no opinion, never right
        hits = side == np.sign(ds.labels[idx] - 0.5)
        self.trust.record(hits)
        return int(hits.sum()), len(idx)

    def train(
        self, dataset: PreferenceDataset, epoch_multiplier: float = 1.0, unlabelled: Fragments | None = None
    ) -> dict[str, float]:
        """Fit the network to ``dataset``; returns metrics (also sent to the logger).

        Pseudo-labels and the noise filter act only when the trust gate lets them: the model,
        before this call trains, predicted enough of the newest real labels (see
        ``RewardTrainerConfig.pseudo_min_accuracy``).

        Args:
            dataset: labelled pairs (at least one outside the validation split).
            epoch_multiplier: scales ``config.epochs`` (e.g. longer first training).
            unlabelled: clips (same length as the dataset's) to draw pseudo-labelled pairs
                from when ``config.pseudo_label_ratio > 0``; ignored otherwise.
        """
        c, net = self.config, self.net
        if len(dataset) == 0 or dataset.fragments is None:
            raise ValueError("cannot train a reward model on an empty preference dataset")
        t0 = time.perf_counter()
        if not self.flat.intact():
            raise RuntimeError(
                "the reward network's parameters were replaced after the trainer was built "
                "(e.g. by .to(device) or .double()); build the RewardTrainer after moving the network"
            )
        fresh_hits, fresh_n = self._score_fresh(dataset)
        pseudo_ok = self.calls > 0 and self.trust.trusts(c.pseudo_min_accuracy)
        filter_ok = self.calls > 0 and self.trust.trusts(c.filter_min_accuracy)
        if c.update_normalization:
            self._update_stats(dataset)
        dev = net.device
        feats = encode_fragments(net, dataset.fragments)  # [Nf, L, ...]
        pairs = torch.as_tensor(dataset.pairs, device=dev)
        labels = dataset_labels = torch.as_tensor(dataset.labels, device=dev)
        val = dataset.validation_mask(c.val_fraction)
        train_idx = torch.as_tensor(np.flatnonzero(~val), device=dev)
        val_idx = torch.as_tensor(np.flatnonzero(val), device=dev)
        if len(train_idx) == 0:
            train_idx, val_idx = val_idx, val_idx[:0]  # tiny datasets: train on everything
        n, e = len(train_idx), net.ensemble_size
        per_member = e > 1 and c.bootstrap and not net.shared_trunk
        if per_member:  # one bootstrap resample of the training pairs per member: [E, n]
            boot = train_idx[torch.randint(0, n, (e, n), generator=self.generator).to(dev)]
        # a shared trunk sees one batch for all members; each member weighs its pairs by how often
        # its bootstrap resample drew them (the same resample, as weights): [E, N]
        boot_w: torch.Tensor | None = None
        if e > 1 and c.bootstrap and net.shared_trunk:
            draws = train_idx[torch.randint(0, n, (e, n), generator=self.generator).to(dev)]
            boot_w = torch.zeros(e, len(dataset), device=dev).scatter_add_(
                1, draws, torch.ones(e, n, device=dev)
            )
        b = min(c.batch_size, n)
        steps_per_epoch = math.ceil(n / b)
        total_epochs = c.epochs * epoch_multiplier
        total_steps = max(1, round(total_epochs * steps_per_epoch))
        if c.max_steps is not None:
            total_steps = min(total_steps, max(1, round(c.max_steps * epoch_multiplier)))
            total_epochs = total_steps / steps_per_epoch
        if c.image_shift and "img" not in feats:
            raise ValueError(
                f"image_shift={c.image_shift} shifts the frames of image rewards; this reward network "
                f"({type(net).__name__}) reads no images: set image_shift to 0"
            )
        chunk = max(1, b // c.grad_accum_steps)
        net.train()
        loss_sum = torch.zeros(e, device=dev)
        seen = 0
        use_l2 = (c.l2_init or 0.0) > 0 or c.adaptive_l2
        kept: list[tuple[torch.Tensor, torch.Tensor]] = []  # (logits, labels) of the epoch
        epoch_metrics: dict[str, float] = {}
        step = 0
        weight = torch.ones_like(labels)  # [N] 0 for labels the noise filter leaves out this epoch
        filtered = {"noise_dropped": 0.0, "noise_flipped": 0.0}
        semi = self._unlabelled_features(unlabelled, dataset.fragments.length) if pseudo_ok else None
        pseudo_on = c.pseudo_label_ratio > 0 and unlabelled is not None and len(unlabelled) >= 2
        n_u = max(1, round(c.pseudo_label_ratio * b))
        pseudo = torch.zeros(2, device=dev)  # [pairs drawn, pairs pseudo-labelled]
        while step < total_steps:
            if c.noise_filter and filter_ok:
                labels, weight, filtered = self._filter_noise(feats, pairs, dataset_labels, train_idx)
            if per_member:
                order = torch.argsort(torch.rand(e, n, generator=self.generator), dim=1).to(dev)
                epoch_idx = torch.gather(boot, 1, order)  # [E, n]
            else:
                epoch_idx = train_idx[torch.randperm(n, generator=self.generator).to(dev)]  # [n]
            for s in range(steps_per_epoch):
                if step >= total_steps:
                    break
                batch = epoch_idx[..., s * b : (s + 1) * b]  # [E, b] or [b]
                self.flat.zero_grad()
                for k in range(0, batch.shape[-1], chunk):
                    idx = batch[..., k : k + chunk]
                    batch_feats = gather(feats, pairs[idx])  # [(E,) bc, 2, L, ...]
                    if c.image_shift:  # one offset per clip (and member): [(E,) bc, 2] clips
                        img = batch_feats["img"]
                        batch_feats["img"] = random_shift(img, c.image_shift, idx.dim() + 1, self.generator)
                    rews = net.score(batch_feats, per_member=per_member)  # [E, *, 2, L]
                    if c.crop_min_frac < 1.0:
                        rews = rews * self._crop_mask(idx.shape, rews.shape[-1], dev)
                    logits = preference_logits(rews, c.discount)  # [E, bc]
                    y, w = smooth_labels(labels[idx], c.label_smoothing), weight[idx]  # w: [(E,) bc]
                    w = w if boot_w is None else w * boot_w[:, idx]  # [E, bc]
                    loss_all = preference_loss(logits, y, c.error_rate, reduction="none")  # [E, bc]
                    loss_e = (loss_all * w).sum(-1) / w.sum(-1).clamp_min(1.0)
                    loss = loss_e.sum() * (idx.shape[-1] / batch.shape[-1])
                    if semi is not None and k == 0:  # once per step: unlabelled pairs, sure ones only
                        loss = loss + self._pseudo_loss(semi, n_u, pseudo)
                    if use_l2:
                        loss = loss + (self.l2 * net.l2_per_member()).sum() / c.grad_accum_steps
                    loss.backward()
                    loss_sum += loss_e.detach() * idx.shape[-1]
                    kept.append((logits.detach(), y))
                    seen += idx.shape[-1]
                if c.max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(self.flat.params, c.max_grad_norm)
                self.optimizer.step()
                step += 1
            # end of an epoch: validation and the adaptive L2 rule
            train_loss = loss_sum / max(seen, 1)  # [E]
            lg = torch.cat([k[0] for k in kept], -1)
            yy = torch.cat([k[1] for k in kept], -1).expand_as(lg)
            strict = (yy - 0.5).abs() > 1e-6
            right = ((lg > 0) == (yy > 0.5))[strict]
            epoch_metrics = {
                "train_loss": train_loss.mean().item(),
                "train_accuracy": right.float().mean().item() if right.numel() else float("nan"),
            }
            if len(val_idx):
                val_loss_e, vm = self._validate(feats, pairs[val_idx], labels[val_idx])
                epoch_metrics.update({f"val_{k}": v for k, v in vm.items()})
                if c.adaptive_l2:
                    ratio = val_loss_e / train_loss.clamp_min(1e-8)
                    lo, hi = c.l2_band
                    self.l2 = torch.where(ratio > hi, self.l2 * c.l2_factor, self.l2)
                    self.l2 = torch.where(ratio < lo, self.l2 / c.l2_factor, self.l2)
                    self.l2.clamp_(1e-8, 10.0)
            loss_sum.zero_()
            kept.clear()
            seen = 0
        net.eval()
        self.global_step += total_steps
        self.calls += 1
        wall = time.perf_counter() - t0
        metrics = {
            **epoch_metrics,
            "l2_coef": self.l2.mean().item(),
            "pairs": float(len(dataset)),
            "epochs": float(total_epochs),
            "steps": float(total_steps),
            "wall_s": wall,
            "comparisons_per_s": total_steps * b / wall,
            **(filtered if c.noise_filter else {}),
            **({"pseudo_label_frac": (pseudo[1] / pseudo[0].clamp_min(1)).item()} if pseudo_on else {}),
            **({} if self.trust.accuracy is None else {"fresh_accuracy": self.trust.accuracy}),
            **({"fresh_hits": float(fresh_hits), "fresh_n": float(fresh_n)} if fresh_n else {}),
            **({"pseudo_trusted": float(pseudo_ok)} if c.pseudo_label_ratio > 0 else {}),
            **({"filter_trusted": float(filter_ok)} if c.noise_filter else {}),
        }
        if dataset.fragments.table_rews is not None:
            true = torch.as_tensor(dataset.fragments.returns(c.discount), device=dev)
            true_logits = true[pairs[:, 0]] - true[pairs[:, 1]]
            metrics["true_reward_loss"] = preference_loss(true_logits, dataset_labels, c.error_rate).item()
        self.logger.log(metrics, self.global_step)
        return metrics

    def _unlabelled_features(self, unlabelled: Fragments | None, length: int) -> Features | None:
        """Encoded unlabelled clips ``[Nu, L, ...]`` when pseudo-labelling is on and there are 2+."""
        if self.config.pseudo_label_ratio <= 0 or unlabelled is None or len(unlabelled) < 2:
            return None
        if unlabelled.length != length:
            raise ValueError(f"unlabelled clips have length {unlabelled.length}, the dataset's {length}")
        return encode_fragments(self.net, unlabelled)

    def _pseudo_loss(self, feats: Features, n: int, tally: torch.Tensor) -> torch.Tensor:
        """Loss on ``n`` random pairs of unlabelled clips that the ensemble is sure about,
        labelled with the side it prefers (summed over members, as the labelled loss)."""
        c, net = self.config, self.net
        n_clips = int(next(iter(feats.values())).shape[0]) if isinstance(feats, dict) else int(feats.shape[0])
        first = torch.randint(0, n_clips, (n,), generator=self.generator)
        second = (first + torch.randint(1, n_clips, (n,), generator=self.generator)) % n_clips  # never itself
        pairs = torch.stack([first, second], 1).to(net.device)  # [n, 2]
        rews = net.score(gather(feats, pairs))  # [E, n, 2, L]
        if c.crop_min_frac < 1.0:
            rews = rews * self._crop_mask(torch.Size([n]), rews.shape[-1], net.device)
        logits = preference_logits(rews, c.discount)  # [E, n]
        with torch.no_grad():  # sure: ensemble-mean P(one side) >= threshold, compared as logits
            mean = logits.mean(0)  # [n]
            t = c.pseudo_label_threshold
            sure = (mean.abs() >= (math.log(t / (1 - t)) if t < 1 else math.inf)).float()
            y = (mean > 0).float()
        tally[0] += n
        tally[1] += sure.sum()
        loss = preference_loss(logits, y, 0.0, reduction="none")  # [E, n]
        return ((loss * sure).sum(-1) / sure.sum().clamp_min(1.0)).sum()

    def _crop_mask(self, batch_shape: torch.Size, length: int, dev: torch.device) -> torch.Tensor:
        """``[*batch_shape, 2, L]`` 0/1 windows: one length in [crop_min_frac * L, L] per pair,
        a start per clip (the two windows are of equal length, so their sums compare)."""
        lo = max(1, math.ceil(self.config.crop_min_frac * length))
        n = int(np.prod(batch_shape))
        size = torch.randint(lo, length + 1, (n, 1, 1), generator=self.generator)
        start = (torch.rand(n, 2, 1, generator=self.generator) * (length - size + 1)).long()
        t = torch.arange(length).view(1, 1, length)
        mask = (t >= start) & (t < start + size)  # [n, 2, L]
        return mask.to(dev, torch.float32).view(*batch_shape, 2, length)

    @torch.no_grad()
    def _filter_noise(
        self, feats: Features, pairs: torch.Tensor, labels: torch.Tensor, train_idx: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:
        """(labels with confident contradictions flipped ``[N]``, weights 0 for those left out
        ``[N]``, counts): by the ensemble-mean probability it gives each training label."""
        c = self.config
        p = (
            torch.cat(
                [
                    torch.sigmoid(
                        preference_logits(self.net.score(gather(feats, pairs[chunk])), c.discount).mean(0)
                    )
                    for chunk in train_idx.split(max(1, c.batch_size * 8))
                ]
            )
            if len(train_idx)
            else torch.zeros(0, device=labels.device)
        )
        y = labels[train_idx]
        strict = (y - 0.5).abs() > 0.25  # a preference, not a tie
        p_label = torch.where(y > 0.5, p, 1 - p)  # [n] the probability the model gives the label
        flip = strict & (p_label < c.noise_flip_below)
        drop = strict & (p_label < c.noise_drop_below) & ~flip
        new_labels, weight = labels.clone(), torch.ones_like(labels)
        new_labels[train_idx[flip]] = 1.0 - y[flip]
        weight[train_idx[drop]] = 0.0
        return new_labels, weight, {"noise_dropped": float(drop.sum()), "noise_flipped": float(flip.sum())}

    @torch.no_grad()
    def _validate(
        self, feats: Features, pairs: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Per-member validation loss ``[E]`` and ensemble-mean metrics."""
        logits = preference_logits(self.net.score(gather(feats, pairs)), self.config.discount)
        per_member = preference_loss(logits, labels, self.config.error_rate, "none").mean(-1)
        return per_member, preference_metrics(logits.mean(0), labels, self.config.error_rate)


@torch.no_grad()
def smooth_labels(labels: torch.Tensor, smoothing: float) -> torch.Tensor:
    """``[...]`` labels moved towards a tie: ``(1 - smoothing) * labels + smoothing / 2``."""
    return labels if smoothing == 0.0 else labels * (1.0 - smoothing) + smoothing / 2


@torch.no_grad()  # scoring only: no autograd graph kept per chunk (tens of GB for image rewards)
def evaluate_preferences(
    net: RewardNet,
    fragments: Fragments,
    pairs: np.ndarray,
    labels: np.ndarray,
    discount: float = 1.0,
    error_rate: float = 0.0,
    batch_size: int = 4096,
) -> dict[str, float]:
    """Held-out metrics (loss, accuracy, ties) of the ensemble-mean model on labelled pairs.

    Pairs are scored ``batch_size`` at a time, fewer for large observations (images), so
    memory stays bounded (see :func:`~prefrl.rewards.encode.fragments_per_chunk`).
    """
    pairs = np.asarray(pairs)
    batch_size = max(1, min(batch_size, fragments_per_chunk(net, fragments, 2 * batch_size) // 2))
    logits = []
    for s in range(0, len(pairs), batch_size):
        p = pairs[s : s + batch_size]
        used, inv = np.unique(p, return_inverse=True)
        feats = encode_fragments(net, fragments, used)
        rews = net.score(gather(feats, torch.as_tensor(inv.reshape(-1, 2), device=net.device)))
        logits.append(preference_logits(rews, discount).mean(0))
    y = torch.as_tensor(np.asarray(labels, dtype=np.float32), device=net.device)
    return preference_metrics(torch.cat(logits), y, error_rate)


def true_pair_accuracy(
    net: RewardNet, batch: TrajectoryBatch, n_pairs: int, length: int, rng: np.random.Generator
) -> float | None:
    """Held-out accuracy: ``n_pairs`` fresh clip pairs of ``batch`` ranked by their true return.

    The one accuracy prefrl reports wherever the environment has a reward (progress bar,
    ``metrics.csv``'s ``reward/heldout_accuracy``, the run report, ``prefrl interpret``).
    Clips are ``length`` steps (shortened to the longest episode); only strict preferences
    count. ``None`` when ``batch`` has no true reward, no clip fits, or every pair ties.
    """
    if batch.rews is None or not len(batch):
        return None
    length = min(length, int(batch.lengths.max()))
    if length < 1 or window_counts(batch, length).sum() == 0:
        return None
    frags, _ = sample_fragments(batch, 2 * n_pairs, length, rng)
    pairs = random_pairs(len(frags), n_pairs, rng)
    labels = SyntheticTeacher("oracle").label(frags, pairs)
    acc = float(evaluate_preferences(net, frags, pairs, labels)["accuracy"])
    return acc if math.isfinite(acc) else None
