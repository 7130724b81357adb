"""A run's config, resolved once: every ``auto`` choice made and every option checked, before
anything is built or written.

:func:`resolve` turns the config a person gave (defaults, ``--config FILE``, flags, or a resumed
run's ``config.json``) into the one the run uses and writes to ``RUN/config.json``: the agent
named by the action space, the reward's output, inputs, CNN features and action heads, active
selection, devices, the seeds of the loop and the trainer, the run directory and the run's id.
It returns a new config and leaves the one it was given as it was; nothing assigns to a config
after this. What changes while a run goes (a clip length shortened to fit the episodes,
counters, generator states) is the loop's state, not its config.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from prefrl.agents.sb3 import check_agent_space, check_env_id, make_env, resolve_algo
from prefrl.run.config import TrainConfig
from prefrl.run.identity import new_run_id
from prefrl.run.setup import (
    BROAD_L2,
    random_actions_terminate,
    resolve_device,
    resolve_reward_output,
    resolve_steps_per_label,
)
from prefrl.training.config import resolve_selection


def probe_spaces(cfg: TrainConfig) -> tuple[Any, Any]:
    """``(observation space, action space)`` of ``cfg``'s environment (a clear error for an
    unknown id or a missing optional dependency)."""
    check_env_id(cfg.env.id)
    probe = make_env(cfg.env.id, cfg.env.parsed_kwargs())
    try:
        return probe.observation_space, probe.action_space
    finally:
        probe.close()


def resolve_devices(cfg: TrainConfig) -> TrainConfig:
    """``--device auto`` (a GPU where there is one) and ``--agent.device auto`` (the same)."""
    device = resolve_device(cfg.device)
    agent_device = device if cfg.agent.device == "auto" else cfg.agent.device
    return dataclasses.replace(cfg, device=device, agent=dataclasses.replace(cfg.agent, device=agent_device))


def resolve_agent(cfg: TrainConfig, act_space: Any) -> TrainConfig:
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


def resolve(cfg: TrainConfig) -> TrainConfig:
    """The config the run uses (see the module docstring); ``cfg`` itself is not changed.

    A resumed run resolves only what its ``config.json`` may lack (a run made before an option
    existed keeps the network it was built with: no reward option is resolved again).

    Raises:
        ValueError: an option that cannot work (an agent for another action space, active
            selection without an ensemble, ``--teacher web`` without ``--store``, a device
            that is not there, ...).
    """
    obs_space, act_space = probe_spaces(cfg)
    if cfg.trajectory_path is None:
        cfg = resolve_agent(cfg, act_space)
    reward, loop, trainer = cfg.reward, cfg.loop, cfg.trainer
    if cfg.resume is None:  # config.json names the output, inputs and CNN features used
        reward = reward.resolved(obs_space, act_space)
        auto_random = loop.initial_steps_per_label is None
        terminates = None
        online = cfg.trajectory_path is None  # offline: no random steps, no agent
        if reward.output == "auto" or (online and (auto_random or trainer.l2_init is None)):
            terminates = random_actions_terminate(cfg, cfg.env.parsed_kwargs())
        if reward.output == "auto":
            assert terminates is not None
            reward = dataclasses.replace(reward, output=resolve_reward_output(terminates))
        broad = online and terminates is False  # a broad first reward (docs/techniques.md)
        if auto_random:
            loop = dataclasses.replace(loop, initial_steps_per_label=resolve_steps_per_label(broad))
        if trainer.l2_init is None:  # measured on the MLP reward only
            l2 = BROAD_L2 if broad and reward.resolved_kind(obs_space) == "mlp" else 0.0
            trainer = dataclasses.replace(trainer, l2_init=l2)
    loop = dataclasses.replace(resolve_selection(loop, reward.ensemble_size), seed=cfg.seed)
    trainer = dataclasses.replace(trainer, seed=cfg.seed)
    if cfg.teacher == "web" and cfg.store is None:
        raise ValueError("--teacher web needs --store PATH_OR_URL (the query store the web app serves)")
    cfg = dataclasses.replace(cfg, reward=reward, loop=loop, trainer=trainer)
    return resolve_identity(resolve_devices(cfg))
