"""A plain hand-written policy-gradient loop learns the moving dot through the wrapper.

No RL library: a ``gymnasium.vector`` env wrapped in ``PreferenceVectorEnv``, a small
actor-critic in torch, advantage actor-critic updates on ``[num_steps, num_envs]`` rollouts.
The loop never looks at the true reward; it is only read from ``infos`` for logging.

    python examples/moving_dot_custom_loop.py --total-timesteps 100000
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
import tyro
from torch import nn

import prefrl.envs.moving_dot  # noqa: F401  (registers prefrl/MovingDot-v0)
from prefrl.preference import RewardTrainerConfig
from prefrl.preference_env import PreferenceVectorEnv


@dataclass
class Args:
    total_timesteps: int = 200_000
    """Agent environment steps (all envs together)."""
    num_envs: int = 8
    """Parallel environments (one batched reward prediction per vector step)."""
    num_steps: int = 32
    """Rollout length per update."""
    lr: float = 1e-3
    """Adam learning rate (3e-3 learns faster on the true reward but, without a trust
    region, collapsed on the early learned reward in 3 of 4 seeds)."""
    gamma: float = 0.95
    """Discount."""
    learned_after: int = 100
    """Reward training steps before the agent gets the learned reward (the true one until then)."""
    total_labels: int = 1000
    """Label budget of the synthetic teacher."""
    fragment_length: int = 25
    """Transitions per compared clip (the wrapper's default is 50; docs/wrapper.md's figures use 25)."""
    reward_epochs: float = 1.0
    """Epochs per reward-training round: 1 publishes small updates often (the wrapper's default
    is ``RewardTrainerConfig().epochs``; docs/wrapper.md's figures use 1)."""
    vectorization: str = "sync"
    """``sync`` or ``async`` gymnasium vector env."""
    seed: int = 0


class ActorCritic(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.pi, self.v = nn.Linear(64, n_actions), nn.Linear(64, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.distributions.Categorical, torch.Tensor]:
        h = self.body(obs)
        return torch.distributions.Categorical(logits=self.pi(h)), self.v(h).squeeze(-1)


def main(args: Args) -> dict[str, float]:
    t0 = time.perf_counter()
    torch.manual_seed(args.seed)
    venv = gym.make_vec(
        "prefrl/MovingDot-v0", num_envs=args.num_envs, vectorization_mode=args.vectorization,
        obs_type="state", size=40,
    )  # fmt: skip
    env = PreferenceVectorEnv(
        venv, learned_after=args.learned_after, total_labels=args.total_labels, seed=args.seed,
        fragment_length=args.fragment_length, trainer=RewardTrainerConfig(epochs=args.reward_epochs),
    )  # fmt: skip
    agent = ActorCritic(4, 5)
    opt = torch.optim.Adam(agent.parameters(), lr=args.lr)
    n, T = args.num_envs, args.num_steps
    obs_buf = torch.zeros(T, n, 4)  # [T, n, obs]
    act_buf = torch.zeros(T, n, dtype=torch.long)
    rew_buf = torch.zeros(T, n)
    done_buf = torch.zeros(T, n)
    obs, _ = env.reset(seed=args.seed)
    ep_true = np.zeros(n)
    finished: list[float] = []
    for _ in range(max(1, args.total_timesteps // (n * T))):
        for t in range(T):
            o = torch.as_tensor(obs)
            with torch.no_grad():
                dist, _ = agent(o)
            a = dist.sample()
            obs, r, term, trunc, info = env.step(a.numpy())
            obs_buf[t], act_buf[t] = o, a
            rew_buf[t] = torch.as_tensor(r, dtype=torch.float32)
            done_buf[t] = torch.as_tensor(term | trunc, dtype=torch.float32)
            ep_true += info["true_reward"]
            for i in np.flatnonzero(term | trunc):
                finished.append(float(ep_true[i]))
                ep_true[i] = 0.0
        with torch.no_grad():
            _, last_v = agent(torch.as_tensor(obs))
        ret = torch.zeros(T, n)  # discounted returns, bootstrapped from the last value
        run = last_v
        for t in reversed(range(T)):
            run = rew_buf[t] + args.gamma * run * (1.0 - done_buf[t])
            ret[t] = run
        dist, v = agent(obs_buf.reshape(T * n, 4))
        adv = (ret.reshape(-1) - v).detach()
        loss = -(dist.log_prob(act_buf.reshape(-1)) * adv).mean() + 0.5 * (ret.reshape(-1) - v).pow(2).mean()
        loss = loss - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    metrics = env.metrics()
    env.close()
    last = finished[-20:] or [float("nan")]
    result = {
        "true_return_last_episodes": float(np.mean(last)),
        "episodes": len(finished),
        "preferences": metrics.get("preferences", 0),
        "reward_train_steps": metrics.get("reward_train_steps", 0),
        "final_reward_source": metrics["reward_source"],
        "wall_s": time.perf_counter() - t0,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
