"""``prefrl train``: learn a reward from preferences and train an agent on it.

Typed configs (every field documented, so ``--help`` documents itself), a JSON config
file plus command-line overrides (``--config FILE``), ``--print-config``, a run directory
with checkpoints and ``--resume RUN``. From Python::

    from prefrl.cli.train import TrainConfig, train
    report = train(TrainConfig(run_dir="runs/pendulum"))
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import torch
import tyro

from prefrl.agents.evaluate import evaluate_returns
from prefrl.agents.learned_reward import LearnedReward, LearnedRewardVecEnv
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.sb3 import (
    AgentConfig,
    check_agent_space,
    check_env_id,
    load_agent,
    make_agent,
    make_env,
    make_vec_env,
    resolve_algo,
)
from prefrl.config_types import OptDir, OptFile, OptInts
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.envs.atari import AtariPreprocessingMode
from prefrl.rewards.nets import CNNReward, MLPReward, RewardNet, cnn_architecture
from prefrl.rewards.spaces import is_image_space
from prefrl.storage.checkpoint import config_hash, read_json, write_json
from prefrl.teachers.spec import AnyTeacher, TeacherName, make_teacher
from prefrl.training.callbacks import ProgressBar
from prefrl.training.config import TIE_HINT, TIE_WARN, LoopConfig, check_selection, tie_fraction
from prefrl.training.loop import PreferenceLoop
from prefrl.training.metrics_log import MetricsLogger
from prefrl.training.trainer import RewardTrainer, RewardTrainerConfig, true_pair_accuracy


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
    px (e.g. the 40x40 moving dot) get channels 8 16, kernels 4 3, strides 4 2, hidden 32 (cheap enough
    for a per-step reward on 2 cores); larger images (Atari's 84x84) channels 16 32 32, kernels 8 4 3,
    strides 4 2 1, hidden 64."""
    ensemble_size: int = 3
    """Ensemble members (>= 2 for disagreement-based active selection)."""
    use_obs: bool = True
    """Reward reads the observation."""
    use_act: bool = True
    """Reward reads the action."""
    use_next_obs: bool = False
    """Reward reads the next observation (CNN: stacked onto the current image along channels)."""
    use_done: bool = False
    """Reward reads the terminal flag."""
    output: Literal["auto", "linear", "tanh"] = "auto"
    """Per-step reward output: tanh (bounded to (-1, 1), as in B-Pref: a state no label covers cannot
    pay more than the states the labels favour), linear (unbounded), or auto: tanh when random actions
    end an episode by termination within the first --loop.initial-steps steps, else linear (written
    to config.json as the one chosen). See docs/core.md."""

    def _output(self) -> str:
        return "linear" if self.output == "auto" else self.output

    def build(self, obs_space: Any, act_space: Any) -> RewardNet:
        """The network; an unresolved ``output="auto"`` (no environment was probed, see
        :func:`resolve_reward_output`) builds the linear output."""
        kind = self.kind
        if kind == "auto":
            kind = "cnn" if is_image_space(obs_space) else "mlp"
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
            arch = cnn_architecture(obs_space, channels=self.cnn_channels, kernels=self.cnn_kernels,
                                    strides=self.cnn_strides, hidden=self.cnn_hidden)  # fmt: skip
            return CNNReward(
                obs_space, act_space, ensemble_size=self.ensemble_size, use_act=self.use_act,
                use_done=self.use_done, use_next_obs=self.use_next_obs, output=self._output(), **arch,
            )  # fmt: skip
        return MLPReward(
            obs_space, act_space, hidden=tuple(self.hidden), ensemble_size=self.ensemble_size,
            use_obs=self.use_obs, use_act=self.use_act, use_next_obs=self.use_next_obs,
            use_done=self.use_done, output=self._output(),
        )  # fmt: skip


