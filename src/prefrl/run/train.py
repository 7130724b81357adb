"""One training run from a :class:`~prefrl.run.config.TrainConfig`: the function behind
``prefrl train`` and each cell of ``prefrl sweep``. From Python::

    from prefrl.run.train import TrainConfig, train
    report = train(TrainConfig(run_dir="runs/pendulum"))
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from stable_baselines3.common.base_class import BaseAlgorithm

from prefrl.agents.evaluate import evaluate_returns
from prefrl.agents.learned_reward import LearnedRewardVecEnv
from prefrl.agents.policy_io import load_agent, save_agent
from prefrl.agents.recorder import TrajectoryRecorder
from prefrl.agents.reward_signal import LearnedReward
from prefrl.agents.sb3 import make_agent, make_env, make_vec_env
from prefrl.data.trajectories import TrajectoryBatch
from prefrl.preference.trainer import RewardTrainer
from prefrl.rewards.io import save_reward_net
from prefrl.rewards.nets import RewardNet
from prefrl.run.config import IGNORED_ON_RESUME, TrainConfig, config_to_dict
from prefrl.run.metrics_log import MetricsLogger
from prefrl.run.report import RunReport
from prefrl.run.resolve import EnvProbe, resolve_run
from prefrl.run.resume_check import check_resume
from prefrl.run.setup import log_agent, prepare_run_dir, reward_accuracy
from prefrl.seeding import stream_seed
from prefrl.storage.checkpoint import config_hash, read_json, write_json
from prefrl.teachers.spec import AnyTeacher, make_teacher
from prefrl.training.callbacks import LoopCallback, ProgressBar
from prefrl.training.evaluations import CorrelationWatch, PeriodicEvaluation, last_mean
from prefrl.training.loop import PreferenceLoop
from prefrl.training.ties import TIE_HINT, TIE_WARN, tie_fraction
from prefrl.training.watch import summary as watch_summary


# ------------------------------------------------------------------------ wiring
def cli_teacher(cfg: TrainConfig, run_name: str) -> AnyTeacher:
    """The teacher ``cfg.teacher`` names (a simulated one seeded from ``--seed``); a human one
    files its queries under the run's id (``run_name``, its folder's name, is what people see)."""
    run_key = cfg.run_id or run_name  # a run made before run ids: its folder's name
    seed = stream_seed(cfg.seed, "teacher")
    return make_teacher(cfg.teacher, run=run_key, title=run_name, seed=seed, store=cfg.store)


def web_teacher_hint(store: str, run_name: str, run_id: str | None = None) -> str:
    """Where the queries of a ``--teacher web`` run go and the commands that label them."""
    key = run_id or run_name
    return (
        f"prefrl: queries of run {run_name!r} (id {key}) go to the store {store}. To label them in a "
        "browser, in another terminal:\n"
        f"  prefrl label add-user --store {store} NAME    # prints NAME's sign-in token\n"
        f"  prefrl label serve --store {store} --run {key}   # then open http://127.0.0.1:8000/ and sign in"
    )


def _hash(cfg: TrainConfig) -> str:
    """The config hash checkpoints carry. A resumed run hashes its ``config.json`` as written
    when the run began, not the config filled in from today's defaults: a run made before an
    option existed resumes (its checkpoints hold the hash of the file), and the command line
    cannot change the stored values anyway (:func:`~prefrl.run.config.parse_args`)."""
    stored = read_json(Path(cfg.resume) / "config.json", "run config") if cfg.resume else config_to_dict(cfg)
    return config_hash({k: v for k, v in stored.items() if k not in IGNORED_ON_RESUME})


@dataclass
class Run:
    """Everything :func:`build_run` wires together."""

    loop: PreferenceLoop
    run_dir: Path
    logger: MetricsLogger
    env_kwargs: dict[str, object]
    config: TrainConfig
    """The resolved config (:func:`~prefrl.run.resolve.resolve`): what ``config.json`` holds and
    every part of the run was built from."""
    probe: EnvProbe
    """What the environment, made once before anything else, said of itself (spaces, evaluation)."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run whose directory exists (``run_dir``: where it can be resumed)."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


