"""A run's config, resolved once and only here: every ``auto`` choice made and every option
checked, before anything is built or written.

:func:`resolve_run` probes the run's environment once (:class:`EnvProbe`: its spaces and, where an
``auto`` option needs it, whether random actions reach a termination) and turns the config a
person gave (defaults, ``--config FILE``, flags, or a resumed run's ``config.json``) into the one
the run uses and writes to ``RUN/config.json``: the agent named by the action space, the reward's
output, inputs, CNN features and action heads, active selection, devices, the seeds of the loop
and the trainer, the run directory and the run's id (a ``--reward-from`` run: the environment of
the run it takes its reward from, the agent, devices and identity). It returns a new config
(configs are frozen) and the probe, from which :mod:`prefrl.run.train` and
:mod:`prefrl.run.reward_from` build the run's parts without making the environment again to learn
what the probe knows. What changes while a run goes (a clip length shortened to fit the episodes,
counters, generator states) is the loop's state, not its config.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces

from prefrl.agents.evaluate import DETERMINISTIC, SAMPLED
from prefrl.agents.saved_reward import checkpoint_run
from prefrl.agents.sb3 import (
    check_agent_space,
    check_env_id,
    discrete_on_images,
    make_env,
    resolve_algo,
    sb3_on_policy,
)
from prefrl.preference.trainer import FLAT_CNN_LR, LR
from prefrl.run.config import TrainConfig, config_from_dict
from prefrl.run.identity import new_run_id
from prefrl.seeding import stream_seed
from prefrl.storage.checkpoint import read_json
from prefrl.training.config import resolve_agent_reset, resolve_bonus, resolve_selection

PROBE_STEPS = 2000
"""At most this many random steps (``--loop.initial-steps`` if fewer) tell whether an environment's
random episodes terminate (:attr:`EnvProbe.terminates`)."""


@dataclass(frozen=True)
class EnvProbe:
    """What a run learns of its environment before it builds anything, from one instance made
    once (:func:`probe_env`) and then passed down."""

    obs_space: spaces.Space[object]
    act_space: spaces.Space[object]
    terminates: bool | None = None
    """Whether random actions reach a termination (a fall, a goal) within ``--loop.initial-steps``
    steps (at most :data:`PROBE_STEPS`) rather than only time limits; ``None`` where no ``auto``
    option asked (a resumed run, ``--reward-from``, every such option given)."""

    @property
    def evaluation(self) -> str:
        """How a policy is evaluated here, as :func:`~prefrl.agents.evaluate.evaluation_mode` says
        (``"sampled"``: discrete actions on images; else ``"deterministic"``)."""
        return SAMPLED if discrete_on_images(self.obs_space, self.act_space) else DETERMINISTIC


class Resolved(NamedTuple):
    """The config a run uses and the probe of its environment."""

    config: TrainConfig
    probe: EnvProbe


def needs_termination(cfg: TrainConfig) -> bool:
    """Whether resolving ``cfg`` needs to know if random episodes terminate: a fresh run with
    ``--reward.output auto``, or, with an agent, ``--loop.initial-steps-per-label``,
    ``--trainer.l2-init`` or ``--loop.exploration-bonus`` auto (a resumed run's config.json names
    what it used)."""
    if cfg.resume is not None or cfg.reward_from is not None:
        return False
    online = cfg.trajectory_path is None  # offline: no random steps, no agent
    auto_broad = cfg.loop.initial_steps_per_label is None or cfg.trainer.l2_init is None
    auto_broad = auto_broad or cfg.loop.exploration_bonus is None
    return cfg.reward.output == "auto" or (online and auto_broad)


def random_actions_terminate(env: gym.Env, cfg: TrainConfig) -> bool:
    """Whether random actions in ``env`` reach a termination within ``--loop.initial-steps``
    steps (at most :data:`PROBE_STEPS`), rather than only time limits."""
    from prefrl.agents.rollout import collect_episodes

    steps = max(1, min(cfg.loop.initial_steps, PROBE_STEPS))
    batch = collect_episodes(env, n_steps=steps, seed=stream_seed(cfg.seed, "reward_output"))
    return bool(np.any(batch.terminated))


def probe_env(cfg: TrainConfig) -> EnvProbe:
    """Make ``cfg``'s environment once and read what resolving and building the run need of it
    (a clear error for an unknown id or a missing optional dependency)."""
    check_env_id(cfg.env.id)
    env = make_env(cfg.env.id, cfg.env.parsed_kwargs())
    try:
        terminates = random_actions_terminate(env, cfg) if needs_termination(cfg) else None
        return EnvProbe(env.observation_space, env.action_space, terminates)
    finally:
        env.close()


def source_env(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with the environment of the ``--reward-from`` run (a run directory's config.json, or
    that of the run a checkpoint directory belongs to)."""
    assert cfg.reward_from is not None
    source = Path(cfg.reward_from)
    source = checkpoint_run(source) or source
    if source.is_dir() and (source / "config.json").exists():
        where = f"{source}/config.json"
        env = config_from_dict(read_json(source / "config.json", "run config"), where).env
        return dataclasses.replace(cfg, env=env)
    return cfg