# optional paths: a metavar naming what to pass and no "(default: None)" in --help
OptStore = Annotated[
    str | None, tyro.conf.arg(metavar="PATH|URL", help_behavior_hint="(only with --teacher web)")
]
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
    config: OptFile = None
    """A JSON config file (as written to RUN/config.json); command-line options override it."""
    print_config: bool = False
    """Print the resolved config as JSON and exit."""
    seed: int = 0
    """Seed of environments, agent, loop and teacher."""
    trajectory_path: OptFile = None
    """Offline mode: learn only a reward, from clips of this trajectory file (.npz)."""
    agent_path: OptFile = None
    """Warm start: initial policy from this SB3 .zip file."""
    save_preferences: OptFile = None
    """Also copy the final preference dataset (.npz) to this path."""
    final_agent_steps: int = 0
    """After training, train a fresh agent this many steps on the final learned reward and report
    its true return (0: skip)."""
    eval_episodes: int = 10
    """Episodes for the final evaluation of the policy (and of a random policy)."""
    progress: bool = True
    """Show a progress bar."""
    threads: int = 1
    """Torch CPU threads (1 avoids oversubscription on small shared machines)."""
    device: str = "auto"
    """Where the reward networks train and predict (relabelling and query selection too): auto (a
    GPU when there is one, else cpu), cpu, cuda or cuda:N. The agent follows unless --agent.device
    names a device (its default auto means: the same as --device)."""

    def __post_init__(self) -> None:
        check_selection(self.loop, self.reward.ensemble_size)  # fail at parse time, before any env is built


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
    return cfg


# ------------------------------------------------------------------------ wiring
def cli_teacher(cfg: TrainConfig, run_name: str) -> AnyTeacher:
    """The teacher ``cfg.teacher`` names (a simulated one seeded from ``--seed``)."""
    return make_teacher(cfg.teacher, run=run_name, seed=cfg.seed + 7, store=cfg.store)


def web_teacher_hint(store: str, run_name: str) -> str:
    """Where the queries of a ``--teacher web`` run go and the commands that label them."""
    return (
        f"prefrl: queries of run {run_name!r} go to the store {store}. To label them in a browser, "
        "in another terminal:\n"
        f"  prefrl label add-user --store {store} NAME    # prints NAME's sign-in token\n"
        f"  prefrl label serve --store {store}            # then open http://127.0.0.1:8000/ and sign in"
    )


def prepare_run_dir(cfg: TrainConfig) -> Path:
    """Create (or, on resume, check) the run directory and write ``config.json``."""
    if cfg.resume is not None:
        run = Path(cfg.resume)
        if not (run / "config.json").exists():
            raise FileNotFoundError(f"--resume {run}: not a run directory (no config.json)")
        return run
    if cfg.run_dir is None:
        kind = "offline" if cfg.trajectory_path is not None else cfg.agent.algo  # offline: no agent trains
        cfg.run_dir = f"runs/{cfg.env.id.replace('/', '_')}-{kind}-{time.strftime('%Y%m%d-%H%M%S')}"
    run = Path(cfg.run_dir)
    if run.exists() and any(run.iterdir()):
        if not cfg.force:
            raise FileExistsError(
                f"run directory {run} already exists; pass --force to overwrite it "
                f"or --resume {run} to continue"
            )
        shutil.rmtree(run)
    run.mkdir(parents=True, exist_ok=True)
    write_json(run / "config.json", config_to_dict(cfg))
    return run


def _hash(cfg: TrainConfig) -> str:
    return config_hash({k: v for k, v in config_to_dict(cfg).items() if k not in IGNORED_ON_RESUME})


@dataclass
class Run:
    """Everything :func:`build_run` wires together."""

    loop: PreferenceLoop
    run_dir: Path
    logger: MetricsLogger
    env_kwargs: dict[str, Any]


