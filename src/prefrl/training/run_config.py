"""The config of a whole training run (``prefrl train``): typed sections, JSON files, the command line.

Every field is documented, so ``prefrl train --help`` documents itself. A config is read from
the command line over ``--config FILE`` or a resumed run's ``config.json``
(:func:`parse_args`), and written back as JSON (:func:`config_to_dict`); older files with
renamed options still load (:data:`RENAMED`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro
from gymnasium import spaces

from prefrl.agents.sb3 import (
    AgentConfig,
)
from prefrl.config_types import OptBool, OptDir, OptFile, OptInts
from prefrl.envs.atari import AtariPreprocessingMode
from prefrl.rewards.nets import CNNReward, MLPReward, RewardNet, cnn_architecture, is_small_image
from prefrl.rewards.spaces import is_image_space
from prefrl.storage.checkpoint import read_json
from prefrl.teachers.spec import TeacherName
from prefrl.training.config import LoopConfig, check_selection
from prefrl.training.trainer import RewardTrainerConfig


@dataclass
class EnvConfig:
    """The environment."""

    id: str = "Pendulum-v1"
    """Any registered Gymnasium environment id."""
    kwargs: str = "{}"
    """Keyword arguments of gym.make as a JSON object, e.g. '{"g": 9.81}'."""
    atari_preprocessing: AtariPreprocessingMode = "auto"
    """Atari (ALE/...) games: 84x84 grayscale frames, frame skip 4, up to 30 no-ops on reset, 4 frames
    stacked into uint8 [4, 84, 84] observations. auto: on for ALE ids; off: the raw [210, 160, 3] frames."""
    hide_score: bool = False
    """Atari games: blank the score strip at the top of the observed frames, so the reward model (and,
    as they share one observation, the agent) cannot read the score; clips shown to people keep it."""

    def parsed_kwargs(self) -> dict[str, Any]:
        """gym.make's keyword arguments plus the wrapper options that make_env consumes."""
        try:
            kw = json.loads(self.kwargs)
        except json.JSONDecodeError as e:
            raise ValueError(f"env kwargs must be a JSON object, got {self.kwargs!r} ({e})") from e
        if not isinstance(kw, dict):
            raise ValueError(f"env kwargs must be a JSON object, got {self.kwargs!r}")
        if self.atari_preprocessing != "auto":
            kw["atari_preprocessing"] = self.atari_preprocessing
        if self.hide_score:
            kw["hide_score"] = True
        return kw