# ------------------------------------------------------------------------ auto choices
def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; others checked to exist."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise ValueError(f"--device {device!r}: not a device (auto, cpu, cuda or cuda:N)") from e
    if dev.type == "cuda":
        n = torch.cuda.device_count()
        if n == 0:
            raise ValueError(f"--device {device}: no CUDA device is visible here (use --device cpu or auto)")
        if dev.index is not None and dev.index >= n:
            raise ValueError(f"--device {device}: only {n} CUDA device(s) (cuda:0 .. cuda:{n - 1})")
    elif dev.type != "cpu":
        raise ValueError(f"--device {device!r}: prefrl runs on cpu or cuda")
    return device


def resolve_reward_output(terminates: bool, flat_cnn: bool = False) -> Literal["linear", "tanh"]:
    """``--reward.output auto``: tanh where random actions reach a termination
    (:attr:`EnvProbe.terminates`), linear where they only meet time limits, and linear for a
    CNN reward over flat image features (``flat_cnn``) in any case.

    Measured (docs/benchmarks/label-efficiency.md): the bounded output fixed InvertedPendulum and
    Hopper and left CartPole, Acrobot and the double pendulum at the oracle's level; on
    HalfCheetah, which never terminates, the linear output scored higher. A flat CNN's head
    reads thousands of features that share a large part of their value from frame to frame
    (a game's background); Adam moves each of its weights by about the learning rate per step,
    so the output's level can move by tens within a few dozen steps, and a tanh output then
    saturates for good, every member's gradient gone (Pong's first reward at 3e-3: every frame
    paid exactly +1 or -1 after 40 steps). Its level is not pinned down by the labels, and a
    linear output is indifferent to it (docs/benchmarks/pixels.md).
    """
    return "tanh" if terminates and not flat_cnn else "linear"


STEPS_PER_LABEL, BROAD_L2 = 100, 0.01
"""A broad first reward (``--loop.initial-steps-per-label`` and ``--trainer.l2-init`` auto, where
random episodes run to their time limit): random steps per label before the first query, and
the L2 coefficient of the reward fit."""


def resolve_steps_per_label(broad: bool) -> int:
    """``--loop.initial-steps-per-label auto``: :data:`STEPS_PER_LABEL` where random actions only
    meet time limits (``broad``: a few long episodes, 1,000 steps are one HalfCheetah episode and
    the initial queries' clips overlap), none where they reach a termination (1,000 steps
    already hold many short episodes).

    Measured with the L2 of :data:`BROAD_L2` (docs/benchmarks/defaults.md):
    HalfCheetah-v5 50 oracle labels 0.71 -> 1.14 (5 seeds), 100 mistake labels 0.64 -> 1.05,
    Swimmer and Reacher up, Pendulum and Acrobot unchanged; on Hopper, whose random actions
    fall, it lost two seeds of three.
    """
    return STEPS_PER_LABEL if broad else 0


def resolve_devices(cfg: TrainConfig) -> TrainConfig:
    """``--device auto`` (a GPU where there is one) and ``--agent.device auto`` (the same)."""
    device = resolve_device(cfg.device)
    agent_device = device if cfg.agent.device == "auto" else cfg.agent.device
    return dataclasses.replace(cfg, device=device, agent=dataclasses.replace(cfg.agent, device=agent_device))


def resolve_agent(cfg: TrainConfig, act_space: spaces.Space[object]) -> TrainConfig:
    """The agent ``--agent.algo auto`` names for the action space (checked against it)."""
    check_agent_space(cfg.agent.algo, act_space)
    algo = resolve_algo(cfg.agent.algo, act_space)
    return dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, algo=algo))


