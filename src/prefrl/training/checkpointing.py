"""A :class:`~prefrl.training.loop.PreferenceLoop`'s checkpoints: what a resumable checkpoint holds
and how a loop is put back from one (the files themselves: :mod:`prefrl.storage.checkpoint`).

A checkpoint holds the reward network, the trainer's and the loop's state (schedule position,
RNG, label counters, normaliser, evaluations), the labels, and with an agent its policy and
replay buffer. Labels given after it (``RUN/preferences.npz`` and the labels state) are newer
than any checkpoint and win on resume: no label is lost and none is asked again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefrl.agents.policy_io import save_agent
from prefrl.agents.sb3 import load_replay_buffer, save_replay_buffer
from prefrl.data.dataset import PreferenceDataset
from prefrl.storage.checkpoint import load_learner, save_learner


class LoopCheckpoint:
    """Saves and restores one loop (its ``ckpt``: a :class:`~prefrl.storage.checkpoint.CheckpointDir`)."""

    def __init__(self, loop: Any) -> None:
        self.loop = loop

    def save(self) -> Path:
        """Write a complete resumable checkpoint (see :mod:`prefrl.storage.checkpoint`)."""
        loop = self.loop
        assert loop.ckpt is not None and loop.run_dir is not None
        path = loop.ckpt.begin(loop.state.iteration)
        trainer_state = loop.trainer.state_dict()
        if loop.representation is not None:  # REED's encoder trainer: its Adam moments and draws
            trainer_state["self_predictive"] = loop.representation.state_dict()
        save_learner(path, loop.net, trainer_state, loop.dataset)
        if loop.agent is not None:
            save_agent(loop.agent, path / "policy.zip")
            if loop.off_policy:
                save_replay_buffer(loop.agent.replay_buffer, path / "replay_buffer.npz")
        s = loop.state
        state = {
            "iteration": s.iteration,
            "env_steps": s.env_steps,
            "queries_asked": s.queries_asked,
            "started": s.started,
            "wall_s": s.wall_s,
            "history": s.history,
            "evaluations": s.evaluations,
            "fragment_length": s.fragment_length,
            "rng": loop.rng.bit_generator.state,
            "config_hash": loop.config_hash,
            "labels_since_train": loop._labels_since_train,
            "normalizer": None if loop.reward is None else loop.reward.normalizer.state_dict(),
            "agent_num_timesteps": None if loop.agent is None else int(loop.agent.num_timesteps),
        }
        loop.ckpt.commit(path, state)
        return path

    def restore_labels(self, fallback: Path | None = None) -> None:
        """Every label given so far (``RUN/preferences.npz``, else ``fallback``), the count of
        queries asked and the current iteration's label counts (the labels state), which are
        newer than any checkpoint: no label is lost and none is asked again."""
        loop = self.loop
        assert loop.ckpt is not None and loop.run_dir is not None
        prefs = loop.run_dir / "preferences.npz"
        source = prefs if prefs.exists() else fallback
        if source is not None:
            loop.dataset = PreferenceDataset.load(source)
            loop.dataset.max_size = loop.config.max_labels_kept
            if loop.dataset.fragments is not None:  # clips may have been shortened to fit the episodes
                loop.state.fragment_length = loop.dataset.fragments.length
        labels_state = loop.ckpt.read_labels_state()
        if labels_state is not None:
            loop.state.queries_asked = max(loop.state.queries_asked, int(labels_state["queries_asked"]))
            kept = labels_state.get("iteration_labels", {})
            loop._iteration_labels = {k: float(v) for k, v in kept.items()}
        if loop.async_teacher is not None:  # it holds what was asked; take back answers not yet kept
            loop.state.queries_asked = int(loop.async_teacher.resume())
            loop._poll(all=True)
        loop.state.queries_asked = max(loop.state.queries_asked, len(loop.dataset))

    def load(self, agent_loader: Any = None) -> bool:
        """Restore the latest checkpoint of ``run_dir`` (returns False when there is none).

        ``agent_loader(path) -> agent`` rebuilds the SB3 agent from ``policy.zip`` on the
        same env stack. Labels saved after the checkpoint (``RUN/preferences.npz``) are kept.
        """
        loop = self.loop
        assert loop.ckpt is not None and loop.run_dir is not None
        path = loop.ckpt.latest()
        if path is None:  # killed during the first iteration: start over, with the labels given
            self.restore_labels()
            loop._labels_since_train = len(loop.dataset)
            return False
        state = loop.ckpt.read_state(path)
        if loop.config_hash and state.get("config_hash") not in ("", loop.config_hash):
            raise ValueError(f"{path}: this checkpoint was written by a run with a different config")
        if loop.agent is not None:  # first: a policy or buffer that fails to load leaves every file as it was
            if agent_loader is None:
                raise ValueError("resuming an agent run needs an agent_loader")
            loop.agent = agent_loader(path / "policy.zip")
            if loop.off_policy:
                load_replay_buffer(loop.agent.replay_buffer, path / "replay_buffer.npz")
            if loop.reward is not None and state.get("normalizer"):
                loop.reward.normalizer.load_state_dict(state["normalizer"])
        trainer_state = load_learner(path, loop.net)
        loop.trainer.load_state_dict(trainer_state)
        if loop.representation is not None and "self_predictive" in trainer_state:
            loop.representation.load_state_dict(trainer_state["self_predictive"])
        if loop.reward is not None:
            loop.reward.refresh()
        s = loop.state
        s.iteration, s.env_steps, s.started = (
            int(state["iteration"]),
            int(state["env_steps"]),
            bool(state["started"]),
        )
        s.wall_s, s.history = float(state["wall_s"]), list(state["history"])
        s.evaluations = [(int(t), float(r)) for t, r in state.get("evaluations", [])]
        s.fragment_length = int(state.get("fragment_length") or loop.config.fragment_length)  # older: none
        s.queries_asked = int(state["queries_asked"])
        self.restore_labels(fallback=path / "preferences.npz")
        loop.rng.bit_generator.state = state["rng"]
        n_ckpt = len(PreferenceDataset.load(path / "preferences.npz"))
        loop._labels_since_train = int(state.get("labels_since_train", 0)) + max(
            0, len(loop.dataset) - n_ckpt
        )
        return True
