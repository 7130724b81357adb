"""The reward stage of :class:`~prefrl.training.loop.PreferenceLoop`: fit the reward to the labels.

:class:`RewardFit` drives the fitter of :mod:`prefrl.preference` (``initial_epoch_multiplier``
times longer the first time; a REED reward's encoder first trains on its self-predictive
objective, :mod:`prefrl.training.representation`; SURF's pseudo-labels get unlabelled clips of
the iteration's episodes), measures the current reward on each iteration's episodes before it
trains on them (``reward/pearson_true``, ``reward/heldout_accuracy``), and saves it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from prefrl.agents.protocols import Agent
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments, sample_fragments
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference.trainer import RewardTrainer, true_pair_accuracy
from prefrl.rewards.encode import batch_rewards
from prefrl.rewards.io import save_reward_net
from prefrl.rewards.nets import RewardNet
from prefrl.seeding import stream
from prefrl.storage.checkpoint import load_learner, save_learner
from prefrl.training.config import HELDOUT_PAIRS, UNLABELLED_CLIPS, LoopConfig
from prefrl.training.representation import SelfPrediction


class RewardFit:
    """Fits, measures and saves the reward (see the module docstring).

    Args:
        net: the reward model being learned.
        trainer: fits ``net`` (built on the same network).
        config: the loop's schedule (first-fit multiplier, seed).
        run_dir: where ``reward.safetensors`` goes after each fit (``None``: nowhere).

    State (:meth:`state_dict`): the trainer's (optimiser, generator, calls) and REED's encoder trainer's.
    """

    def __init__(
        self, net: RewardNet, trainer: RewardTrainer, config: LoopConfig, run_dir: Path | None
    ) -> None:
        self.net, self.trainer, self.config = net, trainer, config
        self.representation = SelfPrediction.for_loop(net, trainer.config)  # REED's encoder, else None
        self.path = None if run_dir is None else run_dir / "reward.safetensors"

    def due(self, labels: int, fresh: int) -> bool:
        """Whether to fit now: there are ``labels``, ``fresh`` of them new, or none fitted yet."""
        return labels > 0 and (fresh > 0 or self.trainer.calls == 0)

    def fit(
        self, dataset: PreferenceDataset, batch: TrajectoryBatch, agent: Agent | None, iteration: int
    ) -> dict[str, float]:
        """Fit the reward to ``dataset`` at ``iteration`` (REED's encoder first, on ``batch`` and
        ``agent``'s replay buffer); returns the metrics as ``reward/*``."""
        mult = self.config.initial_epoch_multiplier if self.trainer.calls == 0 else 1.0
        m: dict[str, float] = {}
        if self.representation is not None:  # REED: the encoder learns the dynamics first
            m.update(self.representation.update(batch, agent, mult))
        unlabelled = self.unlabelled(batch, dataset.fragments, iteration)
        rm = self.trainer.train(dataset, epoch_multiplier=mult, unlabelled=unlabelled)
        m.update({f"reward/{k}": v for k, v in rm.items()})
        return m

    def refit(self, dataset: PreferenceDataset, agent: Agent | None) -> None:
        """Fit once more on the answers that came after training (no new episodes: REED's
        encoder on the replay buffer only)."""
        if self.representation is not None:
            self.representation.update(None, agent)
        self.trainer.train(dataset)

    def unlabelled(
        self, batch: TrajectoryBatch, labelled: Fragments | None, iteration: int
    ) -> Fragments | None:
        """Unlabelled clips of ``batch`` (as long as the ``labelled`` ones) for the trainer's
        pseudo-labels (SURF), when it uses them: up to :data:`UNLABELLED_CLIPS`, drawn on a
        stream of their own."""
        if self.trainer.config.pseudo_label_ratio <= 0 or labelled is None or not batch.num_steps:
            return None
        rng = stream(self.config.seed, "pseudo_labels", iteration)
        clips, _ = sample_fragments(batch, UNLABELLED_CLIPS, labelled.length, rng, replace=None)
        return clips if len(clips) >= 2 else None

    def measure(self, batch: TrajectoryBatch, iteration: int, length: int) -> dict[str, float]:
        """How well the current reward explains ``batch``'s true reward, before it trains on it.

        ``reward/pearson_true``: Pearson correlation of learned vs true per-step reward.
        ``reward/heldout_accuracy``: accuracy on :data:`HELDOUT_PAIRS` fresh clip pairs of
        ``length`` steps of ``batch`` ranked by their true return (strict preferences only);
        none of these clips has been labelled yet, so this is the held-out figure the progress
        bar shows.
        """
        if self.trainer.calls == 0 or batch.rews is None:
            return {}
        rng = stream(self.config.seed, "heldout", iteration)  # not the loop's stream
        acc = true_pair_accuracy(self.net, batch, HELDOUT_PAIRS, length, rng)
        out = {} if acc is None else {"reward/heldout_accuracy": acc}
        rows = batch.step_rows
        learned = batch_rewards(self.net, lambda *t: self.net.predict(*t)[0], batch, rows)
        true = batch.rews[rows]
        if len(rows) < 2 or np.std(learned) == 0 or np.std(true) == 0:
            return out
        return {**out, "reward/pearson_true": float(np.corrcoef(learned, true)[0, 1])}

    # ------------------------------------------------------------------ saving
    def save(self) -> None:
        """``RUN/reward.safetensors``: the reward now."""
        if self.path is not None:
            save_reward_net(self.net, self.path)

    def state_dict(self) -> dict[str, Any]:
        """The trainer's state (tensors and numbers), REED's encoder trainer's under ``self_predictive``."""
        state = self.trainer.state_dict()
        if self.representation is not None:  # REED's encoder trainer: its Adam moments and draws
            state["self_predictive"] = self.representation.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.trainer.load_state_dict(state)
        if self.representation is not None and "self_predictive" in state:
            self.representation.load_state_dict(state["self_predictive"])

    def save_files(self, path: Path, dataset: PreferenceDataset) -> None:
        """The reward side of the checkpoint directory ``path``: the network, this stage's state
        with torch's RNG, and the labels at this point (:func:`~prefrl.storage.checkpoint.save_learner`)."""
        save_learner(path, self.net, self.state_dict(), dataset)

    def load_files(self, path: Path) -> None:
        """The network's weights, torch's RNG and this stage's state from the checkpoint ``path``."""
        self.load_state_dict(load_learner(path, self.net))