def resolve_identity(cfg: TrainConfig) -> TrainConfig:
    """Where the run lives and its id: a resumed run keeps both; a fresh one gets
    ``runs/<env>-<agent>-<time>`` unless ``--run-dir`` names one, and a new id unless it has
    one (``--force`` always gives a new one, see :mod:`prefrl.run.identity`).

    Raises:
        ValueError: an empty or blank ``--run-id`` (it would fall back to the folder's name).
    """
    if cfg.resume is not None:
        return dataclasses.replace(cfg, run_dir=cfg.resume)
    if cfg.run_id is not None and not cfg.run_id.strip():
        raise ValueError(
            f"--run-id {cfg.run_id!r}: a run id cannot be blank (leave --run-id out for a new one)"
        )
    run_dir = cfg.run_dir
    if run_dir is None:
        kind = "offline" if cfg.trajectory_path is not None else cfg.agent.algo  # offline: no agent trains
        run_dir = f"runs/{cfg.env.id.replace('/', '_')}-{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    run_id = new_run_id() if cfg.run_id is None or cfg.force else cfg.run_id
    return dataclasses.replace(cfg, run_dir=run_dir, run_id=run_id)


def _resolve_learning(cfg: TrainConfig, probe: EnvProbe) -> TrainConfig:
    """The reward, loop and trainer options of a run that learns a reward (see :func:`resolve`)."""
    if cfg.trajectory_path is None:
        cfg = resolve_agent(cfg, probe.act_space)
    reward, loop, trainer = cfg.reward, cfg.loop, cfg.trainer
    state_broad = False  # a broad first reward on state vectors: the L2 on its fit, the gated bonus
    if cfg.resume is None:  # config.json names the output, inputs and CNN features used
        reward = reward.resolved(probe.obs_space, probe.act_space)
        online = cfg.trajectory_path is None  # offline: no random steps, no agent
        flat_cnn = reward.is_cnn(probe.obs_space) and reward.cnn_features == "flat"
        if reward.output == "auto":
            assert probe.terminates is not None  # probed: needs_termination
            reward = dataclasses.replace(reward, output=resolve_reward_output(probe.terminates, flat_cnn))
        broad = online and probe.terminates is False  # a broad first reward (docs/techniques.md)
        if loop.initial_steps_per_label is None:
            loop = dataclasses.replace(loop, initial_steps_per_label=resolve_steps_per_label(broad))
        if trainer.lr is None:  # as the trainer would pick it (default_lr), named in config.json
            trainer = dataclasses.replace(trainer, lr=FLAT_CNN_LR if flat_cnn else LR)
        state_broad = broad and reward.resolved_kind(probe.obs_space) == "mlp"  # measured there only
        if trainer.l2_init is None:
            trainer = dataclasses.replace(trainer, l2_init=BROAD_L2 if state_broad else 0.0)
    # the gated bonus where that first reward is; a resumed run's config.json names the bonus it
    # used (one made before the option: none)
    loop = resolve_bonus(resolve_selection(loop, reward.ensemble_size), state_broad, reward.ensemble_size)
    # the soft restart half-way for an on-policy sb3 agent on images (a resumed run names its own)
    on_images = cfg.trajectory_path is None and discrete_on_images(probe.obs_space, probe.act_space)
    loop = resolve_agent_reset(loop, on_images and sb3_on_policy(cfg.agent, cfg.agent.algo))
    loop = dataclasses.replace(loop, seed=cfg.seed)
    trainer = dataclasses.replace(trainer, seed=cfg.seed)
    if cfg.teacher == "web" and cfg.store is None:
        raise ValueError("--teacher web needs --store PATH_OR_URL (the query store the web app serves)")
    return dataclasses.replace(cfg, reward=reward, loop=loop, trainer=trainer)


def resolve_run(cfg: TrainConfig) -> Resolved:
    """The config the run uses (see the module docstring) and the probe of its environment;
    ``cfg`` itself is not changed.

    A resumed run resolves only what its ``config.json`` may lack (a run made before an option
    existed keeps the network it was built with: no reward option is resolved again). A
    ``--reward-from`` run takes the environment of its source run and resolves no reward, loop
    or trainer option: it learns none.

    Raises:
        ValueError: an option that cannot work (an agent for another action space, active
            selection without an ensemble, ``--teacher web`` without ``--store``, a device
            that is not there, ...).
    """
    if cfg.reward_from is not None:
        cfg = source_env(cfg)
        probe = probe_env(cfg)
        return Resolved(resolve_identity(resolve_devices(resolve_agent(cfg, probe.act_space))), probe)
    probe = probe_env(cfg)
    return Resolved(resolve_identity(resolve_devices(_resolve_learning(cfg, probe))), probe)


def resolve(cfg: TrainConfig) -> TrainConfig:
    """The config the run uses (:func:`resolve_run` without its probe)."""
    return resolve_run(cfg).config
