"""One static HTML page per run (``prefrl report RUN``): what the run learned, at a glance.

The page (``RUN/report/index.html``) opens from disk, without a server: its plots are PNGs
embedded as data URIs and the video of the final policy is a WebM file beside it. It shows

- the training curves of ``metrics.csv`` (true return, held-out accuracy, correlation, labels),
- the labels used (how many, how many ties) from ``preferences.npz``,
- the learned against the true return of fresh clips of the final and a random policy,
- a video of the final policy (one episode),
- the fresh clip pairs on which the learned reward and the run's (simulated) teacher disagree
  most, as filmstrips of the environment's rendered frames,
- for a CNN reward, its feature dictionary on the labelled clips' frames (bounded: seconds; see
  :data:`PAGE_FEATURES`).

Fresh clips come from ``episodes`` episodes of each policy, collected without frames; the
frames the page shows are rendered afterwards by replaying them (:mod:`prefrl.interpret.replay`),
at most ``frame_side`` pixels high, so a Pendulum report takes seconds.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import gymnasium as gym
import numpy as np
import tyro
from matplotlib.figure import Figure
from stable_baselines3.common.base_class import BaseAlgorithm

from prefrl.agents.evaluate import DETERMINISTIC, evaluation_mode
from prefrl.agents.policy_io import load_agent
from prefrl.agents.rollout import collect_episodes
from prefrl.agents.sb3 import AUTO, make_env, make_vec_env, resolve_algo
from prefrl.data.dataset import PreferenceDataset
from prefrl.data.fragments import Fragments, random_pairs, sample_fragments
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.envs.config import EnvConfig
from prefrl.interpret.evaluation import predicted_rewards
from prefrl.interpret.feature_figure import FeatureOptions, explain_features
from prefrl.interpret.plots import new_figure, plot_training_curves
from prefrl.interpret.replay import Recorded, replay_frames
from prefrl.interpret.sources import batch_from_fragments
from prefrl.rewards.cnn import CNNReward
from prefrl.rewards.io import load_reward_net
from prefrl.rewards.nets import RewardNet
from prefrl.seeding import stream, stream_seed
from prefrl.storage.checkpoint import read_json
from prefrl.storage.clips import encode_video
from prefrl.teachers.synthetic import PRESETS, SyntheticTeacher

VIDEO_FRAMES = 500
"""At most this many frames of the policy's episode go into the page's video: longer episodes
(1,000 steps on MuJoCo and DMC tasks) keep every k-th frame at 30/k frames a second, so the
video plays as long and half as many frames are rendered."""
VIDEO_FPS = 30
VIDEO_MIN_WIDTH = 400
"""The page shows the video at least this many pixels wide: small frames (Pendulum's, shrunk to
:attr:`PageConfig.frame_side`, are 167 pixels) are enlarged by a whole factor, pixelated."""


def video_stride(steps: int) -> int:
    """Every how many steps a frame of a ``steps``-step episode goes into the video."""
    return max(1, math.ceil(steps / VIDEO_FRAMES))


def video_display_width(frame_width: int) -> int:
    """The width the page shows a video of ``frame_width``-pixel frames at: a whole multiple of
    it, at least :data:`VIDEO_MIN_WIDTH` (the browser enlarges it, nearest-neighbour)."""
    frame_width = max(1, frame_width)
    return frame_width * max(1, math.ceil(VIDEO_MIN_WIDTH / frame_width))


def percent(fraction: float | None) -> str:
    """An accuracy as the page writes every accuracy: ``0.918`` -> ``91.8%``."""
    return "n/a" if fraction is None or not math.isfinite(fraction) else f"{fraction:.1%}"


HELDOUT = "reward accuracy on held-out pairs"
"""The summary's accuracy: ``report.json``'s ``reward_accuracy``, the one ``prefrl train`` prints."""
HELDOUT_NOTE = (
    f"<p class='note'>{HELDOUT}: of fresh clip pairs drawn when training ended (random actions and "
    "the final policy's sampled ones; ties left out), the share the learned reward orders as the true "
    "return does (<code>reward_accuracy</code> in report.json, the accuracy <code>prefrl train</code> "
    "reports). The training curves' heldout accuracy is the same measure on each iteration's new "
    "episodes of the agent alone: clips of one policy are closer to each other, so it is usually "
    "lower.</p>"
)
AGREEMENT = "agreement with the teacher on these fresh pairs"
"""The fresh-clips section's accuracy, on the page's own clips and ranked by the run's teacher."""

