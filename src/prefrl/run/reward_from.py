"""``prefrl train --reward-from RUN``: train only an agent, on the frozen reward of a finished run.

No queries and no reward training: the agent trains ``--loop.total-steps`` environment steps on
RUN's reward (normalised as RUN's agent saw it, see :mod:`prefrl.agents.saved_reward`), then is
evaluated on the true reward as ``prefrl train`` evaluates its own. The new run directory holds
``config.json``, the reward it trained on (``reward.safetensors``, so it is a source of its own),
``policy.zip`` (prefrl's own format, :mod:`prefrl.agents.policy_io`, as ``prefrl train`` writes it:
``prefrl evaluate``, ``prefrl rollouts``, ``--agent-path`` and ``prefrl report`` read it), TensorBoard
logs and ``report.json``; with ``--agent-path`` the agent starts from that policy instead of
fresh weights (a warm start, as in ``prefrl train``); with ``--eval-interval``, also
``evaluations.csv``, written as each evaluation lands, as ``prefrl train`` writes it. Like
``prefrl train`` it runs on ``--threads`` torch CPU threads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch
from stable_baselines3.common.callbacks import BaseCallback

from prefrl.agents.evaluate import evaluate_returns
from prefrl.agents.learned_reward import LearnedRewardVecEnv
from prefrl.agents.policy_io import load_agent, save_agent
from prefrl.agents.saved_reward import check_spaces, load_learned_reward, reward_file
from prefrl.agents.sb3 import make_agent, make_vec_env
from prefrl.rewards.io import save_reward_net
from prefrl.run.config import TrainConfig
from prefrl.run.report import RunReport
from prefrl.run.resolve import resolve_run
from prefrl.run.setup import log_agent, prepare_run_dir, reward_accuracy
from prefrl.storage.checkpoint import write_json
from prefrl.training.evaluations import evaluation_seed, is_due, last_mean, write_evaluations


class _PeriodicEvaluation(BaseCallback):
    """Evaluate the agent every ``interval`` environment steps while SB3 trains it, into ``path``."""

    def __init__(self, evaluate: Callable[[object, int], float], interval: int, path: Path) -> None:
        super().__init__()
        self.evaluate, self.interval, self.path = evaluate, interval, path
        self.evaluations: list[tuple[int, float]] = []

    def add(self, steps: int, value: float) -> None:
        self.evaluations.append((int(steps), float(value)))
        write_evaluations(self.path, self.evaluations)

    def _on_step(self) -> bool:
        if is_due(self.evaluations, self.interval, self.num_timesteps):
            self.add(self.num_timesteps, self.evaluate(self.model, evaluation_seed(self.evaluations)))
        return True


def train_on_saved_reward(cfg: TrainConfig) -> RunReport:
    """Train an agent on ``cfg.reward_from``'s reward; writes the run directory, returns the report."""

    t0 = time.perf_counter()
    torch.set_num_threads(max(1, cfg.threads))
    if cfg.resume is not None:
        raise ValueError("a --reward-from run keeps no checkpoints to resume: start it again")
    if cfg.trajectory_path is not None:
        raise ValueError("--reward-from trains an agent on a finished reward; --trajectory-path learns one")
    assert cfg.reward_from is not None
    path = reward_file(cfg.reward_from)
    # resolved once (config.json names the source's environment, the real agent and devices)
    cfg, probe = resolve_run(cfg)
    env_kwargs = cfg.env.parsed_kwargs()
    reward = load_learned_reward(path, "run" if cfg.loop.normalize_reward else "off", device=cfg.device)
    check_spaces(reward.net, probe.obs_space, probe.act_space, cfg.reward_from)
    torch.manual_seed(cfg.seed)
    run = prepare_run_dir(cfg)
    vec = make_vec_env(cfg.env.id, cfg.agent.n_envs, env_kwargs, cfg.seed)
    venv = LearnedRewardVecEnv(
        vec, reward, hide_terminations=cfg.loop.hide_terminations, hidden_end=cfg.loop.hidden_end
    )
    if cfg.agent_path is not None:  # a warm start: fine-tune that policy on the frozen reward
        agent = load_agent(cfg.agent.algo, cfg.agent_path, venv, cfg.agent.device, cfg.agent.backend)
    else:
        agent = make_agent(cfg.agent, venv, seed=cfg.seed, learning_starts=cfg.loop.random_steps)
    log_agent(agent, run)
    periodic = None
    if cfg.eval_interval > 0:
        periodic = _PeriodicEvaluation(
            lambda a, seed: float(
                evaluate_returns(cfg.env.id, a, cfg.eval_episodes, seed=seed, env_kwargs=env_kwargs).mean()
            ),
            cfg.eval_interval,
            run / "evaluations.csv",
        )
    t_run = time.perf_counter()
    agent.learn(cfg.loop.total_steps, callback=periodic)
    train_wall = time.perf_counter() - t_run
    state = {"normalize": reward.normalize, **reward.normalizer.state_dict()}
    save_reward_net(reward.net, run / "reward.safetensors", normalizer=state)
    save_agent(agent, run / "policy.zip")  # prefrl's format: safetensors + JSON, nothing pickled
    rets = evaluate_returns(cfg.env.id, agent, cfg.eval_episodes, env_kwargs=env_kwargs)
    rand = evaluate_returns(cfg.env.id, None, cfg.eval_episodes, env_kwargs=env_kwargs)
    if periodic is not None and (
        not periodic.evaluations or periodic.evaluations[-1][0] < agent.num_timesteps
    ):
        periodic.add(agent.num_timesteps, float(rets.mean()))  # the final policy, at the last step
    report: RunReport = {
        "run_dir": str(run),
        "env": cfg.env.id,
        "reward_from": str(cfg.reward_from),
        "agent": cfg.agent.algo,
        "env_steps": int(agent.num_timesteps),
        "eval": probe.evaluation,
        "true_return": float(rets.mean()),
        "true_return_std": float(rets.std()),
        "random_return": float(rand.mean()),
        "reward_accuracy": reward_accuracy(cfg, reward.net, agent),
        "train_wall_s": train_wall,
        "wall_s": time.perf_counter() - t0,
        "files": {
            "config": str(run / "config.json"),
            "reward": str(run / "reward.safetensors"),
            "tensorboard": str(run / "tb"),
            "policy": str(run / "policy.zip"),
            **({"evaluations": str(run / "evaluations.csv")} if periodic is not None else {}),
        },
    }
    if periodic is not None:  # --eval-interval: the papers' mean of the last 10 evaluations
        report["evaluations"] = [list(e) for e in periodic.evaluations]
        report["eval_last10_mean"] = last_mean(periodic.evaluations)
    write_json(run / "report.json", report)
    return report