def build_run(cfg: TrainConfig) -> Run:
    """Resolve ``cfg`` (:func:`~prefrl.run.resolve.resolve_run`; ``cfg`` itself is not changed) and
    wire env stack, agent, reward model, teacher and loop from the resolved config and the probe
    of its environment. Environments made: the probe, then (with an agent) the loop's side
    environment and ``--agent.n-envs`` training environments."""
    cfg, probe = resolve_run(cfg)
    env_kwargs = cfg.env.parsed_kwargs()
    offline = cfg.trajectory_path is not None
    human = cfg.teacher in ("terminal", "web")
    torch.manual_seed(cfg.seed)  # reward-net initialisation: a run is reproducible from its seed
    # bad reward options fail here, before any file is written
    net = cfg.reward.build(probe.obs_space, probe.act_space).to(cfg.device)
    trainer = RewardTrainer(net, cfg.trainer)
    run = prepare_run_dir(cfg)
    teacher = cli_teacher(cfg, run.name)
    if cfg.teacher == "web":
        print(web_teacher_hint(cfg.store, run.name, cfg.run_id), file=sys.stderr, flush=True)  # type: ignore[arg-type]  # web: a store is set
    logger = MetricsLogger(run)
    callbacks: list[LoopCallback] = [ProgressBar(disable=not cfg.progress)]
    if cfg.teacher not in ("terminal", "web"):  # the true reward is the teacher's: watch it
        callbacks.append(CorrelationWatch())
    if cfg.eval_interval > 0 and not offline:
        callbacks.append(
            PeriodicEvaluation(
                lambda agent, seed: float(
                    evaluate_returns(
                        cfg.env.id, agent, cfg.eval_episodes, seed=seed, env_kwargs=env_kwargs
                    ).mean()
                ),
                cfg.eval_interval,
                run / "evaluations.csv",
            )
        )
    loop_cfg = cfg.loop
    if offline:
        trajs = TrajectoryBatch.load(cfg.trajectory_path)  # type: ignore[arg-type]  # offline: a path is set
        loop = PreferenceLoop(
            loop_cfg,
            net,
            trainer,
            teacher,
            trajectories=trajs,
            run_dir=run,
            logger=logger,
            callbacks=callbacks,
            config_hash=_hash(cfg),
        )
        return Run(loop, run, logger, env_kwargs, cfg, probe)
    side_env = make_env(cfg.env.id, env_kwargs, render=human)
    recorder = TrajectoryRecorder(
        make_vec_env(cfg.env.id, cfg.agent.n_envs, env_kwargs, cfg.seed, human), human
    )
    reward = LearnedReward(net)
    venv = LearnedRewardVecEnv(
        recorder, reward, hide_terminations=cfg.loop.hide_terminations, hidden_end=cfg.loop.hidden_end
    )
    if cfg.agent_path is not None:
        agent = load_agent(cfg.agent.algo, cfg.agent_path, venv, cfg.agent.device, cfg.agent.backend)
    else:
        agent = make_agent(cfg.agent, venv, seed=cfg.seed, learning_starts=cfg.loop.random_steps)
    if cfg.resume is None:  # a resumed agent is logged once its checkpoint loaded (train)
        log_agent(agent, run)
    loop = PreferenceLoop(
        loop_cfg,
        net,
        trainer,
        teacher,
        agent=agent,
        recorder=recorder,
        reward=reward,
        side_env=side_env,
        run_dir=run,
        logger=logger,
        callbacks=callbacks,
        config_hash=_hash(cfg),
    )
    return Run(loop, run, logger, env_kwargs, cfg, probe)


def train(cfg: TrainConfig) -> RunReport:
    """Run (or resume) training; writes the run directory and returns the final report."""
    if cfg.reward_from is not None:  # only an agent, on a finished run's reward
        from prefrl.run.reward_from import train_on_saved_reward

        return train_on_saved_reward(cfg)
    t0 = time.perf_counter()
    torch.set_num_threads(max(1, cfg.threads))
    if cfg.resume is not None:  # every file it reads, before anything is written
        check_resume(Path(cfg.resume))
    r = build_run(cfg)
    try:
        return _train(r, t0)
    except KeyboardInterrupt as e:
        raise RunInterrupted(r.run_dir) from e