def build_run(cfg: TrainConfig) -> Run:
    """Validate ``cfg`` and wire env stack, agent, reward model, teacher and loop."""
    check_env_id(cfg.env.id)
    env_kwargs = cfg.env.parsed_kwargs()
    probe = make_env(cfg.env.id, env_kwargs)
    obs_space, act_space = probe.observation_space, probe.action_space
    probe.close()
    offline = cfg.trajectory_path is not None
    if not offline:
        check_agent_space(cfg.agent.algo, act_space)
        cfg.agent.algo = resolve_algo(cfg.agent.algo, act_space)  # config.json names the real agent
    if cfg.reward.output == "auto" and cfg.resume is None:  # config.json names the output used
        cfg.reward.output = resolve_reward_output(cfg, env_kwargs)
    lp = cfg.loop
    if lp.active_selection and cfg.reward.ensemble_size < 2 and lp.uncertainty_measure != "entropy":
        raise ValueError(
            "--loop.active-selection needs --reward.ensemble-size >= 2 (members to disagree), "
            "or --loop.uncertainty-measure entropy"
        )
    if cfg.teacher == "web" and cfg.store is None:
        raise ValueError("--teacher web needs --store PATH_OR_URL (the query store the web app serves)")
    human = cfg.teacher in ("terminal", "web")
    cfg.device = resolve_device(cfg.device)  # config.json names the device used
    if cfg.agent.device == "auto":
        cfg.agent.device = cfg.device
    torch.manual_seed(cfg.seed)  # reward-net initialisation: a run is reproducible from its seed
    net = cfg.reward.build(obs_space, act_space).to(
        cfg.device
    )  # (bad options fail before any file is written)
    trainer = RewardTrainer(net, dataclasses.replace(cfg.trainer, seed=cfg.seed))
    run = prepare_run_dir(cfg)
    teacher = cli_teacher(cfg, run.name)
    if cfg.teacher == "web":
        print(web_teacher_hint(cfg.store, run.name), file=sys.stderr, flush=True)  # type: ignore[arg-type]
    logger = MetricsLogger(run)
    callbacks = [ProgressBar(disable=not cfg.progress)]
    loop_cfg = dataclasses.replace(cfg.loop, seed=cfg.seed)
    side_env = make_env(cfg.env.id, env_kwargs, render=human)
    if offline:
        trajs = TrajectoryBatch.load(cfg.trajectory_path)  # type: ignore[arg-type]
        loop = PreferenceLoop(loop_cfg, net, trainer, teacher, trajectories=trajs, run_dir=run, logger=logger,
                              callbacks=callbacks, config_hash=_hash(cfg))  # fmt: skip
        return Run(loop, run, logger, env_kwargs)
    recorder = TrajectoryRecorder(
        make_vec_env(cfg.env.id, cfg.agent.n_envs, env_kwargs, cfg.seed, human), human
    )
    reward = LearnedReward(net)
    venv = LearnedRewardVecEnv(recorder, reward)
    if cfg.agent_path is not None:
        agent = load_agent(cfg.agent.algo, cfg.agent_path, venv, cfg.agent.device)
    else:
        agent = make_agent(cfg.agent, venv, seed=cfg.seed, learning_starts=cfg.loop.initial_steps)
    log_agent(agent, run)
    loop = PreferenceLoop(loop_cfg, net, trainer, teacher, agent=agent, recorder=recorder, reward=reward,
                          side_env=side_env, run_dir=run, logger=logger, callbacks=callbacks,
                          config_hash=_hash(cfg))  # fmt: skip
    return Run(loop, run, logger, env_kwargs)


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


def resolve_reward_output(cfg: TrainConfig, env_kwargs: dict[str, Any]) -> Literal["linear", "tanh"]:
    """``--reward.output auto``: tanh where random actions reach a termination (a fall, a goal)
    within ``--loop.initial-steps`` steps, linear where they only meet time limits.

    Measured (docs/benchmarks.md): the bounded output fixed InvertedPendulum and Hopper and left
    CartPole, Acrobot and the double pendulum at the oracle's level; on HalfCheetah, which never
    terminates, the linear output scored higher.
    """
    from prefrl.agents.rollout import collect_episodes

    env = make_env(cfg.env.id, env_kwargs)
    try:
        steps = max(1, min(cfg.loop.initial_steps, 2000))
        batch = collect_episodes(env, n_steps=steps, seed=cfg.seed + 31)
    finally:
        env.close()
    return "tanh" if bool(np.any(batch.terminated)) else "linear"