@dataclass
class RewardNetConfig:
    """The reward model (an ensemble of MLPs, or of CNNs for image observations)."""

    kind: Literal["auto", "mlp", "cnn"] = "auto"
    """Network: auto (cnn for uint8 image observations [H, W, C] or [C, H, W], frame stacks included;
    mlp otherwise, Dict observations included), mlp or cnn."""
    hidden: list[int] = field(default_factory=lambda: [64, 64])
    """Hidden layer sizes of the MLP."""
    cnn_channels: OptInts = None
    """CNN: output channels of each convolution (None: by image size, see --reward.cnn-hidden)."""
    cnn_kernels: OptInts = None
    """CNN: kernel size of each convolution (None: by image size; reduced where images are too small)."""
    cnn_strides: OptInts = None
    """CNN: stride of each convolution (None: by image size; reduced where images are too small)."""
    cnn_hidden: OptInts = None
    """CNN: hidden layer sizes after the convolutions. None picks the CNN by image size: sides up to 64
    px (e.g. the 40x40 moving dot) get channels 16 16, kernels 3 3, strides 2 1, hidden 64 with spatial
    features (channels 8 16, kernels 4 3, strides 4 2, hidden 32 with flat ones); larger images (Atari's
    84x84) channels 16 32 32, kernels 8 4 3, strides 4 2 1, hidden 64."""
    cnn_features: Literal["auto", "flat", "spatial"] = "auto"
    """CNN: what the convolutions hand to the head: flat (every position's activations) or spatial
    (each channel's soft-argmax: where things are, see docs/core.md). auto: spatial for images up to
    64 px a side, flat above; written to config.json as the one chosen."""
    ensemble_size: int = 3
    """Ensemble members (>= 2 for disagreement-based active selection)."""
    use_obs: bool = True
    """Reward reads the observation."""
    use_act: bool = True
    """Reward reads the action."""
    use_next_obs: OptBool = None
    """Reward reads the next observation s' (flat CNN: stacked onto the current image along channels;
    keypoint CNN: the keypoints of s and their displacement to s'). None (auto): on for the MLP and the
    keypoint CNN, off for the flat CNN, written to config.json as the one chosen. Measured with the MLP:
    HalfCheetah-v5 50 labels 0.60 -> 0.73, Hopper-v5 100 labels 0.91 -> 1.02; keypoint CNN, moving dot,
    800 labels offline: per-step correlation 0.88 -> 0.95, best action 0.89 -> 0.97 (docs/benchmarks.md)."""
    use_done: bool = False
    """Reward reads the terminal flag."""
    action_heads: OptBool = None
    """Discrete actions: one reward output per action, the taken action's is the reward (r(s, a) = f(s)[a],
    as a DQN's Q-values) instead of a one-hot action input. None (auto): on for a CNN reward with a
    Discrete action that does not read the keypoints' displacement (moving dot, 200 labels: per-step
    correlation with the true reward 0.03-0.43 -> 0.70-0.82), off where it does (the displacement says
    what the action did: 800 labels, best action 0.97 with a one-hot action, 0.92 with heads) and for
    the MLP (Acrobot-v1 0.99 -> 0.98, CartPole-v1 1.18 either way); written to config.json as the one
    chosen. See docs/core.md."""
    output: Literal["auto", "linear", "tanh"] = "auto"
    """Per-step reward output: tanh (bounded to (-1, 1), as in B-Pref: a state no label covers cannot
    pay more than the states the labels favour), linear (unbounded), or auto: tanh when random actions
    end an episode by termination within the first --loop.initial-steps steps, else linear (written
    to config.json as the one chosen). See docs/core.md."""

    def _output(self) -> str:
        return "linear" if self.output == "auto" else self.output

    def resolved_kind(self, obs_space: Any) -> Literal["mlp", "cnn"]:
        """``kind`` with ``auto`` decided by the observation space."""
        if self.kind == "auto":
            return "cnn" if is_image_space(obs_space) else "mlp"
        return self.kind

    def resolve_cnn_features(self, obs_space: Any) -> Literal["flat", "spatial"]:
        """``cnn_features="auto"``: keypoints (spatial) for small images, where a reward is about
        where objects are (the moving dot: held-out accuracy 0.53 -> 0.68 offline), flat above."""
        if self.cnn_features != "auto":
            return self.cnn_features
        return "spatial" if is_image_space(obs_space) and is_small_image(obs_space) else "flat"

    def resolve_next_obs(self, obs_space: Any) -> bool:
        """``use_next_obs=None`` (auto): the MLP and the keypoint CNN read s', the flat CNN does not
        (not measured there, and a stacked frame would take it off the NumPy per-step path). The
        keypoint CNN then reads where things moved: a step that moves nothing (standing still,
        pushing into a wall) looks the same whatever the action, which is what a reward for
        progress needs."""
        if self.resolved_kind(obs_space) == "mlp":
            return True
        return self.resolve_cnn_features(obs_space) == "spatial"

    def resolve_action_heads(self, obs_space: Any, act_space: Any) -> bool:
        """``action_heads=None`` (auto): on where a CNN reward reads a Discrete action and not the
        keypoints' displacement. Its head is one hidden layer over image features, where a one-hot
        action input can only shift the hidden units; the displacement already says what the
        action did (measured: heads then score the best action less often); the MLP's two hidden
        layers mix the action in (measured: no gain there)."""
        if self.action_heads is not None:
            return self.action_heads
        discrete = isinstance(act_space, spaces.Discrete)
        if self.resolved_kind(obs_space) != "cnn" or not self.use_act or not discrete:
            return False
        motion = self.resolve_cnn_features(obs_space) == "spatial" and (
            self.resolve_next_obs(obs_space) if self.use_next_obs is None else self.use_next_obs
        )
        return not motion

    def build(self, obs_space: Any, act_space: Any) -> RewardNet:
        """The network; an unresolved ``output="auto"`` (no environment was probed, see
        :func:`resolve_reward_output`) builds the linear output."""
        kind = self.resolved_kind(obs_space)
        use_next_obs = bool(self.use_next_obs)  # unresolved auto (runs that predate it): off
        heads = bool(self.action_heads)  # unresolved auto (runs that predate it): off
        if kind == "cnn":
            if not is_image_space(obs_space):
                raise ValueError(
                    "--reward.kind cnn needs uint8 image observations [H, W, C] or [C, H, W], "
                    f"got {obs_space}"
                )
            if not self.use_obs:
                raise ValueError(
                    "the CNN reward always reads the observation; drop --reward.no-use-obs or use "
                    "--reward.kind mlp"
                )
            features = "flat" if self.cnn_features == "auto" else self.cnn_features  # unresolved: as before
            arch = cnn_architecture(obs_space, self.cnn_channels, self.cnn_kernels, self.cnn_strides,
                                    self.cnn_hidden, features=features)  # fmt: skip
            return CNNReward(
                obs_space, act_space, ensemble_size=self.ensemble_size, use_act=self.use_act,
                use_done=self.use_done, use_next_obs=use_next_obs, output=self._output(), features=features,
                action_heads=heads, **arch,
            )  # fmt: skip
        return MLPReward(
            obs_space, act_space, hidden=tuple(self.hidden), ensemble_size=self.ensemble_size,
            use_obs=self.use_obs, use_act=self.use_act, use_next_obs=use_next_obs,
            use_done=self.use_done, output=self._output(), action_heads=heads,
        )  # fmt: skip


