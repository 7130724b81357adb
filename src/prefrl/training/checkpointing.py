"""A :class:`~prefrl.training.loop.PreferenceLoop`'s checkpoints, composed of its stages' states
(the files themselves: :mod:`prefrl.storage.checkpoint`).

Each stage owns its part: the labels (queries asked, labels not yet fitted), the clips (clip
length, the loop's random generator, the archive of older episodes), the reward signal
(normaliser), the agent (environment steps; its policy and replay buffer files), the restore
action's kept policies and the reward fit (network, trainer state, torch's RNG); the loop adds
where it is (iteration, history, evaluations, wall time) and its config hash. ``state.json``
holds the stages' states side by side, each under keys of its own, as version 1 of the format
always has. Labels given after a checkpoint (``RUN/preferences.npz`` and the labels state) are
newer than it and win on resume: no label is lost and none is asked again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from prefrl.storage.checkpoint import CheckpointDir
from prefrl.training.agent_reward import AgentReward, AgentRewardState
from prefrl.training.agent_step import AgentLoader, AgentStep
from prefrl.training.clips import Clips
from prefrl.training.labels import Labels, LabelsState
from prefrl.training.restore import AgentRestore
from prefrl.training.reward_fit import RewardFit


class ProgressState(TypedDict):
    """The loop's own part of a checkpoint (``state.json``)."""

    iteration: int
    wall_s: float
    history: list[dict[str, float]]
    evaluations: list[tuple[int, float]]


@dataclass
class LoopProgress:
    """Where the loop itself is: iterations done, training time, metrics and evaluations so far."""

    iteration: int = 0
    wall_s: float = 0.0
    history: list[dict[str, float]] = field(default_factory=list)
    evaluations: list[tuple[int, float]] = field(default_factory=list)
    """``(env_steps, mean true return)`` of each periodic evaluation (``eval_interval``)."""

    def state_dict(self) -> ProgressState:
        return {"iteration": self.iteration, "wall_s": self.wall_s, "history": self.history,
                "evaluations": self.evaluations}  # fmt: skip

    def load_state_dict(self, state: ProgressState) -> None:
        self.iteration, self.wall_s = int(state["iteration"]), float(state["wall_s"])
        self.history = list(state["history"])
        self.evaluations = [(int(t), float(r)) for t, r in state.get("evaluations", [])]


@dataclass
class LoopCheckpoint:
    """Saves and restores a loop's stages in ``run_dir``'s checkpoints (``config_hash``: the run's
    config, which a checkpoint must match). ``reward`` is ``None`` without a learned reward for an
    agent (offline)."""

    run_dir: Path
    config_hash: str
    progress: LoopProgress
    labels: Labels
    clips: Clips
    fit: RewardFit
    agent_step: AgentStep
    reward: AgentReward | None
    restore: AgentRestore | None = None

    @property
    def dir(self) -> CheckpointDir:
        return CheckpointDir(self.run_dir)

    def save(self) -> Path:
        """Write a complete resumable checkpoint of the current iteration (the files:
        :mod:`prefrl.storage.checkpoint`)."""
        path = self.dir.begin(self.progress.iteration)
        self.fit.save_files(path, self.labels.dataset)
        self.agent_step.save_files(path)
        self.clips.save_files(path)
        if self.restore is not None:
            self.restore.save_files(path)
        reward: AgentRewardState = {"normalizer": None} if self.reward is None else self.reward.state_dict()
        parts: list[Mapping[str, Any]] = [self.progress.state_dict(), {"config_hash": self.config_hash},
                                          self.labels.state_dict(), self.clips.state_dict(),
                                          self.agent_step.state_dict(), reward]  # fmt: skip
        state: dict[str, Any] = {}
        for part in parts:  # side by side: no stage may write another's key
            if clash := state.keys() & part.keys():
                raise RuntimeError(f"two stages write the checkpoint fields {sorted(clash)}")
            state.update(part)
        self.dir.commit(path, state)
        return path

    def load(self, agent_loader: AgentLoader | None = None) -> bool:
        """Restore the latest checkpoint (returns False when there is none: killed during the first
        iteration, the run starts over with the labels given so far).

        ``agent_loader(path) -> agent`` rebuilds the SB3 agent from ``policy.zip`` on the
        same env stack. Labels saved after the checkpoint (``RUN/preferences.npz``) are kept.
        """
        ckpt = self.dir
        path = ckpt.latest()
        if path is None:
            self._labels_resumed(None, None)
            return False
        state: Any = ckpt.read_state(path)  # JSON: each stage reads its own fields
        if self.config_hash and state.get("config_hash") not in ("", self.config_hash):
            raise ValueError(f"{path}: this checkpoint was written by a run with a different config")
        if self.agent_step.agent is not None:  # first: a policy or buffer that fails to load changes no file
            self.agent_step.load_files(path, agent_loader)
            if self.restore is not None:
                self.restore.load_files(path, self.agent_step.agent)
            if self.reward is not None:
                self.reward.load_state_dict(state)
        self.fit.load_files(path)
        self.clips.load_files(path)
        if self.reward is not None:
            self.reward.refresh()
        self.progress.load_state_dict(state)
        self.agent_step.load_state_dict(state)
        self.clips.load_state_dict(state)
        self._labels_resumed(state, path)
        return True

    def _labels_resumed(self, state: LabelsState | None, path: Path | None) -> None:
        length = self.labels.resume(state, path)
        if length is not None:  # clips as long as the labels'
            self.clips.length = length