PAGE_DIR = "report"
"""The page's folder inside the run directory: ``index.html`` and ``policy.webm``."""


@dataclass(frozen=True)
class PageConfig:
    """Write one HTML page showing what a run learned (RUN/report/index.html)."""

    run: tyro.conf.Positional[Path]
    """The run directory (written by prefrl train)."""
    out: Annotated[Path | None, tyro.conf.arg(metavar="DIR", help_behavior_hint="(default: RUN/report)")] = (
        None
    )
    """Folder of the page (index.html, the video and the PNGs)."""
    video: bool = True
    """Record one episode of the final policy as a video on the page (--no-video: none)."""
    pairs: int = 4
    """Show this many fresh clip pairs on which the learned reward and the teacher disagree most
    (0: none, and no frames are rendered)."""
    episodes: int = 2
    """Rendered episodes of the final policy and as many of a random policy, cut into fresh clips."""
    clips: int = 200
    """Fresh clips sampled from those episodes (as many pairs are compared)."""
    frame_side: int = 192
    """Rendered frames are shrunk (every k-th pixel) to at most this many pixels high."""
    seed: int = 20_000
    """Seed of the fresh episodes and clips (apart from training's and evaluation's)."""


class SmallFrames(gym.Wrapper):
    """``render()`` returns every ``k``-th pixel, so that ``max_side`` pixels or fewer remain."""

    def __init__(self, env: gym.Env, max_side: int) -> None:
        super().__init__(env)
        self.max_side = max(16, max_side)

    def render(self) -> np.ndarray:
        frame = np.asarray(self.env.render())
        k = max(1, math.ceil(frame.shape[0] / self.max_side))
        return np.ascontiguousarray(frame[::k, ::k])


def data_uri(fig: Figure) -> str:
    """``fig`` as a PNG data URI (``data:image/png;base64,...``)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def png_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


@dataclass
class FreshClips:
    """Fresh clips of the final and a random policy with what the teacher and the reward make of them."""

    fragments: Fragments
    source: np.ndarray  # [N] "policy" | "random"
    true: np.ndarray  # [N] true (undiscounted) returns
    learned: np.ndarray  # [N] learned returns (ensemble mean)
    teacher: np.ndarray  # [N] the teacher's returns (myopic weighting for a myopic teacher)
    policy_frames: np.ndarray | None  # [T, H, W, 3] one episode of the final policy
    recorded: list[Recorded] | None = None  # the episodes by part, to render frames afterwards


def wants_frames(cfg: PageConfig, agent: BaseAlgorithm | None) -> bool:
    """Whether the page shows frames: clip pairs, or the video of a policy."""
    return cfg.pairs > 0 or (cfg.video and agent is not None)


def frame_env(cfg: PageConfig, conf: dict[str, Any], render: bool) -> gym.Env:
    """The run's environment, rendering frames at most ``cfg.frame_side`` high with ``render``."""
    env = make_env(conf["env"]["id"], EnvConfig(**conf["env"]).parsed_kwargs(), render=render)
    return SmallFrames(env, cfg.frame_side) if render else env


