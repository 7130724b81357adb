"""``prefrl interpret``: evaluate and visualise what a learned reward rewards.

Every subcommand reads a run directory (``--run``) or a bare reward model
(``--reward``) with a trajectory file (``--trajectories``) or an environment to roll out
randomly (``--env``), and writes PNGs / JSON under ``--out``. ``report`` runs all that
applies and bundles it into one HTML page.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import torch
import tyro

from prefrl.data.trajectories import TrajectoryBatch
from prefrl.envs.gridworld import GridWorldEnv
from prefrl.interpret import attribution as attr
from prefrl.interpret.evaluation import (
    Coverage,
    epic_distance,
    heldout_preference_metrics,
    reward_correlations,
)
from prefrl.interpret.events import event_profiles, plot_event_profiles
from prefrl.interpret.plots import (
    plot_gridworld_heatmaps,
    plot_reward_curves,
    plot_reward_slice,
    plot_training_curves,
)
from prefrl.interpret.policies import plot_policy_ranking, rank_policies
from prefrl.interpret.report import write_html_report
from prefrl.interpret.shaping import ShapingConfig, learn_shaping, plot_shaping
from prefrl.interpret.sources import Sources
from prefrl.interpret.supervised import SupervisedConfig, fit_supervised
from prefrl.preference.trainer import true_pair_accuracy
from prefrl.rewards import build_reward_net, load_reward_net, save_reward_net
from prefrl.rewards.spaces import is_image_space
from prefrl.storage.checkpoint import dumps
from prefrl.threads import DEFAULT_THREADS, set_threads
from prefrl.training.config import HELDOUT_PAIRS


@dataclass
class Common:
    run: Annotated[Path | None, tyro.conf.arg(metavar="DIR", help_behavior_hint="(optional)")] = None
    """Run directory (config.json, reward.safetensors, preferences.npz, metrics.csv)."""
    reward: Annotated[
        Path | None, tyro.conf.arg(metavar="FILE", help_behavior_hint="(default: RUN/reward.safetensors)")
    ] = None
    """Reward model file (.safetensors)."""
    trajectories: Annotated[Path | None, tyro.conf.arg(metavar="FILE", help_behavior_hint="(optional)")] = (
        None
    )
    """Trajectory file (.npz from TrajectoryBatch.save); default: run preference fragments, else rollouts."""
    env: Annotated[
        str | None,
        tyro.conf.arg(
            name="env.id", aliases=("--env",), metavar="ID", help_behavior_hint="(default: from config.json)"
        ),
    ] = None
    """Gymnasium id for rollouts and exact tables (e.g. prefrl/GridWorld-v0), as in prefrl train --env.id."""
    episodes: int = 20
    """Random episodes to collect when transitions come from --env."""
    seed: int = 0
    """Seed for rollouts and sampling."""
    out: Annotated[
        Path | None,
        tyro.conf.arg(metavar="DIR", help_behavior_hint="(default: RUN/interpret, or ./interpret)"),
    ] = None
    """Output directory."""
    threads: int = DEFAULT_THREADS
    """CPU threads for torch and BLAS (1 avoids oversubscription on small shared machines)."""

    def sources(self) -> Sources:
        return Sources(self.run, self.reward, self.trajectories, self.env, self.episodes, self.seed)

    def out_dir(self) -> Path:
        d = self.out or (self.run / "interpret" if self.run is not None else Path("interpret"))
        d.mkdir(parents=True, exist_ok=True)
        return d


def _coverage(src: Sources, kind: str, samples: int, seed: int) -> Coverage:
    env = src.tabular_env() if kind == "tabular" else None
    if kind == "tabular":
        if env is None:
            raise ValueError("tabular coverage needs a tabular --env such as prefrl/GridWorld-v0")
        return Coverage.tabular(env.n_states, env.action_space.n)
    if kind == "uniform":
        net = src.require_net()
        return Coverage.from_spaces(net.observation_space, net.action_space, n=samples, seed=seed)
    return Coverage.from_batch(src.require_batch(), n=samples, rng=np.random.default_rng(seed))


@dataclass
class Epic(Common):
    """EPIC distance between the reward model and another model or the env's true reward."""

    other: Path | None = None
    """Second reward model (.safetensors); without it, compare with the true reward of a tabular --env."""
    gamma: float = 0.99
    """Discount used in canonicalisation."""
    coverage: Literal["rollouts", "uniform", "tabular"] = "rollouts"
    """Coverage: transitions of the trajectories, independent samples of the spaces, or all (s, a, s')."""
    samples: int = 2000
    """Coverage transitions (rollouts/uniform)."""

    def execute(self) -> dict[str, float]:
        src = self.sources()
        net = src.require_net()
        if self.other is not None:
            other = load_reward_net(self.other).eval()
        else:
            env = src.tabular_env()
            if env is None:
                raise ValueError("pass --other MODEL, or a tabular --env whose true reward is known")
            other = env.reward_table()
        d = epic_distance(net, other, _coverage(src, self.coverage, self.samples, self.seed), self.gamma)
        return _dump({"epic": d}, self.out_dir() / "epic.json")