def _train(r: Run, t0: float) -> RunReport:
    """Resume (when asked) and run ``r``'s loop, then save and evaluate: the report."""
    cfg, loop = r.config, r.loop
    if cfg.resume is not None:
        algo = cfg.agent.algo
        venv = loop.agent.get_env() if loop.agent is not None else None

        def load(p: Path) -> BaseAlgorithm:  # called only when the run has an agent (and so an env)
            assert venv is not None
            return load_agent(algo, p, venv, cfg.agent.device, cfg.agent.backend, cfg.agent)

        if not loop.load_checkpoint(load):
            print(
                f"{r.run_dir}: no checkpoint yet: starting over with the {len(loop.dataset)} labels "
                "given so far (none is asked again)",
                file=sys.stderr,
            )
        else:
            r.logger.truncate(loop.env_steps)
        log_agent(loop.agent, r.run_dir)  # only now: a checkpoint that fails to load adds no TensorBoard file
    cpu0, t_run = time.process_time(), time.perf_counter()
    loop.run()
    train_cpu = time.process_time() - cpu0
    setup_s, t_after = t_run - t0, time.perf_counter()
    r.logger.close()
    if loop.reward is not None:  # with the reward, how the agent saw it at the end (agents/saved_reward.py)
        norm = {"normalize": loop.reward.normalize, **loop.reward.normalizer.state_dict()}
        save_reward_net(loop.net, r.run_dir / "reward.safetensors", normalizer=norm)
    report: RunReport = {"run_dir": str(r.run_dir), "env": cfg.env.id, "teacher": cfg.teacher}
    report["labels_used"] = len(loop.dataset)
    report["queries_asked"] = loop.state.queries_asked
    deferred = any("labels/deferred" in h for h in loop.state.history)
    if deferred and loop.state.queries_asked < cfg.loop.total_labels:  # ties all along (tie probe)
        report["queries_not_asked"] = cfg.loop.total_labels - loop.state.queries_asked
    counts = getattr(loop.async_teacher, "counts", None)
    if counts is not None:  # people answered: asked = answered + expired, and every answer was used
        report["queries"] = counts()
    if cfg.save_preferences:
        loop.dataset.save(cfg.save_preferences)
    if loop.agent is not None:
        assert isinstance(loop.agent, BaseAlgorithm)  # built by make_agent or load_agent
        save_agent(loop.agent, r.run_dir / "policy.zip")
        rets = evaluate_returns(cfg.env.id, loop.agent, cfg.eval_episodes, env_kwargs=r.env_kwargs)
        rand = evaluate_returns(cfg.env.id, None, cfg.eval_episodes, env_kwargs=r.env_kwargs)
        report.update(
            {
                "agent": cfg.agent.algo,
                "env_steps": loop.env_steps,
                "eval": r.probe.evaluation,
                "true_return": float(rets.mean()),
                "true_return_std": float(rets.std()),
                "random_return": float(rand.mean()),
            }
        )
    if loop.state.evaluations:  # --eval-interval: the papers' mean of the last 10 evaluations
        report["evaluations"] = [list(e) for e in loop.state.evaluations]
        report["eval_last10_mean"] = last_mean(loop.state.evaluations)
    report["reward_accuracy"] = reward_accuracy(
        cfg, loop.net, loop.agent, fragment_length=loop.state.fragment_length
    )
    report["label_tie_fraction"] = tie_fraction(loop.dataset.labels)
    report["watch"] = watch_summary(loop.state.history)
    if cfg.final_agent_steps > 0 and loop.agent is not None:
        report["fresh_agent_true_return"] = train_fresh_agent(cfg, loop.net, r)
    report["train_wall_s"] = loop.state.wall_s
    report["train_cpu_s"] = train_cpu  # this process only (since the last resume)
    # training time of every process of the run (resumes included) plus this one's set-up and evaluation
    report["wall_s"] = loop.state.wall_s + setup_s + (time.perf_counter() - t_after)
    report["resumed"] = cfg.resume is not None
    report["files"] = {
        "config": str(r.run_dir / "config.json"),
        "reward": str(r.run_dir / "reward.safetensors"),
        "preferences": str(r.run_dir / "preferences.npz"),
        "metrics": str(r.run_dir / "metrics.csv"),
        "tensorboard": str(r.run_dir / "tb"),
        "policy": str(r.run_dir / "policy.zip"),
        "checkpoints": str(r.run_dir / "checkpoints"),
    }
    if loop.agent is None:
        del report["files"]["policy"]
    write_json(r.run_dir / "report.json", report)
    return report


