"""The reward a finished run learned, for any Gymnasium training code.

A run directory (``prefrl train``) or its ``reward.safetensors`` file becomes a
:class:`~prefrl.agents.learned_reward.LearnedReward`, normalised as the run's agent saw it:

- :func:`load_learned_reward`: the reward itself (batched ``[*lead]`` rewards), a
  :class:`SavedReward` whose inference runs on one torch thread whatever the process uses;
- :func:`check_spaces`: whether it fits an environment.

The wrappers that put it into an environment (``from_run``, ``learned_reward_env`` and RL
Baselines3 Zoo's ``zoo_wrapper``) are in :mod:`prefrl.agents.learned_reward`.

The reward is measured from the absorbing state's (ending an episode is worth 0), without the
exploration bonus a run may have added while it learned. See docs/integrations.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from gymnasium import spaces

from prefrl.agents.reward_signal import LearnedReward
from prefrl.rewards.io import load_reward_net, read_reward_normalizer
from prefrl.rewards.nets import Array, RawBatch, RewardNet
from prefrl.storage.checkpoint import CheckpointDir, read_json
from prefrl.threads import check_threads, torch_threads

REWARD_FILE = "reward.safetensors"

Normalize = Literal["run", "running", "off"]
"""How the agent sees the reward. ``run``: divided (and, where the run centred it, shifted) by the
run's final statistics, frozen, which is what its agent saw at the end; where the run saved none (a
reward learned offline, a run from before they were saved, normalisation off) as ``running`` or
``off`` would. ``running``: scaled by a running root mean square, updated every step, from scratch.
``off``: the raw learned reward."""


class SavedReward(LearnedReward):
    """A finished run's :class:`LearnedReward` as other training code calls it, step by step: each
    call runs on ``threads`` torch threads (default 1), then gives the process its own count back.

    Per-step inference is a few small matrix products; a torch thread pool costs more in hand-offs
    than it saves, and on a loaded machine each parallel operation waits for a descheduled thread.
    The guard is per call, so the training code around it keeps its own threads (the agent's
    threads are the training code's to set: ``torch.set_num_threads(1)`` or ``OMP_NUM_THREADS=1``,
    see docs/integrations.md). ``threads=None`` leaves inference on the process's threads.
    """

    def __init__(
        self, net: RewardNet, normalize: bool = True, update_stats: bool = True, threads: int | None = 1
    ) -> None:
        super().__init__(net, normalize=normalize, update_stats=update_stats)
        self.threads = None if threads is None else check_threads(threads, "threads")

    def raw(self, obs: RawBatch, acts: Array, next_obs: RawBatch, dones: Array | None = None) -> np.ndarray:
        with torch_threads(self.threads):
            return super().raw(obs, acts, next_obs, dones)


def reward_file(source: str | Path) -> Path:
    """The reward file of ``source``: a run directory or one of its checkpoints
    (``RUN/checkpoints/iter_*``; their ``reward.safetensors``) or the file itself."""
    path = Path(source)
    if path.is_dir():
        if not (path / REWARD_FILE).exists():
            what = "a run directory" if (path / "config.json").exists() else "a directory"
            raise FileNotFoundError(
                f"{path} is {what} without a {REWARD_FILE}: a run writes it after its first reward "
                "update, so this one stopped before that or is not a prefrl run"
            )
        return path / REWARD_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such run directory or reward file")
    return path


def checkpoint_run(path: str | Path) -> Path | None:
    """The run directory of checkpoint directory ``path`` (``RUN/checkpoints/iter_*``), or ``None``
    where ``path`` is none."""
    path = Path(path)
    if path.parent.name == "checkpoints" and (path / "state.json").exists():
        return path.parent.parent
    return None


def saved_normalizer(path: Path) -> dict[str, object] | None:
    """How the run that wrote reward file ``path`` normalised its agent's reward:
    ``{"normalize": False}``, ``{"normalize": True, **statistics}``, or ``None`` (unknown).

    Runs save it in the reward file when they finish; for one that stopped before, the last
    checkpoint's statistics (``RUN/checkpoints/iter_*/state.json``) are taken, and for a
    checkpoint's own reward file (``RUN/checkpoints/iter_*/reward.safetensors``: the reward as the
    run had it then) that checkpoint's.
    """
    saved = read_reward_normalizer(path)
    if saved is not None:
        return saved
    run, at = path.parent, None
    if (of := checkpoint_run(run)) is not None:  # a checkpoint's reward: the run as it was then
        run, at = of, run
    if not (run / "config.json").exists():
        return None
    config = read_json(run / "config.json", "run config")
    if not config.get("loop", {}).get("normalize_reward", True):
        return {"normalize": False}
    ckpt = CheckpointDir(run)
    at = at or ckpt.latest()
    stats = None if at is None else ckpt.read_state(at).get("normalizer")
    return {"normalize": True, **stats} if isinstance(stats, dict) and stats else None


def load_learned_reward(
    source: str | Path, normalize: Normalize = "run", device: str = "cpu", threads: int | None = 1
) -> SavedReward:
    """The learned reward of a run directory or reward file ``source``, normalised per ``normalize``
    (see :data:`Normalize`); call it on a batch of transitions ``[*lead, ...]`` for
    ``(rewards, raw rewards)``, both ``[*lead]``. Each call runs on ``threads`` torch threads
    (``None``: the process's; see :class:`SavedReward`).

    Example:
        >>> import numpy as np, torch, tempfile
        >>> from gymnasium import spaces
        >>> from prefrl.rewards import MLPReward
        >>> from prefrl.rewards.io import save_reward_net
        >>> box = spaces.Box(-1, 1, (3,))
        >>> path = save_reward_net(MLPReward(box, box), tempfile.mkdtemp() + "/reward.safetensors",
        ...                        normalizer={"normalize": True, "mean": 0.0, "var": 4.0, "count": 10.0})
        >>> reward = load_learned_reward(path)
        >>> x = np.zeros((5, 3), np.float32)
        >>> rews, raw = reward(x, x, x)
        >>> rews.shape, bool(np.allclose(rews, raw / 2, atol=1e-3))
        ((5,), True)
    """
    if normalize not in ("run", "running", "off"):
        raise ValueError(f"normalize={normalize!r}: choose run, running or off")
    path = reward_file(source)
    net = load_reward_net(path, device).eval()
    reward = SavedReward(net, normalize=normalize != "off", update_stats=False, threads=threads)
    reward.configure(fast=True)  # per-step batches on the NumPy path
    if normalize == "run":
        saved = saved_normalizer(path)
        if saved is not None and not saved.get("normalize", True):
            reward.configure(normalize=False)
            return reward
        if saved is not None:
            reward.normalizer.load_state_dict(saved)
            return reward
    if reward.normalize:  # running statistics, scale only: ending an episode stays worth 0
        reward.configure(update_stats=True)
        reward.scale_only()
    return reward


def check_spaces(
    net: RewardNet, obs_space: spaces.Space[object], act_space: spaces.Space[object], source: object
) -> None:
    """Raise a clear error when the environment's spaces are not those the reward was learned on."""
    for what, want, got in (
        ("observation", net.observation_space, obs_space),
        ("action", net.action_space, act_space),
    ):
        if not _compatible(want, got):
            raise ValueError(
                f"the reward of {source} was learned on the {what} space {want}, but this environment "
                f"has {got}: wrap the environment as the run did (prefrl.agents.sb3.make_env builds "
                "its stack, e.g. FlattenBoxDict for dm_control tasks, Atari preprocessing)"
            )


def _compatible(a: spaces.Space[object], b: spaces.Space[object]) -> bool:
    """Same kind, shape and dtype (bounds may differ); Dict and Tuple spaces part by part."""
    if type(a) is not type(b):
        return False
    if isinstance(a, spaces.Dict) and isinstance(b, spaces.Dict):
        return a.keys() == b.keys() and all(_compatible(a[k], b[k]) for k in a.keys())
    if isinstance(a, spaces.Tuple) and isinstance(b, spaces.Tuple):
        return len(a) == len(b) and all(_compatible(x, y) for x, y in zip(a, b))
    if isinstance(a, spaces.Discrete) and isinstance(b, spaces.Discrete):
        return int(a.n) == int(b.n) and int(a.start) == int(b.start)
    return a.shape == b.shape and a.dtype == b.dtype