@dataclass
class Evaluate(Common):
    """All metrics that apply: EPIC to the true reward (tabular env), correlations, held-out accuracy."""

    gamma: float = 0.99
    """Discount used by EPIC."""
    val_fraction: float = 0.1
    """The trainer's validation split of the run's preferences."""

    def execute(self) -> dict[str, float]:
        src = self.sources()
        return _dump(
            evaluate_all(src, self.gamma, self.val_fraction, self.seed), self.out_dir() / "metrics.json"
        )


def evaluate_all(src: Sources, gamma: float, val_fraction: float, seed: int) -> dict[str, float]:
    net, out = src.require_net(), {}
    env = src.tabular_env()
    if env is not None:
        out["epic_true"] = epic_distance(
            net, env.reward_table(), Coverage.tabular(env.n_states, env.action_space.n), gamma
        )
    batch = src.require_batch()
    ds = src.preferences()
    if batch.rews is not None:
        out.update({f"{k}": v for k, v in reward_correlations(net, batch).items()})
        # the held-out accuracy prefrl reports everywhere: fresh clip pairs ranked by the true reward
        length = ds.fragments.length if ds is not None and ds.fragments is not None else 50
        acc = true_pair_accuracy(net, batch, HELDOUT_PAIRS, length, np.random.default_rng(seed))
        if acc is not None:
            out.update(heldout_accuracy=acc, heldout_pairs=HELDOUT_PAIRS)
    if ds is not None and len(ds):  # the labels the trainer held out (few: a tenth of the labels)
        m = heldout_preference_metrics(net, ds, val_fraction)
        out.update(val_accuracy=m["accuracy"], val_loss=m["loss"], val_pairs=m["pairs"])
    return out


@dataclass
class Curves(Common):
    """Learned vs true reward along episodes (PNG)."""

    show: tuple[int, ...] = (0, 1, 2, 3)
    """Episode indices to draw."""

    def execute(self) -> dict[str, str]:
        src = self.sources()
        batch = src.require_batch()
        eps = [e for e in self.show if e < len(batch)] or [0]
        return {
            "curves": str(plot_reward_curves(src.require_net(), batch, self.out_dir() / "curves.png", eps))
        }


@dataclass
class Heatmap(Common):
    """Reward per state and action of a gridworld, true beside learned (PNG)."""

    def execute(self) -> dict[str, str]:
        src = self.sources()
        if src.env is None:
            src.env = "prefrl/GridWorld-v0"
        env = src.tabular_env()
        if not isinstance(env, GridWorldEnv):
            raise ValueError(f"heatmaps need a gridworld --env (e.g. prefrl/GridWorld-v0), got {src.env!r}")
        p = plot_gridworld_heatmaps(
            {"true": env.reward_table(), "learned": src.require_net()}, env, self.out_dir() / "heatmap.png"
        )
        return {"heatmap": str(p)}


@dataclass
class Slice(Common):
    """Reward against one or two observation dimensions, others at their median (PNG)."""

    dims: tuple[int, ...] = (0,)
    """One or two observation dimensions."""

    def execute(self) -> dict[str, str]:
        src = self.sources()
        batch = src.require_batch() if (src.trajectories or src.run or src.env) else None
        name = "slice_" + "_".join(map(str, self.dims)) + ".png"
        return {
            "slice": str(plot_reward_slice(src.require_net(), self.dims, self.out_dir() / name, batch=batch))
        }


@dataclass
class Training(Common):
    """Training curves of a run from its metrics.csv: training.png (the panels read first: true
    return, the agent's action entropy where it logs one, reward accuracy, correlation, labels,
    loss, time) and training_all.png (every metric)."""

    metrics: Path | None = None
    """metrics.csv to plot; default: RUN/metrics.csv."""

    def execute(self) -> dict[str, str]:
        path = self.metrics or self.sources().metrics_csv()
        if path is None:
            raise ValueError("no metrics: pass --metrics FILE.csv or a --run DIR with metrics.csv")
        out = self.out_dir()
        return {
            "training": str(plot_training_curves(path, out / "training.png")),
            "training_all": str(plot_training_curves(path, out / "training_all.png", panels="all")),
        }


