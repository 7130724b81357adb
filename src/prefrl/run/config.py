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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import tyro

from prefrl.agents.sb3 import (
    AgentConfig,
)
from prefrl.config_types import OptDir, OptFile
from prefrl.envs.config import EnvConfig
from prefrl.preference.trainer import RewardTrainerConfig
from prefrl.rewards.config import RewardNetConfig
from prefrl.run.resume_check import read_run_config
from prefrl.storage.checkpoint import read_json
from prefrl.teachers.spec import TeacherName
from prefrl.training.config import LoopConfig

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# optional paths: a metavar naming what to pass and no "(default: None)" in --help
OptStore = Annotated[
    str | None, tyro.conf.arg(metavar="PATH|URL", help_behavior_hint="(only with --teacher web)")
]
RunId = Annotated[str | None, tyro.conf.arg(metavar="ID", help_behavior_hint="(default: a new one)")]
RewardFrom = Annotated[str | None, tyro.conf.arg(metavar="RUN|FILE", help_behavior_hint="(optional)")]
RunDir = Annotated[
    str | None, tyro.conf.arg(metavar="DIR", help_behavior_hint="(default: runs/<env>-<agent>-<time>)")
]


ADDED: dict[str, dict[str, object]] = {
    "LoopConfig": {
        "initial_steps_per_label": 0,
        "exploration_bonus": 0.0,
        "exploration_bonus_schedule": "steps",
        "exploration_bonus_gate": 0.0,
        "agent_reset_at": 0.0,
    },
    "RewardTrainerConfig": {"l2_init": 0.0},
}
"""Options a config file of an earlier release may lack (added since, or written before its
default became auto), per config section: such a run ran with this value, and resumes so."""


@dataclass(frozen=True)
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
    directory, whose environment it takes, one of its checkpoint directories RUN/checkpoints/iter_*,
    for the reward as the run had it then, or a reward.safetensors file), normalised as that run's
    agent saw it: no queries, no reward training (see docs/integrations.md)."""
    agent_path: OptFile = None
    """Warm start: initial policy from this policy.zip (prefrl's own format, as prefrl train writes
    it), with --reward-from too."""
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
    page: bool = True
    """At the end, write the run's HTML page (RUN/report/index.html, as prefrl report RUN does);
    --no-page skips it (it renders an episode of the policy: seconds, minutes for MuJoCo tasks)."""
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

REMOVED: dict[str, dict[str, object]] = {
    "LoopConfig": {"random_action_size": "full"},
}
"""Options removed since an earlier release (docs/techniques.md, "Removed"), per config section:
name -> the value that behaves as prefrl does now. A config file that gives that value loads
(the option is dropped); any other value is refused with one line naming the option."""

IGNORED_ON_RESUME = ("resume", "force", "config", "print_config", "progress", "run_dir", "threads", "page")


# ------------------------------------------------------------------------ config files
Section = TypeVar("Section", bound="DataclassInstance")
"""A config dataclass: :class:`TrainConfig` or one of its sections."""


def config_to_dict(cfg: TrainConfig) -> dict[str, Any]:
    """``cfg`` as the JSON object ``config.json`` holds (its sections are objects that callers read
    and edit by name, hence ``Any`` rather than :data:`~prefrl.data.json_types.JSONObject`)."""
    return dataclasses.asdict(cfg)


def _from_dict(cls: type[Section], data: object, where: str) -> Section:
    """``cls`` (a config or one of its sections) from the JSON object ``data``: options of older
    releases renamed, retired, removed or added as they ran, unknown ones refused."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if cls is LoopConfig and "allow_variable_horizon" in data:  # retired: episode ends are handled
        data = {k: v for k, v in data.items() if k != "allow_variable_horizon"}
        print(
            f"{where}: ignoring retired option allow_variable_horizon (terminating episodes "
            "are handled by absorbing states)",
            file=sys.stderr,
        )
    if (
        cls is LoopConfig
        and data.get("agent_reset_at", 0.0) is None
        and data.get("agent_reset_layers") == "all"
    ):
        # written before the restart on images became the default (2026-12-02): None then meant never
        data = {**data, "agent_reset_at": 0.0, "agent_reset_layers": None}
    for old, new in RENAMED.get(cls.__name__, {}).items():  # config files of older versions
        if old in data and new not in data:
            data = {(new if k == old else k): v for k, v in data.items()}
            print(f"{where}: option {old} is now called {new}", file=sys.stderr)
    for name, same in REMOVED.get(cls.__name__, {}).items():  # a run from before the removal
        if name in data and data[name] != same:
            raise ValueError(
                f"{where}: option {name}={json.dumps(data[name])} was removed from prefrl "
                f"(docs/techniques.md, Removed); only {json.dumps(same)}, today's behaviour, still loads"
            )
        data = {k: v for k, v in data.items() if k != name}
    for name, before in ADDED.get(cls.__name__, {}).items():  # a run from before the option
        data = {name: before, **data}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: unknown option(s) {unknown}; valid: {sorted(fields)}")
    kw: dict[str, object] = {}
    for name, value in data.items():
        default = getattr(cls(), name) if name in ("env", "agent", "loop", "reward", "trainer") else None
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            kw[name] = _from_dict(type(default), value, f"{where}.{name}")
        elif isinstance(value, list) and name == "l2_band":
            kw[name] = tuple(value)
        else:
            kw[name] = value
    return cls(**kw)


def config_from_dict(data: object, where: str = "config") -> TrainConfig:
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


def _differences(old: Mapping[str, object], new: Mapping[str, object], prefix: str = "--") -> list[str]:
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
    """Command line (over ``--config FILE`` or a resumed run's config) -> :class:`TrainConfig`,
    as given: its ``auto`` choices are made by :func:`~prefrl.run.resolve.resolve`."""
    default = TrainConfig()
    for flag in ("--loop.seed", "--trainer.seed"):
        if any(a == flag or a.startswith(flag + "=") for a in argv):
            raise ValueError(f"{flag} is set from --seed (one seed for env, agent, loop, trainer)")
    resume, cfg_file = _flag_value(argv, "--resume"), _flag_value(argv, "--config")
    if resume is not None:
        default = config_from_dict(read_run_config(Path(resume)), f"{resume}/config.json")
    elif cfg_file is not None:
        default = config_from_dict(read_json(Path(cfg_file), "config file"), cfg_file)
    cfg = tyro.cli(TrainConfig, default=default, args=argv, prog="prefrl train")
    if resume is not None:
        cfg = dataclasses.replace(cfg, resume=resume, run_dir=resume)
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