def train_fresh_agent(cfg: TrainConfig, net: RewardNet, r: Run) -> float:
    """Train a new agent on the frozen final reward; returns its mean true return."""
    reward = LearnedReward(net)
    seed = stream_seed(cfg.seed, "fresh_agent")
    vec = make_vec_env(cfg.env.id, cfg.agent.n_envs, r.env_kwargs, seed)
    hide = cfg.loop.hide_terminations  # as the run's agent saw episode ends
    venv = LearnedRewardVecEnv(vec, reward, hide, cfg.loop.hidden_end)
    agent = make_agent(cfg.agent, venv, seed=seed, learning_starts=cfg.loop.random_steps)
    if r.loop.reward is not None:  # as the run's agent saw it: scale only, or shifted by its median
        reward.normalizer.shift = r.loop.reward.normalizer.shift
        if not r.loop.reward.normalizer.center:
            reward.scale_only()
    agent.learn(cfg.final_agent_steps)
    save_agent(agent, r.run_dir / "fresh_policy.zip")
    return float(evaluate_returns(cfg.env.id, agent, cfg.eval_episodes, env_kwargs=r.env_kwargs).mean())


def format_report(rep: RunReport) -> str:
    lines = ["", "=== prefrl train: report ==="]
    if "true_return" in rep:
        lines.append(
            f"true return of final policy : {rep['true_return']:.1f} "
            f"(random policy: {rep['random_return']:.1f}; {rep.get('eval', 'deterministic')} actions)"
        )
    if rep.get("eval_last10_mean") is not None:
        n = min(10, len(rep["evaluations"]))
        mean = rep["eval_last10_mean"]
        lines.append(f"mean of last {n} evaluations : {mean:.1f} (true return; all in evaluations.csv)")
    if "fresh_agent_true_return" in rep:
        lines.append(f"fresh agent on final reward : {rep['fresh_agent_true_return']:.1f}")
    acc = rep.get("reward_accuracy")
    acc_text = "n/a (every held-out pair was a tie)"
    if acc is not None:
        acc_text = f"{acc:.3f} (fresh clips of the final and a random policy, ranked by the true reward)"
    lines.append(f"reward accuracy (held out)  : {acc_text}")
    if "reward_from" in rep:
        lines.append(f"reward from                 : {rep['reward_from']} (frozen, no labels asked)")
    else:
        lines.append(
            f"labels used                 : {rep['labels_used']} ({rep['queries_asked']} queries asked)"
        )
        if rep.get("queries_not_asked"):
            lines.append(
                f"queries not asked           : {rep['queries_not_asked']} of the budget: every answer "
                "so far was a tie when they were due (--loop.tie-probe)"
            )
    q = rep.get("queries")
    if q:
        lines.append(
            f"queries (people)            : {q['asked']} asked, {q['answered']} answered ({q['used']} used, "
            f"{q['answers_used']} of {q['answers']} answers), {q['expired']} expired, {q['open']} open"
        )
    ties = rep.get("label_tie_fraction")
    if ties is not None:
        lines.append(f"labels that were ties       : {ties:.0%}")
        if ties >= TIE_WARN:
            lines += ["", "warning: most labels were ties. " + TIE_HINT]
    if "watch" in rep:
        lines.append(f"run watch                   : {rep['watch']['text']}")
    resumed = " (all processes of the run, resumes included)" if rep.get("resumed") else ""
    lines.append(f"time taken                  : {rep['wall_s']:.0f} s{resumed}")
    lines.append(f"run directory               : {rep['run_dir']}")
    lines += [f"  {k:<12} {v}" for k, v in rep["files"].items()]
    return "\n".join(lines)