def fresh_clips(
    cfg: PageConfig, conf: dict[str, Any], net: RewardNet, agent: BaseAlgorithm | None, render: bool = False
) -> FreshClips:
    """Roll out ``cfg.episodes`` episodes of ``agent`` (if any) and of random actions; cut clips.

    With ``render`` every step's frame is rendered while collecting; without, none is, and
    :func:`with_frames` renders the few the page shows afterwards."""
    env_id = conf["env"]["id"]
    env_kwargs = EnvConfig(**conf["env"]).parsed_kwargs()
    render = render and wants_frames(cfg, agent)
    env = frame_env(cfg, conf, render)
    deterministic = evaluation_mode(env_id, env_kwargs) == DETERMINISTIC
    parts, sources, seeds = [], [], []
    try:
        if agent is not None:
            parts.append(
                collect_episodes(
                    env,
                    cfg.episodes,
                    policy=lambda o: agent.predict(o, deterministic=deterministic)[0],
                    seed=cfg.seed,
                    render=render,
                )
            )
            sources.append("policy")
            seeds.append(cfg.seed)
        random_seed = stream_seed(cfg.seed, "page_random")
        parts.append(collect_episodes(env, cfg.episodes, seed=random_seed, render=render))
        sources.append("random")
        seeds.append(random_seed)
    finally:
        env.close()
    policy_frames = (
        parts[0].infos["frames"][: int(parts[0].lengths[0])] if agent is not None and render else None
    )
    offsets = np.cumsum([0] + [len(p.acts) for p in parts])
    recorded = [Recorded(p, seed, int(off)) for p, seed, off in zip(parts, seeds, offsets)]
    batch = TrajectoryBatch.concat(parts)
    if batch.rews is None:
        raise ValueError(f"{env_id}: the environment gives no reward to compare with")
    ep_source = np.concatenate([np.full(len(p), s) for p, s in zip(parts, sources)])
    length = min(int(conf.get("loop", {}).get("fragment_length", 50)), int(batch.lengths.max()))
    frags, _ = sample_fragments(batch, cfg.clips, length, np.random.default_rng(cfg.seed), replace=True)
    pred = predicted_rewards(net, batch)[frags.window()]  # [N, L]
    learned = np.where(frags.absorbing(), 0.0, pred).sum(-1)
    teacher = SyntheticTeacher(page_teacher(conf))
    return FreshClips(
        frags, ep_source[frags.episode], frags.returns(), learned, teacher.returns(frags), policy_frames,
        None if render else recorded,
    )  # fmt: skip


def page_teacher(conf: Mapping[str, object]) -> str:
    """The synthetic teacher whose returns rank the page's fresh clips: the run's own preset, or
    the oracle (true returns) for a run labelled by people or a custom teacher."""
    name = conf.get("teacher")
    return name if isinstance(name, str) and name in PRESETS else "oracle"


def with_frames(
    cfg: PageConfig, conf: dict[str, Any], net: RewardNet, agent: BaseAlgorithm | None
) -> tuple[FreshClips, np.ndarray, np.ndarray, float]:
    """Fresh clips with the frames the page shows, and their most doubted pairs
    (:func:`disagreements`). Frames are rendered by replaying the recorded episodes
    (:func:`prefrl.interpret.replay.replay_frames`): the policy's first episode for the video
    and the steps of the clips shown. Where a replay does not reproduce its episode, the
    episodes are collected again with every frame rendered."""
    clips = fresh_clips(cfg, conf, net, agent)
    pairs, probs, acc = disagreements(clips, cfg.pairs, cfg.seed)
    if not wants_frames(cfg, agent) or clips.recorded is None:
        return clips, pairs, probs, acc
    frags, rec = clips.fragments, clips.recorded
    shown = np.unique(pairs.reshape(-1)).astype(np.int64)
    rows = [frags.rows[i] + np.arange(frags.reals[i]) for i in shown]  # frames before each action
    video = cfg.video and agent is not None
    steps = int(rec[0].batch.lengths[0])  # with an agent: the policy's first episode, the video's
    if video:
        rows.append(np.arange(0, steps, video_stride(steps)))
    if not rows:
        return clips, pairs, probs, acc
    n_rows = sum(len(r.batch.acts) for r in rec)
    table = replay_frames(lambda: frame_env(cfg, conf, True), rec, np.unique(np.concatenate(rows)), n_rows)
    if table is None:  # the environment did not replay: render while collecting
        clips = fresh_clips(cfg, conf, net, agent, render=True)
        return (clips, *disagreements(clips, cfg.pairs, cfg.seed))
    # the video keeps every video_stride(steps)-th of its frames, the ones rendered
    frames = dataclasses.replace(frags, table_frames=table)
    clips = dataclasses.replace(clips, fragments=frames, policy_frames=table[:steps] if video else None)
    return clips, pairs, probs, acc