def log_agent(agent: Any, run_dir: Path) -> None:
    """Send SB3's own metrics (``rollout/ep_rew_mean``, ``train/actor_loss``, ...) to TensorBoard,
    in ``RUN/tb/agent`` beside prefrl's metrics (``tensorboard --logdir RUN/tb`` shows both)."""
    if agent is None:
        return
    from stable_baselines3.common.logger import configure

    agent.set_logger(configure(str(run_dir / "tb" / "agent"), ["tensorboard"]))


def reward_accuracy(cfg: TrainConfig, net: RewardNet, agent: Any, n_pairs: int = 500) -> float | None:
    """Accuracy of the learned reward on fresh oracle-labelled pairs of policy + random clips.

    Only pairs with a strict preference count; ``None`` when every pair is a tie (or no
    clip can be drawn).
    """
    env = make_env(cfg.env.id, cfg.env.parsed_kwargs())
    try:
        from prefrl.agents.rollout import collect_episodes

        parts = [collect_episodes(env, n_steps=2000, seed=cfg.seed + 99)]
        if agent is not None:
            parts.append(collect_episodes(env, n_steps=2000, seed=cfg.seed + 98,
                                          policy=lambda o: agent.predict(o)[0]))  # fmt: skip
        batch = TrajectoryBatch.concat(parts)
        rng = np.random.default_rng(cfg.seed + 5)
        return true_pair_accuracy(net, batch, n_pairs, cfg.loop.fragment_length, rng)
    except ValueError:
        return None
    finally:
        env.close()


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run (or resume) training; writes the run directory and returns the final report."""
    t0 = time.perf_counter()
    torch.set_num_threads(max(1, cfg.threads))
    r = build_run(cfg)
    loop = r.loop
    if cfg.resume is not None:
        algo = cfg.agent.algo
        venv = loop.agent.get_env() if loop.agent is not None else None
        if not loop.load_checkpoint(lambda p: load_agent(algo, p, venv, cfg.agent.device)):
            print(f"{r.run_dir}: no checkpoint yet: starting over with the {len(loop.dataset)} labels "
                  "given so far (none is asked again)", file=sys.stderr)  # fmt: skip
        else:
            r.logger.truncate(loop.env_steps)
            log_agent(loop.agent, r.run_dir)  # the agent was rebuilt from the checkpoint
    cpu0, t_run = time.process_time(), time.perf_counter()
    loop.run()
    train_cpu = time.process_time() - cpu0
    setup_s, t_after = t_run - t0, time.perf_counter()
    r.logger.close()
    report: dict[str, Any] = {"run_dir": str(r.run_dir), "env": cfg.env.id, "teacher": cfg.teacher}
    report["labels_used"] = len(loop.dataset)
    report["queries_asked"] = loop.state.queries_asked
    if cfg.save_preferences:
        loop.dataset.save(cfg.save_preferences)
    if loop.agent is not None:
        loop.agent.save(str(r.run_dir / "policy.zip"))
        rets = evaluate_returns(cfg.env.id, loop.agent, cfg.eval_episodes, env_kwargs=r.env_kwargs)
        rand = evaluate_returns(cfg.env.id, None, cfg.eval_episodes, env_kwargs=r.env_kwargs)
        report.update(agent=cfg.agent.algo, env_steps=loop.env_steps, true_return=float(rets.mean()),
                      true_return_std=float(rets.std()), random_return=float(rand.mean()))  # fmt: skip
    report["reward_accuracy"] = reward_accuracy(cfg, loop.net, loop.agent)
    report["label_tie_fraction"] = tie_fraction(loop.dataset.labels)
    if cfg.final_agent_steps > 0 and loop.agent is not None:
        report["fresh_agent_true_return"] = train_fresh_agent(cfg, loop.net, r)
    report["train_wall_s"] = loop.state.wall_s
    report["train_cpu_s"] = train_cpu  # this process only (since the last resume)
    # training time of every process of the run (resumes included) plus this one's set-up and evaluation
    report["wall_s"] = loop.state.wall_s + setup_s + (time.perf_counter() - t_after)
    report["resumed"] = cfg.resume is not None
    report["files"] = {
        "config": str(r.run_dir / "config.json"), "reward": str(r.run_dir / "reward.safetensors"),
        "preferences": str(r.run_dir / "preferences.npz"), "metrics": str(r.run_dir / "metrics.csv"),
        "tensorboard": str(r.run_dir / "tb"), "policy": str(r.run_dir / "policy.zip"),
        "checkpoints": str(r.run_dir / "checkpoints"),
    }  # fmt: skip
    if loop.agent is None:
        del report["files"]["policy"]
    write_json(r.run_dir / "report.json", report)
    return report


def train_fresh_agent(cfg: TrainConfig, net: RewardNet, r: Run) -> float:
    """Train a new agent on the frozen final reward; returns its mean true return."""
    reward = LearnedReward(net)
    venv = LearnedRewardVecEnv(make_vec_env(cfg.env.id, cfg.agent.n_envs, r.env_kwargs, cfg.seed + 1), reward)
    agent = make_agent(cfg.agent, venv, seed=cfg.seed + 1, learning_starts=cfg.loop.initial_steps)
    reward.normalizer.center = r.loop.reward is None or r.loop.reward.normalizer.center
    agent.learn(cfg.final_agent_steps)
    agent.save(str(r.run_dir / "fresh_policy.zip"))
    return float(evaluate_returns(cfg.env.id, agent, cfg.eval_episodes, env_kwargs=r.env_kwargs).mean())


def format_report(rep: dict[str, Any]) -> str:
    lines = ["", "=== prefrl train: report ==="]
    if "true_return" in rep:
        lines.append(
            f"true return of final policy : {rep['true_return']:.1f} "
            f"(random policy: {rep['random_return']:.1f})"
        )
    if "fresh_agent_true_return" in rep:
        lines.append(f"fresh agent on final reward : {rep['fresh_agent_true_return']:.1f}")
    acc = rep.get("reward_accuracy")
    acc_text = "n/a (every held-out pair was a tie)"
    if acc is not None:
        acc_text = f"{acc:.3f} (fresh clips of the final and a random policy, ranked by the true reward)"
    lines.append(f"reward accuracy (held out)  : {acc_text}")
    lines.append(f"labels used                 : {rep['labels_used']} ({rep['queries_asked']} queries asked)")
    ties = rep.get("label_tie_fraction")
    if ties is not None:
        lines.append(f"labels that were ties       : {ties:.0%}")
        if ties >= TIE_WARN:
            lines += ["", "warning: most labels were ties. " + TIE_HINT]
    resumed = " (all processes of the run, resumes included)" if rep.get("resumed") else ""
    lines.append(f"time taken                  : {rep['wall_s']:.0f} s{resumed}")
    lines.append(f"run directory               : {rep['run_dir']}")
    lines += [f"  {k:<12} {v}" for k, v in rep["files"].items()]
    return "\n".join(lines)


def interrupted_message(cfg: TrainConfig) -> str:
    """What Ctrl-C left behind and the command that continues the run."""
    run = cfg.resume or cfg.run_dir
    if run is None or not (Path(run) / "config.json").exists():
        return "\nprefrl train: interrupted before the run directory was made; nothing to resume"
    latest = Path(run) / "checkpoints" / "LATEST"
    where = "from the beginning"
    if latest.exists():
        where = f"from its last checkpoint ({latest.read_text().strip()})"
    return (
        f"\nprefrl train: interrupted. Every label so far is saved in {run}/preferences.npz; the run "
        f"continues {where}, keeping those labels, with:\n  prefrl train --resume {run}"
    )


def main(argv: list[str]) -> int:
    try:
        try:
            cfg = parse_args(argv)
        except SystemExit as e:  # tyro: --help, or an option it rejected (message already printed)
            if e.code not in (0, None):
                return int(e.code) if isinstance(e.code, int) else 2
            raise
        if cfg.print_config:  # printed as a config to train with (--config FILE): not to print again
            print(json.dumps(config_to_dict(dataclasses.replace(cfg, print_config=False)), indent=2))
            return 0
        try:
            rep = train(cfg)
        except KeyboardInterrupt:
            print(interrupted_message(cfg), file=sys.stderr)
            return 130
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        print(f"prefrl train: error: {e}", file=sys.stderr)
        return 2
    print(format_report(rep))
    return 0
