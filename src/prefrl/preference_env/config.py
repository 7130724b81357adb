"""Configuration of :class:`~prefrl.preference_env.wrappers.PreferenceEnv`."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Literal

from prefrl.preference.trainer import RewardTrainerConfig
from prefrl.teachers.spec import check_teacher_spec

Mode = Literal["online", "collect", "train", "pretrained"]
MODES = ("online", "collect", "train", "pretrained")

RENAMED_OPTIONS = {
    "segment_length": "fragment_length",
    "max_preferences": "total_labels",
    "max_preferences_kept": "max_labels_kept",
    "min_preferences": "min_labels",
    "pairs_per_segment": "pairs_per_fragment",
}
"""Old option names (the training loop's names replaced them) -> new ones. The wrappers'
keyword options still accept the old names, with a ``DeprecationWarning``, until the next release."""


@dataclass(frozen=True)
class PreferenceEnvConfig:
    """How the preference wrapper records, labels, trains and rewards."""

    mode: Mode = "online"
    """``online``: label segments and train the reward model at once; ``collect``: only
    record and label segments (save them with ``save_preferences``); ``train``: train only
    on ``preferences_path``; ``pretrained``: only use the model at ``reward_path``."""
    fragment_length: int = 50
    """``L``: transitions per recorded clip (the fragments that are compared; the training
    loop's default). A clip cut short by the end of an episode is discarded: keep ``L`` below
    the episode length."""
    teacher: Any = "oracle"
    """A synthetic teacher preset (``"oracle"``, ``"noisy"``, ``"mistake"``, ``"skip"``,
    ``"myopic"``, ``"equal"``), ``"store:PATH_OR_URL"`` for people labelling in the web app,
    or a (picklable) ``Teacher`` / ``AsyncTeacher`` object."""
    learned_after: int = 200
    """Return the learned reward once the reward model has had this many training steps
    (true reward until then). ``pretrained`` mode ignores it."""
    preferences_path: str | None = None
    """A saved preference set (``.npz``) to start from; required in ``train`` mode."""
    reward_path: str | None = None
    """A saved reward model (``.safetensors``) to start from; required in ``pretrained`` mode."""
    record: Literal["obs", "frames"] = "obs"
    """What the reward model sees: observations, or ``env.render()`` frames (needs
    ``render_mode="rgb_array"``), in both cases after ``obs_transform``."""
    record_frames: bool | None = None
    """Keep rendered frames in segments for people to watch; ``None``: when the teacher is
    a human one (``"store:..."``)."""
    normalize: bool = True
    """Return the learned reward normalised to zero mean, unit std over the preference set."""
    queue_size: int = 64
    """Finished segments waiting for the labeller; more are dropped (counted). The shared
    segment ring holds ``queue_size + num_envs`` segments (at most 4096 waiting)."""
    pairs_per_fragment: float = 1.0
    """Comparisons asked per finished clip (each pairs it with a recent one; fractions allowed)."""
    pool_size: int = 64
    """Recent clips the labeller pairs new ones with."""
    total_labels: int | None = None
    """Stop asking the teacher after this many comparisons (a label budget; ``None``: no budget)."""
    max_labels_kept: int | None = 3000
    """Train on at most this many of the newest labels."""
    min_labels: int = 10
    """Labels needed before reward training starts."""
    trainer: RewardTrainerConfig = field(default_factory=RewardTrainerConfig)
    """Reward training settings. Training runs in rounds of ``trainer.epochs`` epochs over the
    labels there are (rounds repeat while the env steps); the weights are published after
    every round, so fewer epochs per round means more frequent, smaller updates."""
    max_train_steps: int | None = None
    """Stop reward training after this many steps (``None``: train as long as the env runs)."""
    train_pause_s: float = 0.05
    """Pause between training rounds, leaving CPU to the agent."""
    checkpoint_dir: str | None = None
    """Where reward checkpoints go (``reward_<step>.safetensors`` and ``reward_latest``)."""
    checkpoint_every: int = 0
    """Write a checkpoint every this many reward training steps (0: never)."""
    run: str = "preference-env"
    """Run name (the human query store groups queries by it)."""
    seed: int = 0
    """Seed of pairing and of synthetic teachers."""
    start_method: str | None = None
    """``multiprocessing`` start method: ``forkserver`` (default on POSIX) or ``spawn``."""
    niceness: int = 5
    """Priority of the labeller and trainer: 0 to 19 is a ``nice`` level; 20 is Linux's
    idle class (``SCHED_IDLE``; nice 19 elsewhere): they then use only CPU time nothing
    else wants, which is the fastest setting for the env on a small machine, but starves
    reward learning when the agent's own threads keep every core busy (PyTorch's default
    thread pool spins between operations: use ``torch.set_num_threads(1)`` there)."""
    reward_process: bool | None = None
    """Compute the per-step learned reward in a *rewarder* process of normal priority,
    overlapped with the wrapped env's own step (only for reward models that read just the
    observation and action, as the defaults do). ``None``: for a CNN reward (an MLP's pass
    costs less than the hand-off) on 4 or more vector envs when a CPU is free for it: 4 or
    more CPUs, or 2 or more with ``niceness=20`` (with the labeller and trainer at
    normal-class priority on 2 CPUs the rewarder waits for a CPU, which was measured slower)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.fragment_length < 1:
            raise ValueError(f"fragment_length must be >= 1, got {self.fragment_length}")
        if self.mode == "train" and self.preferences_path is None:
            raise ValueError("mode='train' trains on a saved preference set: give preferences_path")
        if self.mode == "pretrained" and self.reward_path is None:
            raise ValueError("mode='pretrained' uses a saved reward model: give reward_path")
        check_teacher_spec(self.teacher)
        if self.teacher == "terminal":
            raise ValueError(
                "teacher 'terminal' cannot label for the wrapper: its labeller is a background process "
                "without a terminal; use 'store:PATH_OR_URL' and the web app"
            )
        if self.record not in ("obs", "frames"):
            raise ValueError(f"record must be 'obs' or 'frames', got {self.record!r}")
        if not 1 <= self.queue_size <= 4096:
            raise ValueError(f"queue_size must lie in [1, 4096], got {self.queue_size}")
        if self.learned_after < 0:
            raise ValueError(f"learned_after must be >= 0, got {self.learned_after}")
        if not 0 <= self.niceness <= 20:
            raise ValueError(f"niceness must lie in [0, 20], got {self.niceness}")
        if self.start_method not in (None, "spawn", "forkserver"):
            raise ValueError(f"start_method must be 'spawn' or 'forkserver', got {self.start_method!r}")

    @property
    def labels(self) -> bool:
        """Whether clips are recorded and labelled."""
        return self.mode in ("online", "collect")

    @property
    def trains(self) -> bool:
        return self.mode in ("online", "train")

    @property
    def wants_frames(self) -> bool:
        if self.record_frames is not None:
            return self.record_frames
        return isinstance(self.teacher, str) and self.teacher.startswith("store:")

    def context_method(self) -> str:
        if self.start_method is not None:
            return self.start_method
        return "spawn" if sys.platform == "win32" else "forkserver"