def disagreements(clips: FreshClips, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The ``n`` fresh pairs ``[n, 2]`` (teacher's choice first) the reward model doubts most, the
    model's probability of the teacher's choice ``[n]``, and its accuracy over all strict pairs."""
    pairs = random_pairs(len(clips.fragments), len(clips.fragments), stream(seed, "page_pairs"))
    gap = clips.teacher[pairs[:, 0]] - clips.teacher[pairs[:, 1]]
    scale = max(1e-9, float(np.ptp(clips.teacher)))
    strict = np.abs(gap) > 1e-6 * scale
    pairs, gap = pairs[strict], gap[strict]
    pairs = np.where((gap > 0)[:, None], pairs, pairs[:, ::-1])  # the teacher's choice first
    diff = clips.learned[pairs[:, 0]] - clips.learned[pairs[:, 1]]
    p_teacher = 1.0 / (1.0 + np.exp(-np.clip(diff, -50, 50)))  # Bradley-Terry on learned returns
    accuracy = float(np.mean(diff > 0)) if len(pairs) else math.nan
    worst = np.argsort(p_teacher, kind="stable")[:n]
    return pairs[worst], p_teacher[worst], accuracy


def plot_fresh_returns(clips: FreshClips) -> Figure:
    """Learned against true return of each fresh clip, coloured by the policy that acted."""
    fig = new_figure(6, 4)
    ax = fig.add_subplot(1, 1, 1)
    for src, colour in (("policy", "tab:blue"), ("random", "tab:gray")):
        m = clips.source == src
        if m.any():
            ax.scatter(clips.true[m], clips.learned[m], s=10, alpha=0.6, c=colour, label=f"{src} ({m.sum()})")
    r = np.corrcoef(clips.true, clips.learned)[0, 1] if np.ptp(clips.true) > 0 else math.nan
    ax.set_title(f"fresh clips: learned vs true return (Pearson r = {r:.2f})", fontsize=10)
    ax.set_xlabel("true return")
    ax.set_ylabel("learned return")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_pair(clips: FreshClips, pair: np.ndarray, p_teacher: float, n_frames: int = 6) -> Figure:
    """Filmstrips of a pair: the teacher's choice (top) and the clip the reward model prefers."""
    frames = clips.fragments.frames(pair)  # [2, L, H, W, 3]
    steps = np.unique(np.linspace(0, frames.shape[1] - 1, n_frames).round().astype(int))
    h, w = frames.shape[2:4]
    fig = new_figure(1.6 * len(steps) * w / max(h, w) + 0.4, 3.6)
    for row, (i, who) in enumerate(zip(pair, ("teacher prefers", "reward prefers"))):
        for col, t in enumerate(steps):
            ax = fig.add_subplot(2, len(steps), row * len(steps) + col + 1)
            ax.imshow(frames[row, t])
            ax.set_xticks([])
            ax.set_yticks([])
            if col == 0:
                ax.set_ylabel(f"{who}\n{clips.source[i]}", fontsize=7)
            if row == 0:
                ax.set_title(f"step {t}", fontsize=7)
    a, b = pair
    fig.suptitle(
        f"true return {clips.true[a]:.1f} vs {clips.true[b]:.1f}; learned {clips.learned[a]:.2f} vs "
        f"{clips.learned[b]:.2f}; P(teacher's choice) = {p_teacher:.2f}",
        fontsize=8,
    )
    fig.tight_layout()
    return fig


def label_counts(labels: np.ndarray) -> dict[str, int]:
    """How many labels prefer the first clip, the second, call them equal, or are soft/skipped."""
    labels = np.asarray(labels, np.float64)
    first, second, tie = labels == 1.0, labels == 0.0, labels == 0.5
    return {
        "first preferred": int(first.sum()),
        "second preferred": int(second.sum()),
        "equally good": int(tie.sum()),
        "other": int((~(first | second | tie)).sum()),
    }


def load_policy(run: Path, conf: dict[str, Any]) -> BaseAlgorithm | None:
    """The run's final policy (``policy.zip``), or ``None`` for an offline run."""
    if not (run / "policy.zip").exists():
        return None
    env_id, env_kwargs = conf["env"]["id"], EnvConfig(**conf["env"]).parsed_kwargs()
    agent_conf = conf.get("agent", {})
    venv = make_vec_env(env_id, 1, env_kwargs, seed=0)
    algo = agent_conf.get("algo", AUTO)
    if algo == AUTO:  # a hand-written config: the agent prefrl train would have chosen
        algo = resolve_algo(algo, venv.action_space)
    return load_agent(algo, run / "policy.zip", venv, backend=agent_conf.get("backend", "sb3"))


def _table(rows: Mapping[str, object]) -> str:
    cells = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows.items()
    )
    return f"<table>{cells}</table>"


def _fmt(v: object) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


PAGE_FEATURES = FeatureOptions(n_features=4, max_frames=500, top=3, synth_steps=60, ig_steps=8)
"""The page's feature dictionary, bounded so that it costs seconds: 500 of the run's clip frames,
4 features (fewer where the last convolution has fewer channels), 60 synthesis steps each."""


def features_section(run: Path, net: RewardNet, out: Path) -> str:
    """The "Features" section of a CNN reward's page (:mod:`prefrl.interpret.feature_figure` on
    the frames of the run's labelled clips); empty for other rewards or a run without clips."""
    if not isinstance(net, CNNReward) or not (run / "preferences.npz").exists():
        return ""
    frags = PreferenceDataset.load(run / "preferences.npz").fragments
    if frags is None:
        return ""
    opts = dataclasses.replace(PAGE_FEATURES, n_features=min(4, net.options.channels[-1]))
    command = f"prefrl interpret features --run {run}"
    try:
        info = explain_features(net, batch_from_fragments(frags), out, opts)
    except ValueError as e:
        skipped = html.escape(str(e))
        return f"<section id='features'><h2>Features</h2><p class='note'>skipped: {skipped}</p></section>"
    return (
        "<section id='features'><h2>Features</h2>"
        f"<p>A dictionary of the reward CNN's last convolution: {opts.n_features} non-negative (NMF) "
        f"features of its activations on {info['frames']} frames of the labelled clips (explained "
        f"variance {info['explained_variance']:.2f}). Each row: the frames that excite the feature most "
        "(its map overlaid), the patch it sees in the first, an input synthesised to excite it, and its "
        "share of the reward (integrated gradients in activation space). More features, layers and "
        f"frames: <code>{html.escape(command)}</code>.</p>"
        f"<img alt='feature dictionary' src='{png_uri(Path(info['png']))}'></section>"
    )


STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:auto;padding:0 1em;color:#222}"
    "img{max-width:100%;border:1px solid #ddd}th,td{padding:2px 12px;text-align:left}"
    "th{font-weight:normal;color:#555}section{margin:2em 0}video{border:1px solid #ddd;max-width:100%;"
    "height:auto;image-rendering:pixelated}.pair{margin:1em 0}.note{color:#555;font-size:90%}"
)


