"""stable-baselines3 agents: construction, environment stacks, PEBBLE buffer relabelling.

Off-policy agents (SAC, TD3, DQN) keep a replay buffer whose rewards go stale whenever the
reward model changes; :func:`relabel_replay_buffer` recomputes all of them in batched
passes. Buffers are saved as plain ``.npz`` arrays (never SB3's pickle-based format).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3 import A2C, DQN, PPO, SAC, TD3
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecTransposeImage, is_vecenv_wrapped

from prefrl.agents.policies import check_cnn, cnn_policy_kwargs, resolve_policy
from prefrl.agents.replay import HybridDictReplayBuffer, HybridReplayBuffer
from prefrl.config_types import OptFloat
from prefrl.data.arrays import write_npz
from prefrl.data.trajectories import load_npz_checked
from prefrl.envs.atari import is_atari_id, make_atari_env, register_ale, use_atari_preprocessing
from prefrl.envs.dmc import FlattenBoxDict, is_box_dict, is_dmc_id, register_dmc
from prefrl.envs.headless import choose_headless_renderers
from prefrl.envs.mujoco_log import route_mujoco_warnings
from prefrl.envs.procgen import check_procgen, is_procgen_id
from prefrl.rewards.spaces import is_image_space

ALGOS: dict[str, type[BaseAlgorithm]] = {"sac": SAC, "td3": TD3, "dqn": DQN, "ppo": PPO, "a2c": A2C}
OFF_POLICY = ("sac", "td3", "dqn")
BACKENDS = ("sb3", "sbx")
SBX_ALGOS = ("sac", "td3", "dqn", "ppo")
"""The agents SBX (stable-baselines3's JAX port) has; its off-policy ones keep SB3's replay
buffer, so relabelling, hybrid replay and buffer checkpoints work unchanged."""
AUTO = "auto"
BUFFER_FORMAT = "prefrl.replay_buffer"


@dataclass(frozen=True)
class AgentConfig:
    """The RL agent (stable-baselines3)."""

    algo: str = AUTO
    """Algorithm: auto (sac for continuous actions, ppo otherwise), sac | td3 (continuous) or
    dqn (discrete), off-policy with the replay buffer relabelled, or ppo | a2c (on-policy)."""
    policy: str = "auto"
    """SB3 policy: auto (CnnPolicy for uint8 images its extractor can read: 36 px a side for the
    Nature CNN, 11 for keypoints; MultiInputPolicy for Dict observations, MlpPolicy otherwise),
    MlpPolicy, CnnPolicy or MultiInputPolicy."""
    cnn: Literal["auto", "nature", "spatial"] = "auto"
    """Image feature extractor of a CnnPolicy: nature (SB3's Nature CNN), spatial (keypoints: 3x3
    convolutions and each channel's soft-argmax, for small images of objects) or auto: spatial for
    images up to 64 px a side with the sb3 backend, nature otherwise (sbx keeps its own CNN)."""
    learning_rate: float = 1e-3
    """Learning rate of the policy and value networks."""
    gamma: float = 0.99
    """Discount factor."""
    batch_size: int = 256
    """Minibatch size (off-policy: per gradient step; PPO: per minibatch)."""
    buffer_size: int = 300_000
    """Replay buffer capacity (off-policy only)."""
    n_steps: int = 1024
    """Rollout length per environment (on-policy only)."""
    n_envs: int = 1
    """Number of parallel environments (DummyVecEnv)."""
    net_arch: list[int] = field(default_factory=lambda: [64, 64])
    """Hidden layer sizes of the policy and value networks."""
    ent_coef: OptFloat = None
    """Entropy bonus of ppo and a2c. None (auto): 0.01 for an agent trained on a learned reward
    with discrete actions on images (RL Baselines3 Zoo's Atari setting), else 0, SB3's default
    (why: docs/benchmarks/defaults.md)."""
    min_entropy: OptFloat = None
    """Entropy floor of ppo and a2c on a learned reward with discrete actions: keep the policy's
    mean action entropy at least this share of its maximum (ln n for n actions) by raising the
    entropy bonus while it is below (prefrl.agents.entropy_floor), so the agent that collects the
    clips keeps sampling; 0: off. None (auto): 0.5 for discrete actions on images with the sb3
    backend, else off (why: docs/benchmarks/defaults.md)."""
    extra: str = "{}"
    """Further keyword arguments of the SB3 class as a JSON object, e.g. '{"tau": 0.01}' (they win
    over the options above)."""
    device: str = "auto"
    """Torch device of the agent: auto (prefrl train: the same as --device; elsewhere SB3's auto, a
    GPU when there is one), cpu, cuda or cuda:N."""
    hybrid_replay: float = 0.0
    """Off-policy agents (QPA's hybrid replay): share of every batch drawn from the newest
    hybrid_replay_window transitions, the rest uniformly; 0: SB3's uniform replay."""
    hybrid_replay_window: int = 10_000
    """Hybrid replay: how many of the newest transitions count as recent."""
    backend: Literal["sb3", "sbx"] = "sb3"
    """sb3: stable-baselines3 (PyTorch), or sbx: its JAX port, with the agents sac, td3, dqn and ppo
    (pip install "prefrl[sbx]"; speed: docs/benchmarks/speed.md, "Agent backends").
    Policies are saved in prefrl's own format (prefrl.agents.policy_io: safetensors + JSON)."""

    def __post_init__(self) -> None:
        if self.algo not in ALGOS and self.algo != AUTO:
            raise ValueError(f"unknown agent {self.algo!r}; choose from {[AUTO, *sorted(ALGOS)]}")
        try:
            extra = json.loads(self.extra)
        except json.JSONDecodeError as e:
            raise ValueError(f"agent extra must be a JSON object, got {self.extra!r} ({e})") from e
        if not isinstance(extra, dict):
            raise ValueError(f"agent extra must be a JSON object, got {self.extra!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown agent backend {self.backend!r}; choose from {list(BACKENDS)}")
        check_cnn(self.cnn, self.backend)
        if self.backend == "sbx" and self.algo not in (AUTO, *SBX_ALGOS):
            raise ValueError(f"the sbx backend has no {self.algo!r} agent; choose from {list(SBX_ALGOS)}")
        if self.min_entropy is not None and not 0.0 <= self.min_entropy < 1.0:
            raise ValueError(f"agent min_entropy must be a share in [0, 1), not {self.min_entropy}")
        if not 0.0 <= self.hybrid_replay <= 1.0 or self.hybrid_replay_window < 1:
            raise ValueError(
                f"need hybrid_replay in [0, 1] and hybrid_replay_window >= 1, got {self.hybrid_replay} "
                f"and {self.hybrid_replay_window}"
            )

    @property
    def off_policy(self) -> bool:
        return self.algo in OFF_POLICY


def check_env_id(env_id: str) -> None:
    """Raise a clear error for an unknown Gymnasium id (with close matches).

    Atari ids (``ALE/Pong-v5``, ``PongNoFrameskip-v4``) are registered first when ale-py is
    installed. Procgen ids (``procgen/coinrun``) need the optional Procgen install.
    """
    if env_id in gym.registry:
        if is_procgen_id(env_id):
            check_procgen(env_id)  # one line naming the install command when Procgen is missing
        return
    if not register_ale() and is_atari_id(env_id):
        raise ValueError(f"{env_id!r} is an Atari game: install ale-py (it ships the ROMs)")
    if is_dmc_id(env_id) and not register_dmc():
        raise ValueError(f"{env_id!r} is a DeepMind Control task: install shimmy[dm-control]")
    if env_id in gym.registry:
        return
    import difflib

    close = difflib.get_close_matches(env_id, list(gym.registry), n=3)
    hint = f"; did you mean {close}?" if close else ""
    raise ValueError(f"unknown Gymnasium environment id {env_id!r}{hint}")


def make_env(env_id: str, env_kwargs: Mapping[str, object] | None = None, render: bool = False) -> gym.Env:
    """``gym.make`` with a clear error for unknown ids, and prefrl's wrappers.

    ``env_kwargs`` are ``gym.make``'s keyword arguments plus the wrapper options
    ``atari_preprocessing`` (``"auto"``, the default: on for ``ALE/...`` ids; ``"on"``;
    ``"off"``), see :func:`prefrl.envs.atari.make_atari_env`, and ``hide_score`` (blank the
    score strip of Atari frames in the observations). Observations that are a ``Dict`` of
    ``Box`` arrays (DeepMind Control's ``dm_control/...`` tasks) become one ``float32`` vector
    (:class:`prefrl.envs.dmc.FlattenBoxDict`). With ``render``, ``render()`` returns
    ``rgb_array`` frames, headless where there is no display
    (:func:`prefrl.envs.headless.choose_headless_renderers`). MuJoCo's warnings go to Python
    logging (:func:`prefrl.envs.mujoco_log.route_mujoco_warnings`), not to ``MUJOCO_LOG.TXT``.
    """
    check_env_id(env_id)
    kwargs: dict[str, Any] = dict(env_kwargs or {})  # gym.make's keyword arguments
    preprocessing = use_atari_preprocessing(env_id, kwargs.pop("atari_preprocessing", "auto"))
    hide_score = bool(kwargs.pop("hide_score", False))
    if render:
        kwargs["render_mode"] = "rgb_array"
        choose_headless_renderers()  # on a server: SDL's dummy driver, EGL or OSMesa for MuJoCo
    if hide_score and not is_atari_id(env_id):
        raise ValueError(f"hide_score blanks the score strip of Atari frames; {env_id!r} is not an ALE game")
    route_mujoco_warnings()  # before a MuJoCo model is compiled
    try:
        if is_atari_id(env_id):
            return make_atari_env(env_id, kwargs, preprocessing=preprocessing, hide_score=hide_score)
        env = gym.make(env_id, **kwargs)
    except gym.error.DependencyNotInstalled as e:  # one line naming what to install, not a traceback
        raise ValueError(f"{env_id!r} needs a package that is not installed: {e}") from None
    return FlattenBoxDict(env) if is_box_dict(env.observation_space) else env


def make_vec_env(
    env_id: str,
    n_envs: int = 1,
    env_kwargs: Mapping[str, object] | None = None,
    seed: int = 0,
    render: bool = False,
) -> VecEnv:
    """``n_envs`` copies in a ``DummyVecEnv``, seeded ``seed, seed+1, ...``."""
    check_env_id(env_id)
    venv = DummyVecEnv([lambda: make_env(env_id, env_kwargs, render)] * n_envs)
    venv.seed(seed)
    return venv


def resolve_algo(algo: str, action_space: spaces.Space[object]) -> str:
    """The agent ``auto`` stands for: SAC for continuous (Box) actions, PPO for any other space.

    PPO rather than DQN for discrete actions: it learned CartPole, Acrobot and Pong from
    learned rewards with SB3's defaults, where DQN needs per-environment exploration tuning.
    """
    if algo != AUTO:
        return algo
    return "sac" if isinstance(action_space, spaces.Box) else "ppo"


def check_agent_space(algo: str, action_space: spaces.Space[object]) -> None:
    """Raise a clear error when ``algo`` cannot act in ``action_space``."""
    algo = resolve_algo(algo, action_space)
    if algo in ("sac", "td3") and not isinstance(action_space, spaces.Box):
        raise ValueError(
            f"agent {algo!r} needs a continuous (Box) action space, but the environment has "
            f"{action_space}; use --agent.algo auto, ppo, a2c or dqn for discrete actions"
        )
    if algo == "dqn" and not isinstance(action_space, spaces.Discrete):
        raise ValueError(f"agent 'dqn' needs a Discrete action space, but the environment has {action_space}")
    if algo in ("ppo", "a2c") and not isinstance(
        action_space, spaces.Box | spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary
    ):
        raise ValueError(f"agent {algo!r} does not support the action space {action_space}")


def agent_class(algo: str, backend: str = "sb3") -> type[BaseAlgorithm]:
    """The class of agent ``algo`` (resolved, not ``auto``) in ``backend``; a clear error when SBX
    is not installed."""
    if backend == "sb3":
        if algo not in ALGOS:
            raise ValueError(f"unknown agent {algo!r}; choose from {sorted(ALGOS)}")
        return ALGOS[algo]
    if backend != "sbx" or algo not in SBX_ALGOS:
        raise ValueError(f"no agent {algo!r} in backend {backend!r} (sbx has {list(SBX_ALGOS)})")
    os.environ.setdefault(  # XLA's CPU thread pool, like torch's, one thread: cells run one per core
        "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )
    try:
        import sbx
    except ImportError as e:
        raise ValueError(f'--agent.backend sbx needs SBX: pip install "prefrl[sbx]" ({e})') from None
    return getattr(sbx, algo.upper())


IMAGE_ENT_COEF = 0.01
"""The on-policy agents' entropy bonus on a learned reward with discrete actions on images
(``--agent.ent-coef auto``)."""


def discrete_on_images(observation_space: spaces.Space[object], action_space: spaces.Space[object]) -> bool:
    """``Discrete`` actions on image observations (a rank-3 ``uint8`` box, or a Dict holding one):
    Atari-like tasks, which get RL Baselines3 Zoo's Atari treatment (evaluation by sampled
    actions; on a learned reward an entropy bonus for the on-policy agents)."""
    subspaces = (
        observation_space.spaces.values()
        if isinstance(observation_space, spaces.Dict)
        else [observation_space]
    )
    return isinstance(action_space, spaces.Discrete) and any(map(is_image_space, subspaces))


def learned_on_images(venv: VecEnv) -> bool:
    """Whether ``venv`` gives a learned reward (it is wrapped in
    :class:`~prefrl.agents.learned_reward.LearnedRewardVecEnv`) for discrete actions on images:
    where the on-policy agents get an entropy bonus and an entropy floor by default."""
    from prefrl.agents.learned_reward import LearnedRewardVecEnv

    images = discrete_on_images(venv.observation_space, venv.action_space)
    return images and is_vecenv_wrapped(venv, LearnedRewardVecEnv)


def sb3_on_policy(config: AgentConfig, algo: str) -> bool:
    """Whether ``config`` with its algorithm resolved to ``algo`` is an on-policy
    stable-baselines3 agent (PPO, A2C): the agents that get the entropy floor and the soft
    restart on a learned reward of images (:func:`resolve_min_entropy`, ``--loop.agent-reset-at``)."""
    return algo not in OFF_POLICY and config.backend == "sb3"


def restarts_on_images(agent: object) -> bool:
    """Whether ``agent`` gets the automatic soft restart (``--loop.agent-reset-at`` None): an
    on-policy stable-baselines3 agent (an actor-critic policy whose heads can restart) on a
    learned reward with discrete actions on images (:func:`learned_on_images`)."""
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
    from stable_baselines3.common.policies import ActorCriticPolicy

    if not isinstance(agent, OnPolicyAlgorithm) or not isinstance(agent.policy, ActorCriticPolicy):
        return False
    venv = agent.get_env()
    return venv is not None and learned_on_images(venv)


def resolve_ent_coef(ent_coef: float | None, venv: VecEnv) -> float:
    """``--agent.ent-coef``: as given, or (None) :data:`IMAGE_ENT_COEF` for an agent on a learned
    reward with discrete actions on images (:func:`learned_on_images`), and 0 elsewhere."""
    if ent_coef is not None:
        return ent_coef
    return IMAGE_ENT_COEF if learned_on_images(venv) else 0.0


def configured_ent_coef(config: AgentConfig, venv: VecEnv) -> float:
    """The entropy bonus ``config`` gives an on-policy agent on ``venv``: ``ent_coef`` in
    ``--agent.extra``, else :func:`resolve_ent_coef`: what :func:`make_agent` gives it, and what the
    entropy floor never goes below."""
    extra = json.loads(config.extra).get("ent_coef")
    return float(extra) if extra is not None else resolve_ent_coef(config.ent_coef, venv)


IMAGE_MIN_ENTROPY = 0.5
"""The entropy floor (share of the maximum) of on-policy agents on a learned reward with discrete
actions on images (``--agent.min-entropy auto``)."""


def resolve_min_entropy(config: AgentConfig, venv: VecEnv) -> float:
    """``--agent.min-entropy``: the entropy floor of an agent on ``venv``, as a share of its
    maximum entropy (0: none). As given, or (None) :data:`IMAGE_MIN_ENTROPY` for an on-policy sb3
    agent on a learned reward with discrete actions on images, and 0 elsewhere. Raises
    ``ValueError`` for a floor the agent cannot keep (off-policy, sbx, continuous actions)."""
    from prefrl.agents.entropy_floor import max_entropy

    algo = resolve_algo(config.algo, venv.action_space)
    if config.min_entropy is None:
        on = learned_on_images(venv) and sb3_on_policy(config, algo)
        return IMAGE_MIN_ENTROPY if on else 0.0
    if config.min_entropy > 0:
        if not sb3_on_policy(config, algo):
            raise ValueError(
                f"--agent.min-entropy needs an on-policy sb3 agent (ppo, a2c), not {config.backend} {algo}"
            )
        max_entropy(venv.action_space)  # discrete actions, or a clear error
    return config.min_entropy


def make_agent(config: AgentConfig, venv: VecEnv, seed: int = 0, learning_starts: int = 0) -> BaseAlgorithm:
    """Build a fresh SB3 agent on ``venv`` from ``config`` (``auto`` resolved from the action space)."""
    check_agent_space(config.algo, venv.action_space)
    resolve_min_entropy(config, venv)  # a floor the agent cannot keep fails here, not mid-run
    config = dataclasses.replace(config, algo=resolve_algo(config.algo, venv.action_space))
    kwargs: dict[str, Any] = {
        "learning_rate": config.learning_rate,
        "gamma": config.gamma,
        "seed": seed,
        "device": config.device,
        "verbose": 0,
        "policy_kwargs": {"net_arch": list(config.net_arch)},
    }
    if config.off_policy:
        kwargs.update(
            batch_size=config.batch_size, buffer_size=config.buffer_size, learning_starts=learning_starts
        )
        if config.hybrid_replay > 0:
            dict_obs = isinstance(venv.observation_space, gym.spaces.Dict)
            kwargs.update(
                replay_buffer_class=HybridDictReplayBuffer if dict_obs else HybridReplayBuffer,
                replay_buffer_kwargs={
                    "recent_frac": config.hybrid_replay,
                    "recent_size": max(1, config.hybrid_replay_window // venv.num_envs),
                },
            )
    else:
        kwargs.update(n_steps=config.n_steps, ent_coef=configured_ent_coef(config, venv))
        if config.algo == "ppo":
            kwargs.update(batch_size=config.batch_size)
    kwargs.update(json.loads(config.extra))
    policy = resolve_policy(config.policy, venv.observation_space, config.cnn, config.backend)
    if policy == "CnnPolicy":
        kwargs["policy_kwargs"].update(cnn_policy_kwargs(config.cnn, venv.observation_space, config.backend))
    try:
        cls = agent_class(config.algo, config.backend)
        agent = cls(policy, venv, **kwargs)
    except TypeError as e:
        raise ValueError(f"bad hyperparameters for {config.algo}: {e}") from e
    agent.prefrl_config = config  # type: ignore[attr-defined]  # what save_agent writes
    return agent


# --------------------------------------------------------------------------- relabelling
def buffer_rows(buffer: ReplayBuffer) -> int:
    """Number of filled rows (each holds ``n_envs`` transitions)."""
    return buffer.buffer_size if buffer.full else buffer.pos


def buffer_transitions(
    agent: OffPolicyAlgorithm, rows: slice
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(obs, acts, next_obs, terminal)`` of buffer rows, flattened to ``[M, ...]``.

    Actions are mapped back from the buffer's [-1, 1] scale to the environment's bounds,
    i.e. what the environment executed and what the reward model is trained on. Likewise
    channel-last images, which SB3 stores transposed (``VecTransposeImage``), are returned
    channel-last, as the environment (and so the reward model) sees them.
    """
    buf = agent.replay_buffer
    assert buf is not None
    if buf.optimize_memory_usage:
        raise ValueError("relabelling needs next_observations; do not use optimize_memory_usage")

    def flat(a: np.ndarray) -> np.ndarray:
        return a[rows].reshape(-1, *a.shape[2:])

    acts = flat(buf.actions)
    if isinstance(agent.action_space, spaces.Box):
        acts = agent.policy.unscale_action(acts)
    # Discrete actions are stored as [M, 1]: back to [M] integers, as the env took them
    acts = acts.reshape(len(acts), *(agent.action_space.shape or ())).astype(
        agent.action_space.dtype, copy=False
    )
    terminal = flat(buf.dones) * (1 - flat(buf.timeouts))
    obs, next_obs = flat(buf.observations), flat(buf.next_observations)
    venv = agent.get_env()
    if venv is not None and is_vecenv_wrapped(venv, VecTransposeImage):  # [M, C, H, W] -> [M, H, W, C]
        obs, next_obs = np.moveaxis(obs, -3, -1), np.moveaxis(next_obs, -3, -1)
    return obs, acts, next_obs, terminal.astype(bool)


def relabel_replay_buffer(
    agent: OffPolicyAlgorithm,
    reward_fn: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    batch: int = 16384,
) -> np.ndarray:
    """Replace every stored reward by ``reward_fn(obs, acts, next_obs, dones)`` (PEBBLE).

    ``reward_fn`` returns raw rewards ``[M]``; it is called on ``batch`` transitions at a time.
    Returns all new raw rewards ``[rows * n_envs]`` (e.g. to fit the reward normaliser);
    the buffer itself receives whatever the caller later normalises with
    :func:`write_buffer_rewards`.
    """
    buf = agent.replay_buffer
    assert buf is not None
    n_rows = buffer_rows(buf)
    per = max(1, batch // buf.n_envs)
    out = []
    for s in range(0, n_rows, per):
        obs, acts, next_obs, terminal = buffer_transitions(agent, slice(s, min(s + per, n_rows)))
        out.append(np.asarray(reward_fn(obs, acts, next_obs, terminal), dtype=np.float32))
    return np.concatenate(out) if out else np.zeros(0, np.float32)


def write_buffer_rewards(agent: OffPolicyAlgorithm, rews: np.ndarray) -> None:
    """Store flat rewards ``[rows * n_envs]`` into the filled rows of the buffer."""
    buf = agent.replay_buffer
    assert buf is not None
    n_rows = buffer_rows(buf)
    buf.rewards[:n_rows] = np.asarray(rews, dtype=np.float32).reshape(n_rows, buf.n_envs)


# --------------------------------------------------------------------------- buffer files
_BUF_FIELDS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def save_replay_buffer(buffer: ReplayBuffer, path: str | Path) -> Path:
    """Write the filled part of a (non-dict) replay buffer to ``.npz`` (no pickle)."""
    path = Path(path)
    n = buffer_rows(buffer)
    meta = {
        "format": BUFFER_FORMAT,
        "version": 1,
        "pos": buffer.pos,
        "full": buffer.full,
        "buffer_size": buffer.buffer_size,
        "n_envs": buffer.n_envs,
    }
    arrays: dict[str, Any] = {"__meta__": np.array(json.dumps(meta))}
    for name in _BUF_FIELDS:
        arrays[name] = getattr(buffer, name)[:n]
    tmp = path.with_name(path.name + ".tmp.npz")
    write_npz(tmp, arrays)  # compressed where the observations are images
    tmp.replace(path)
    return path


def load_replay_buffer(buffer: ReplayBuffer, path: str | Path) -> None:
    """Fill ``buffer`` from a file written by :func:`save_replay_buffer`."""
    data = load_npz_checked(path, BUFFER_FORMAT, 1)
    meta = json.loads(str(data["__meta__"]))
    if meta["buffer_size"] != buffer.buffer_size or meta["n_envs"] != buffer.n_envs:
        raise ValueError(
            f"{path}: buffer of size {meta['buffer_size']} x {meta['n_envs']} envs does not match "
            f"the agent's {buffer.buffer_size} x {buffer.n_envs}"
        )
    for name in _BUF_FIELDS:
        arr = data[name]
        dst = getattr(buffer, name)
        if arr.shape[1:] != dst.shape[1:]:
            raise ValueError(f"{path}: {name} has shape {arr.shape[1:]}, expected {dst.shape[1:]}")
        dst[: len(arr)] = arr
    buffer.pos, buffer.full = int(meta["pos"]), bool(meta["full"])
