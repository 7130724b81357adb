"""Learn a reward from preferences inside any RL library: a Gymnasium wrapper.

:class:`PreferenceEnv` (one env) and :class:`PreferenceVectorEnv` (``gymnasium.vector``,
sync or async) record what the reward model sees into clips of ``fragment_length``
transitions. Finished clips go to a background *labeller* process that pairs them and
asks a teacher (synthetic, or people through the query store and web app); a background
*trainer* process fits the reward model on the growing preference set and publishes new
weights through shared memory. ``step()`` returns the true reward until the reward model
has had ``learned_after`` training steps, then the learned one (normalised); the true
reward is always in ``info["true_reward"]``.

Modes (``PreferenceEnvConfig.mode``): ``online`` (label and train at once), ``collect``
(label only; ``save_preferences`` then train later), ``train`` (train only on a saved set),
``pretrained`` (only use a saved reward model, no background processes).
"""

from __future__ import annotations

import dataclasses
import warnings
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from prefrl.envs.headless import choose_headless_renderers
from prefrl.preference_env.config import RENAMED_OPTIONS, PreferenceEnvConfig
from prefrl.preference_env.env_process import ObsTransform, PreferenceCore
from prefrl.rewards.nets import RewardNet


def make_config(config: PreferenceEnvConfig | None, overrides: Mapping[str, object]) -> PreferenceEnvConfig:
    """``config`` (or the defaults) with keyword overrides, validated.

    Old option names (:data:`~prefrl.preference_env.config.RENAMED_OPTIONS`, e.g.
    ``segment_length``) are mapped to the new ones with a ``DeprecationWarning``.
    """
    fields: dict[str, Any] = dict(overrides)  # values of the config's fields, which checks them
    for old, new in RENAMED_OPTIONS.items():
        if old not in fields:
            continue
        if new in fields:
            raise TypeError(f"give {new!r} or its old name {old!r}, not both")
        warnings.warn(
            f"PreferenceEnv option {old!r} is now {new!r}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=3,
        )
        fields[new] = fields.pop(old)
    base = config if config is not None else PreferenceEnvConfig()
    names = {f.name for f in dataclasses.fields(PreferenceEnvConfig)}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise TypeError(f"unknown PreferenceEnvConfig option(s) {unknown}; valid: {sorted(names)}")
    return dataclasses.replace(base, **fields)


class _Controls:
    """Switches, metrics and saving shared by the single and vector wrappers."""

    _core: PreferenceCore
    config: PreferenceEnvConfig

    def use_true_reward(self) -> None:
        """Return the true reward from now on (until :meth:`use_learned_reward`)."""
        self._core.forced = "true"

    def use_learned_reward(self) -> None:
        """Return the learned reward from now on, whatever the training progress."""
        if self._core.net is None or self._core.runtime is None:
            raise RuntimeError("no reward model yet: reset the environment first")
        self._core.forced = "learned"

    def use_automatic_reward(self) -> None:
        """Undo the switches: true reward until ``learned_after`` training steps, then learned."""
        self._core.forced = None

    @property
    def learned_reward_active(self) -> bool:
        """Whether ``step()`` currently returns the learned reward."""
        return self._core.learned_active

    @property
    def reward_source(self) -> str:
        """``"learned"`` or ``"true"``."""
        return "learned" if self._core.learned_active else "true"

    @property
    def reward_net(self) -> RewardNet | None:
        """The environment process's copy of the reward model (latest published weights)."""
        return self._core.net

    def metrics(self) -> dict[str, int | str]:
        """Counters: segments (clips) recorded / sent / dropped, preferences, training steps, ..."""
        self._core.poll()
        return self._core.metrics()

    def background_pids(self) -> dict[str, int]:
        """Process ids of the running background processes by role: ``"labeller"``, ``"trainer"``
        and ``"rewarder"``, as the mode and ``reward_process`` start them.

        Empty before the first ``reset()`` (which starts them), after ``close()``, and in
        ``pretrained`` mode. For watching them (``ps``, ``psutil``); the wrapper manages them.
        """
        rt = self._core.runtime
        return {} if rt is None else rt.pids()

    def save_preferences(self, path: str | Path, val_fraction: float | None = 0.1) -> list[Path]:
        """Write the preference set to ``path`` (``.npz``, see ``PreferenceDataset.load``).

        With ``val_fraction``, also writes ``<stem>.train.npz`` and ``<stem>.val.npz`` split
        by the dataset's stable validation split. Returns the paths written. The background
        trainer writes them between two rounds of its fit, so this waits for the round under way
        (on a busy machine with image clips, minutes); it raises only if the trainer dies.
        """
        return [Path(p) for p in self._core.save_preferences(str(path), val_fraction)]

    def _close_core(self) -> None:
        self._finalizer()  # type: ignore[attr-defined]  # each wrapper sets it when it starts its core