def write_run_page(cfg: PageConfig) -> Path:
    """Write the page of run ``cfg.run``; returns the path of its ``index.html``.

    Raises:
        FileNotFoundError: ``cfg.run`` is no run directory (no ``config.json``).
        ValueError: an option is out of range.
    """
    if cfg.pairs < 0 or cfg.episodes < 1 or cfg.clips < 2:
        raise ValueError(
            f"need --pairs >= 0, --episodes >= 1, --clips >= 2; got {cfg.pairs}, {cfg.episodes}, {cfg.clips}"
        )
    run = Path(cfg.run)
    conf = read_json(run / "config.json", "run config (is this a prefrl run directory?)")
    out = Path(cfg.out) if cfg.out is not None else run / PAGE_DIR
    out.mkdir(parents=True, exist_ok=True)
    rep = read_json(run / "report.json", "run report") if (run / "report.json").exists() else {}
    env_id = conf["env"]["id"]
    title = f"prefrl run {run.name}: {env_id}"
    body = [f"<h1>{html.escape(title)}</h1>"]
    summary = {
        "environment": env_id,
        "teacher": conf.get("teacher"),
        "agent": conf.get("agent", {}).get("algo"),
    }
    keys = ("true_return", "random_return", "reward_accuracy", "labels_used", "env_steps", "wall_s")
    for key in keys:
        if rep.get(key) is not None:
            accuracy = key == "reward_accuracy"
            summary[HELDOUT if accuracy else key.replace("_", " ")] = (
                percent(rep[key]) if accuracy else _fmt(rep[key])
            )
    if rep.get("watch"):  # where the reward ensemble split on the agent's steps (no true reward used)
        summary["run watch"] = rep["watch"].get("text")
    note = HELDOUT_NOTE if HELDOUT in summary else ""
    body.append("<section id='summary'><h2>Summary</h2>" + _table(summary) + note + "</section>")

    if (run / "metrics.csv").exists():
        png = plot_training_curves(run / "metrics.csv", out / "training.png")
        body.append(
            "<section id='training'><h2>Training curves</h2>"
            f"<img alt='training curves' src='{png_uri(png)}'></section>"
        )

    if (run / "preferences.npz").exists():
        labels = PreferenceDataset.load(run / "preferences.npz").labels
        counts = label_counts(labels)
        ties = counts["equally good"] / max(1, len(labels))
        body.append(
            "<section id='labels'><h2>Labels</h2>"
            + _table({"labels used": len(labels), **counts, "tie share": f"{ties:.0%}"})
            + "</section>"
        )

    if (run / "reward.safetensors").exists():
        net = load_reward_net(run / "reward.safetensors").eval()
        agent = load_policy(run, conf)
        clips, pairs, probs, acc = with_frames(cfg, conf, net, agent)
        teacher = page_teacher(conf)
        ranked_by = "the true return" if teacher == "oracle" else f"the {teacher} teacher's return"
        body.append(
            "<section id='fresh'><h2>Learned against true reward on fresh clips</h2>"
            f"<p>{len(clips.true)} clips of {clips.fragments.length} steps from {cfg.episodes} new "
            "episodes of the final policy (its evaluation actions) and of a random one.</p>"
            + _table({AGREEMENT: percent(acc)})
            + f"<p class='note'>{AGREEMENT}: of {len(clips.true)} pairs of these clips (ties left "
            f"out), the share the learned reward orders as {ranked_by} does. It is measured on other "
            f"clips than the summary's {HELDOUT} (these episodes, the policy acting as when it is "
            "evaluated), so the two numbers differ by sampling noise"
            + (", and by what the teacher prefers over the true return" if teacher != "oracle" else "")
            + ".</p>"
            f"<img alt='learned vs true return' src='{data_uri(plot_fresh_returns(clips))}'></section>"
        )
        if cfg.video and clips.policy_frames is not None:
            k = video_stride(len(clips.policy_frames))
            encode_video(np.asarray(clips.policy_frames[::k]), out / "policy.webm", fps=VIDEO_FPS / k)
            width = video_display_width(clips.policy_frames.shape[2] // 2 * 2)  # encoded even
            body.append(
                "<section id='video'><h2>The final policy</h2>"
                f"<video src='policy.webm' width='{width}' controls loop muted autoplay playsinline></video>"
                "</section>"
            )
        if len(pairs):
            figs = "".join(
                f"<div class='pair'><img alt='pair {k}' src='{data_uri(plot_pair(clips, p, pr))}'></div>"
                for k, (p, pr) in enumerate(zip(pairs, probs))
            )
            body.append(
                "<section id='pairs'><h2>Where the learned reward and the teacher disagree most</h2>"
                "<p>Fresh clip pairs ordered by the reward model's probability (Bradley-Terry on learned "
                "returns) of the clip the teacher prefers, lowest first. Top row: the teacher's choice.</p>"
                + figs
                + "</section>"
            )
        body.append(features_section(run, net, out))
    page = out / "index.html"
    page.write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><link rel='icon' href='data:,'><style>{STYLE}</style></head>"
        "<body>" + "\n".join(body) + "</body></html>",
        encoding="utf-8",
    )
    return page