# optional paths: a metavar naming what to pass and no "(default: None)" in --help
OptStore = Annotated[
    str | None, tyro.conf.arg(metavar="PATH|URL", help_behavior_hint="(only with --teacher web)")
]
RunId = Annotated[str | None, tyro.conf.arg(metavar="ID", help_behavior_hint="(default: a new one)")]
RewardFrom = Annotated[str | None, tyro.conf.arg(metavar="RUN|FILE", help_behavior_hint="(optional)")]
RunDir = Annotated[
    str | None, tyro.conf.arg(metavar="DIR", help_behavior_hint="(default: runs/<env>-<agent>-<time>)")
]


@dataclass
class TrainConfig:
    """Train an agent on a reward learned from preference comparisons."""

    env: EnvConfig = field(default_factory=EnvConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    reward: RewardNetConfig = field(default_factory=RewardNetConfig)
    trainer: RewardTrainerConfig = field(default_factory=RewardTrainerConfig)
    teacher: TeacherName = "oracle"
    """Who labels: a B-Pref simulated preset (oracle|noisy|mistake|skip|myopic|equal), a person at
    this terminal (terminal), or people in the web app (web, with --store)."""
    store: OptStore = None
    """Query store for --teacher web: a SQLite path or SQLAlchemy URL."""
    run_dir: RunDir = None
    """Run directory."""
    force: bool = False
    """Overwrite an existing run directory."""
    resume: OptDir = None
    """Continue the run in this directory from its last checkpoint (its config.json is used)."""
    run_id: RunId = None
    """The run's identity in the query store (--teacher web), set once when the run begins (a new
    one with --force) and kept in config.json; the folder's name is only where the run lives."""
    config: OptFile = None
    """A JSON config file (as written to RUN/config.json); command-line options override it."""
    print_config: bool = False
    """Print the resolved config as JSON and exit."""
    seed: int = 0
    """Seed of environments, agent, loop and teacher."""
    trajectory_path: OptFile = None
    """Offline mode: learn only a reward, from clips of this trajectory file (.npz)."""
    reward_from: RewardFrom = None
    """Train only an agent, --loop.total-steps steps, on the frozen reward of this finished run (a run
    directory, whose environment it takes, or a reward.safetensors file), normalised as that run's
    agent saw it: no queries, no reward training (see docs/integrations.md)."""
    agent_path: OptFile = None
    """Warm start: initial policy from this SB3 .zip file."""
    save_preferences: OptFile = None
    """Also copy the final preference dataset (.npz) to this path."""
    final_agent_steps: int = 0
    """After training, train a fresh agent this many steps on the final learned reward and report
    its true return (0: skip)."""
    eval_episodes: int = 10
    """Episodes for the final evaluation of the policy (and of a random policy)."""
    eval_interval: int = 0
    """Also evaluate the policy on the true reward every this many environment steps, over
    eval_episodes episodes, into RUN/evaluations.csv; the report gives the mean of the last 10
    (0: only the final evaluation)."""
    progress: bool = True
    """Show a progress bar."""
    threads: int = 1
    """Torch CPU threads (1 avoids oversubscription on small shared machines)."""
    device: str = "auto"
    """Where the reward networks train and predict (relabelling and query selection too): auto (a
    GPU when there is one, else cpu), cpu, cuda or cuda:N. The agent follows unless --agent.device
    names a device (its default auto means: the same as --device)."""


RENAMED = {
    "LoopConfig": {
        "comparison_queue_size": "max_labels_kept",
        "initial_comparison_frac": "initial_label_frac",
    },
}
"""Options renamed since an earlier release, per config section: old name -> new name."""

IGNORED_ON_RESUME = ("resume", "force", "config", "print_config", "progress", "run_dir", "threads")


# ------------------------------------------------------------------------ config files
def config_to_dict(cfg: TrainConfig) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def _from_dict(cls: Any, data: dict[str, Any], where: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if cls is LoopConfig and "allow_variable_horizon" in data:  # retired: episode ends are handled
        data = {k: v for k, v in data.items() if k != "allow_variable_horizon"}
        print(f"{where}: ignoring retired option allow_variable_horizon (terminating episodes "
              "are handled by absorbing states)", file=sys.stderr)  # fmt: skip
    for old, new in RENAMED.get(cls.__name__, {}).items():  # config files of older versions
        if old in data and new not in data:
            data = {(new if k == old else k): v for k, v in data.items()}
            print(f"{where}: option {old} is now called {new}", file=sys.stderr)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: unknown option(s) {unknown}; valid: {sorted(fields)}")
    kw = {}
    for name, value in data.items():
        default = getattr(cls(), name) if name in ("env", "agent", "loop", "reward", "trainer") else None
        if dataclasses.is_dataclass(default):
            kw[name] = _from_dict(type(default), value, f"{where}.{name}")
        elif isinstance(value, list) and name == "l2_band":
            kw[name] = tuple(value)
        else:
            kw[name] = value
    return cls(**kw)


def config_from_dict(data: dict[str, Any], where: str = "config") -> TrainConfig:
    """Rebuild a :class:`TrainConfig` from JSON, with clear errors for unknown keys."""
    try:
        return _from_dict(TrainConfig, data, where)
    except TypeError as e:
        raise ValueError(f"{where}: {e}") from e


def _flag_value(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def _differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "--") -> list[str]:
    """``["--loop.total-labels 20 -> 99", ...]`` for every leaf option that differs."""
    out = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        name = prefix + k.replace("_", "-")
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, name + ".")
        elif a != b:
            out.append(f"{name} {json.dumps(a)} -> {json.dumps(b)}")
    return out


def parse_args(argv: list[str]) -> TrainConfig:
    """Command line (over ``--config FILE`` or a resumed run's config) -> :class:`TrainConfig`."""
    default = TrainConfig()
    for flag in ("--loop.seed", "--trainer.seed"):
        if any(a == flag or a.startswith(flag + "=") for a in argv):
            raise ValueError(f"{flag} is set from --seed (one seed for env, agent, loop, trainer)")
    resume, cfg_file = _flag_value(argv, "--resume"), _flag_value(argv, "--config")
    if resume is not None:
        default = config_from_dict(
            read_json(Path(resume) / "config.json", "run config"), f"{resume}/config.json"
        )
    elif cfg_file is not None:
        default = config_from_dict(read_json(Path(cfg_file), "config file"), cfg_file)
    cfg = tyro.cli(TrainConfig, default=default, args=argv, prog="prefrl train")
    if resume is not None:
        cfg.resume, cfg.run_dir = resume, resume
        stored, now = config_to_dict(default), config_to_dict(cfg)
        diff = _differences(
            {k: v for k, v in stored.items() if k not in IGNORED_ON_RESUME},
            {k: v for k, v in now.items() if k not in IGNORED_ON_RESUME},
        )
        if diff:
            raise ValueError(
                f"--resume {resume}: {'; '.join(diff)} (the run's config.json has the first value); a "
                "run resumes with its own config (start a new run directory to change them)"
            )
    check_selection(cfg.loop, cfg.reward.ensemble_size)  # before anything is built or written
    return cfg