class PreferenceEnv(_Controls, gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Learn a reward from preferences while any RL code steps this environment.

    Args:
        env: the environment to wrap.
        config: settings (:class:`PreferenceEnvConfig`); keyword ``overrides`` replace fields.
        reward_net: the reward model to train (default: ``CNNReward`` for uint8 images,
            ``MLPReward`` otherwise, built at the first ``reset``).
        obs_transform: maps a batch of observations (or frames) ``[1, ...]`` to reward
            inputs ``[1, ...]``, e.g. to crop or downsample; it runs in this process.

    Example:
        >>> import gymnasium as gym
        >>> import prefrl.envs.moving_dot
        >>> from prefrl.preference_env.wrappers import PreferenceEnv
        >>> env = PreferenceEnv(gym.make("prefrl/MovingDot-v0"), fragment_length=10, learned_after=20)
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        >>> env.reward_source, "true_reward" in info
        ('true', True)
        >>> env.close()
    """

    def __init__(
        self,
        env: gym.Env,
        config: PreferenceEnvConfig | None = None,
        *,
        reward_net: RewardNet | None = None,
        obs_transform: ObsTransform | None = None,
        **overrides: object,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self,
            _disable_deepcopy=False,  # (the default) named, so that no override is taken for it
            config=config,
            reward_net=reward_net,
            obs_transform=obs_transform,
            **overrides,
        )
        gym.Wrapper.__init__(self, env)
        self.config = make_config(config, overrides)
        c = self.config
        if (c.record == "frames" or c.wants_frames) and env.render_mode != "rgb_array":
            raise ValueError(
                f"record={c.record!r} / record_frames needs the env made with render_mode='rgb_array', "
                f"got {env.render_mode!r}"
            )
        if c.record == "frames" or c.wants_frames:
            choose_headless_renderers()  # before the first frame: pygame and MuJoCo tasks on a server
        self._core = PreferenceCore(1, env.action_space, c, reward_net, obs_transform)
        self._finalizer = weakref.finalize(self, self._core.close)

    def _inputs(self, obs: object) -> tuple[np.ndarray, np.ndarray | None]:
        c = self.config
        frames = None
        if c.record == "frames" or c.wants_frames:
            frames = np.asarray(self.env.render())[None]
        x = self._core.inputs(
            frames if c.record == "frames" and frames is not None else np.asarray(obs)[None]
        )
        return x, frames

    def reset(
        self, *, seed: int | None = None, options: dict[str, object] | None = None
    ) -> tuple[object, dict[str, object]]:
        obs, info = self.env.reset(seed=seed, options=options)
        x, frames = self._inputs(obs)
        self._core.on_reset(x, frames, np.zeros(1, np.int64))
        return obs, info

    def step(self, action: object) -> tuple[object, float, bool, bool, dict[str, object]]:
        self._core.begin(np.asarray(action)[None])
        obs, rew, terminated, truncated, info = self.env.step(action)
        x, frames = self._inputs(obs)
        out, learned = self._core.step(
            np.asarray(action)[None],
            x,
            np.array([rew], np.float64),
            np.array([terminated]),
            np.array([truncated]),
            frames,
            None,
        )
        info = dict(info)
        info["true_reward"] = float(rew)
        info["reward_source"] = "learned" if learned else "true"
        return obs, float(out[0]), bool(terminated), bool(truncated), info

    def close(self) -> None:
        self._close_core()
        super().close()


class PreferenceVectorEnv(_Controls, VectorWrapper):
    """:class:`PreferenceEnv` for ``gymnasium.vector`` environments (sync or async).

    One batched reward prediction per vector step. Supports the ``NEXT_STEP`` (default) and
    ``SAME_STEP`` autoreset modes; ``obs_transform`` maps ``[num_envs, ...]`` batches.
    ``infos["true_reward"]`` holds the true rewards ``[num_envs]``.

    Example:
        >>> import gymnasium as gym
        >>> import prefrl.envs.moving_dot
        >>> from prefrl.preference_env.wrappers import PreferenceVectorEnv
        >>> venv = gym.make_vec("prefrl/MovingDot-v0", num_envs=2, vectorization_mode="sync")
        >>> env = PreferenceVectorEnv(venv, fragment_length=10)
        >>> obs, info = env.reset(seed=0)
        >>> obs, rew, term, trunc, info = env.step(env.action_space.sample())
        >>> rew.shape, info["true_reward"].shape
        ((2,), (2,))
        >>> env.close()
    """

    def __init__(
        self,
        env: VectorEnv,
        config: PreferenceEnvConfig | None = None,
        *,
        reward_net: RewardNet | None = None,
        obs_transform: ObsTransform | None = None,
        **overrides: object,
    ) -> None:
        super().__init__(env)
        self.config = make_config(config, overrides)
        c = self.config
        self.autoreset = AutoresetMode(env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        if self.autoreset == AutoresetMode.DISABLED:
            raise ValueError("PreferenceVectorEnv supports the NEXT_STEP and SAME_STEP autoreset modes")
        if (c.record == "frames" or c.wants_frames) and env.render_mode != "rgb_array":
            raise ValueError("record='frames' / record_frames needs render_mode='rgb_array'")
        if c.record == "frames" or c.wants_frames:
            choose_headless_renderers()  # sync vector envs render here; async workers need it set first
        self._core = PreferenceCore(env.num_envs, env.single_action_space, c, reward_net, obs_transform)
        self._finalizer = weakref.finalize(self, self._core.close)
        self._needs_reset = np.zeros(env.num_envs, bool)

    def _inputs(self, obs: object) -> tuple[np.ndarray, np.ndarray | None]:
        c = self.config
        frames = None
        if c.record == "frames" or c.wants_frames:
            frames = np.stack(self.env.render())  # type: ignore[arg-type]  # a vector env renders a frame list
        return self._core.inputs(
            frames if c.record == "frames" and frames is not None else np.asarray(obs)
        ), frames

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, object] | None = None
    ) -> tuple[object, dict[str, object]]:
        obs, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]  # vector envs take a seed list too
        x, frames = self._inputs(obs)
        self._core.on_reset(x, frames, np.arange(self.num_envs))
        self._needs_reset[:] = False
        return obs, info

    def step(self, actions: object) -> tuple[object, np.ndarray, np.ndarray, np.ndarray, dict[str, object]]:
        self._core.begin(np.asarray(actions))
        obs, rews, terminated, truncated, infos = self.env.step(actions)
        x, frames = self._inputs(obs)
        acts = np.asarray(actions)
        rews64 = np.asarray(rews, np.float64)
        term, trunc = np.asarray(terminated, bool), np.asarray(truncated, bool)
        if self.autoreset == AutoresetMode.NEXT_STEP:
            reset_step = self._needs_reset
            self._needs_reset = term | trunc
            out, learned = self._core.step(acts, x, rews64, term, trunc, frames, reset_step)
        else:  # SAME_STEP: ended envs already show their reset obs; the final one is in infos
            done = np.flatnonzero(term | trunc)
            x_next = x.copy()
            if len(done):
                final = infos["final_obs"]
                if self.config.record == "obs":
                    x_next[done] = self._core.inputs(np.stack([final[i] for i in done]))
            out, learned = self._core.step(acts, x_next, rews64, term, trunc, frames, None)
            if len(done):
                self._core.on_reset(x, frames, done)
        infos = dict(infos)
        infos["true_reward"] = rews64 if rews64 is not rews else rews64.copy()
        infos["_true_reward"] = np.ones(self.num_envs, bool)
        infos["reward_source"] = "learned" if learned else "true"
        return obs, out, term, trunc, infos

    def close(self, **kwargs: object) -> None:
        self._close_core()
        super().close(**kwargs)