@dataclass
class Saliency(Common):
    """Which pixels drive the reward along a clip: gradients, integrated gradients, occlusion (PNG)."""

    episode: int = 0
    """Episode of the trajectories to explain."""
    start: int = 0
    """First step of the clip."""
    length: int = 6
    """Steps in the clip."""
    methods: tuple[Literal["gradient", "integrated", "occlusion"], ...] = (
        "gradient",
        "integrated",
        "occlusion",
    )
    """Attribution methods to show."""
    patch: int = 8
    """Occlusion patch size (pixels)."""

    def execute(self) -> dict[str, str]:
        src = self.sources()
        net, batch = src.require_net(), src.require_batch()
        if not 0 <= self.episode < len(batch):
            raise ValueError(f"--episode {self.episode} out of range: {len(batch)} episodes")
        s, t = int(batch.starts[self.episode]), int(batch.lengths[self.episode])
        if not 0 <= self.start < t:
            raise ValueError(f"--start {self.start} out of range: episode {self.episode} has {t} steps")
        rows = np.arange(s + self.start, s + min(t, self.start + self.length))
        inputs = attr.encode_images(
            net, batch.obs[rows], batch.acts[rows], batch.obs[rows + 1], batch.dones[rows]
        )
        maps, r = {}, None
        if "gradient" in self.methods:
            g, r = attr.gradient_saliency(net, inputs)
            maps["gradient"] = attr.heatmap(g)
        if "integrated" in self.methods:
            g, r = attr.integrated_gradients(net, inputs, baseline="mean")
            maps["integrated gradients"] = attr.heatmap(g)
        if "occlusion" in self.methods:
            g, r = attr.occlusion(net, inputs, patch=self.patch, stride=max(1, self.patch // 2))
            maps["occlusion"] = attr.heatmap(g)
        if r is None:
            raise ValueError("choose at least one --methods")
        path = attr.plot_saliency(
            inputs.images, maps, r.detach().numpy(), self.out_dir() / "saliency.png", len(rows)
        )
        return {"saliency": str(path)}


@dataclass
class Extremes(Common):
    """The dataset transitions the model scores highest and lowest (PNG for images, JSON always)."""

    k: int = 8
    """How many of each."""

    def execute(self) -> dict[str, str]:
        src = self.sources()
        net, batch = src.require_net(), src.require_batch()
        ex = attr.extremes(net, batch, self.k)
        out = self.out_dir()
        info = {k: v.tolist() for k, v in ex.items()}
        if batch.rews is not None:
            info["top_true_rewards"] = batch.rews[ex["top_rows"]].tolist()
            info["bottom_true_rewards"] = batch.rews[ex["bottom_rows"]].tolist()
        _dump(info, out / "extremes.json")
        res = {"extremes_json": str(out / "extremes.json")}
        if is_image_space(net.observation_space):
            rows = np.concatenate([ex["top_rows"], ex["bottom_rows"]])
            titles = [f"top {i + 1}: {v:.3g}" for i, v in enumerate(ex["top_rewards"])]
            titles += [f"bottom {i + 1}: {v:.3g}" for i, v in enumerate(ex["bottom_rewards"])]
            img = attr.to_display(net, batch.obs[rows])
            res["extremes"] = str(
                attr.plot_image_grid(img, titles, out / "extremes.png", ncol=len(ex["top_rows"]))
            )
        return res


@dataclass
class Synthesize(Common):
    """Observations that maximise and minimise the reward (regularised gradient ascent) (PNG)."""

    action: int = 0
    """Action (index, for Discrete action spaces) paired with the synthesised observations."""
    n: int = 4
    """Images per direction."""
    steps: int = 200
    """Optimisation steps."""
    tv: float = 0.3
    """Total-variation penalty."""

    def execute(self) -> dict[str, str]:
        net = self.sources().require_net()
        hi, r_hi = attr.synthesize(net, self.action, True, self.n, self.steps, tv=self.tv, seed=self.seed)
        lo, r_lo = attr.synthesize(net, self.action, False, self.n, self.steps, tv=self.tv, seed=self.seed)
        img = attr.to_display(net, np.concatenate([hi, lo]))
        titles = [f"max: {v:.3g}" for v in r_hi] + [f"min: {v:.3g}" for v in r_lo]
        return {
            "synthesize": str(
                attr.plot_image_grid(img, titles, self.out_dir() / "synthesized.png", ncol=self.n)
            )
        }


@dataclass
class Features(Common):
    """A dictionary of a CNN reward's features: NMF of a convolution's activations over the frames,
    each feature's top frames, patch, synthesised input and share of the reward (features.png, .json)."""

    features: int = 6
    """Number of NMF features K (at most the layer's channels)."""
    layer: int = -1
    """Convolution to factorise, counted from 0 (-1: the last)."""
    member: int = 0
    """Ensemble member whose activations are factorised."""
    frames: int = 2000
    """At most this many transitions of the trajectories (a seeded sample) make the dataset."""
    top: int = 4
    """Top frames shown per feature."""
    steps: int = 200
    """Optimisation steps of each feature's synthesised input."""
    progress: bool = True
    """Progress bars on stderr while activations and attributions are computed (--no-progress: none)."""

    def execute(self) -> dict[str, Any]:
        from prefrl.interpret.feature_figure import FeatureOptions, explain_features

        src = self.sources()
        net, batch = src.require_net(), src.require_batch()
        opts = FeatureOptions(
            self.features, self.layer, self.member, self.frames, self.top, self.steps, seed=self.seed
        )
        info = explain_features(net, batch, self.out_dir(), opts, progress=self.progress)
        return {"features": info["png"], "features_json": info["json"],
                "explained_variance": info["explained_variance"]}  # fmt: skip


@dataclass
class Shape(Common):
    """Learn a potential that makes the reward sparse or smooth; save it and show both (PNG, model)."""

    objective: Literal["sparse", "smooth"] = "sparse"
    """Make the shaped reward sparse (small |r'|) or smooth along episodes."""
    gamma: float = 0.99
    """Discount of the shaping term."""
    steps: int = 500
    """Optimisation steps."""

    def execute(self) -> dict[str, str | float]:
        src = self.sources()
        net, batch = src.require_net(), src.require_batch()
        shaped, m = learn_shaping(net, batch, ShapingConfig(self.objective, self.gamma, steps=self.steps))
        out = self.out_dir()
        res: dict[str, str | float] = {**m, "model": str(save_reward_net(shaped, out / "shaped.safetensors"))}
        res["shaping"] = str(plot_shaping(net, shaped, batch, out / "shaping.png"))
        env = src.tabular_env()
        if isinstance(env, GridWorldEnv):
            res["shaping_heatmap"] = str(
                plot_gridworld_heatmaps({"original": net, "shaped": shaped}, env, out / "shaping_heatmap.png")
            )
        return res


@dataclass
class Supervised(Common):
    """Fit a reward of the same architecture to true rewards, and compare it with the model."""

    epochs: int = 30
    """Passes over the transitions."""
    lr: float = 3e-3
    """Learning rate."""
    gamma: float = 0.99
    """Discount used by EPIC in the comparison."""

    def execute(self) -> dict[str, float | str]:
        src = self.sources()
        net, batch = src.require_net(), src.require_batch()
        torch.manual_seed(self.seed)
        sup = build_reward_net(net.config)
        m = fit_supervised(sup, batch, SupervisedConfig(lr=self.lr, epochs=self.epochs, seed=self.seed))
        res: dict[str, float | str] = {f"supervised_{k}": v for k, v in m.items()}
        cov = Coverage.from_batch(batch, n=2000, rng=np.random.default_rng(self.seed))
        res["epic_model_vs_supervised"] = epic_distance(net, sup, cov, self.gamma)
        res.update({f"model_{k}": v for k, v in reward_correlations(net, batch).items()})
        res.update({f"supervised_{k}": v for k, v in reward_correlations(sup, batch).items()})
        res["model"] = str(save_reward_net(sup, self.out_dir() / "supervised.safetensors"))
        return _dump(res, self.out_dir() / "supervised.json")


@dataclass
class Policies(Common):
    """Policies ranked by the learned reward and by the true one: does the reward misrank
    behaviour, or did the agent not optimise it? (policies.png, .json)."""

    compare: Annotated[tuple[Path, ...], tyro.conf.arg(metavar="FILE [FILE ...]")] = ()
    """Trajectory files (.npz, e.g. from prefrl rollouts), one per policy, each named by its
    file name: the run's policy, a true-reward agent's, random actions."""

    def execute(self) -> dict[str, Any]:
        net = self.sources().require_net()
        names = [p.stem for p in self.compare]
        if len(set(names)) != len(names):
            raise ValueError(f"--compare files need distinct names (their stems), got {names}")
        res = rank_policies(net, {p.stem: TrajectoryBatch.load(p) for p in self.compare})
        res["png"] = str(plot_policy_ranking(res, self.out_dir() / "policies.png"))
        return _dump(res, self.out_dir() / "policies.json")


@dataclass
class Events(Common):
    """Where the reward puts the value of sparse true-reward events (a point lost, a coin): what one
    event adds to the learned and the true reward at each step around it, and the share of its value
    the learned reward keeps (events.png, .json)."""

    window: int = 30
    """Steps before and after each event to profile."""

    def execute(self) -> dict[str, Any]:
        src = self.sources()
        res = event_profiles(src.require_net(), src.require_batch(), self.window)
        res["png"] = str(plot_event_profiles(res, self.out_dir() / "events.png"))
        return _dump(res, self.out_dir() / "events.json")


@dataclass
class Report(Common):
    """Everything that applies, bundled into one HTML page (index.html)."""

    gamma: float = 0.99
    """Discount used by EPIC and shaping."""
    dims: tuple[int, ...] = (0,)
    """Observation dimensions for the reward slice (vector observations)."""
    shape_steps: int = 300
    """Optimisation steps of the shaping potential."""

    def execute(self) -> dict[str, str]:
        src = self.sources()
        common = {f: getattr(self, f) for f in Common.__dataclass_fields__}
        out = self.out_dir()
        images: list[tuple[str, Path]] = []
        notes: list[str] = []
        metrics: dict[str, float] = {}
        steps: list[tuple[str, Any]] = []  # (caption, a subcommand with execute())
        if src.metrics_csv() is not None:
            steps.append(("Training curves", Training(**common)))
        if src.reward is not None:
            metrics = evaluate_all(src, self.gamma, 0.1, self.seed)
            net = src.require_net()
            steps.append(("Learned vs true reward along episodes", Curves(**common)))
            env = src.tabular_env()
            if isinstance(env, GridWorldEnv):
                steps.append(("Reward per state and action", Heatmap(**common)))
            if is_image_space(net.observation_space):
                steps += [
                    ("Saliency", Saliency(**common)),
                    ("Extremes", Extremes(**common)),
                    ("Synthesised observations", Synthesize(**common)),
                ]
            else:
                if net.observation_space.shape is not None and len(net.observation_space.shape) == 1:
                    steps.append(("Reward slice", Slice(**common, dims=self.dims)))
                steps.append(
                    ("Shaped for readability", Shape(**common, gamma=self.gamma, steps=self.shape_steps))
                )
        for caption, cmd in steps:
            try:
                res = cmd.execute()
            except ValueError as e:
                notes.append(f"{caption}: skipped ({e})")
                continue
            images += [
                (f"{caption}: {k}", Path(v))
                for k, v in res.items()
                if isinstance(v, str) and v.endswith(".png")
            ]
        path = write_html_report(out / "index.html", images, metrics, notes=notes)
        return {"report": str(path)}


def _dump(d: dict[str, Any], path: Path) -> dict[str, Any]:
    path.write_text(dumps(d, indent=2))
    return d


SUBCOMMANDS: dict[str, Callable[..., Any]] = {
    "evaluate": Evaluate,
    "epic": Epic,
    "curves": Curves,
    "heatmap": Heatmap,
    "slice": Slice,
    "training": Training,
    "saliency": Saliency,
    "extremes": Extremes,
    "synthesize": Synthesize,
    "features": Features,
    "shape": Shape,
    "supervised": Supervised,
    "policies": Policies,
    "events": Events,
    "report": Report,
}


def main(argv: list[str]) -> int:
    """Parse ``argv`` (after ``prefrl interpret``), run the subcommand, print its result as JSON."""
    cmd = tyro.extras.subcommand_cli_from_dict(
        SUBCOMMANDS,
        prog="prefrl interpret",
        description=(__doc__ or "").replace("``", ""),  # plain text in --help
        args=argv,
    )
    try:
        set_threads(cmd.threads)
        result = cmd.execute()
    except (ValueError, FileNotFoundError) as e:
        print(f"prefrl interpret: error: {e}", file=sys.stderr)
        return 2
    print(dumps(result, indent=2))
    return 0
