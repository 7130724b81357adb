"""A CleanRL-style PPO on the learned reward of a finished prefrl run.

The one prefrl line is the wrapper around the vector env (marked below): the rest is an
ordinary single-file PPO for continuous actions, after CleanRL's ``ppo_continuous_action.py``.
The agent's reward is RUN's learned reward, normalised as RUN's agent saw it; the true reward
comes back in ``info["true_reward"]`` for logging. Run it after ``prefrl train``::

    python examples/cleanrl_learned_reward.py --run runs/pendulum --total-timesteps 50000
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
import tyro
from torch import nn
from torch.distributions import Normal

from prefrl.agents.learned_reward import LearnedRewardVectorWrapper


@dataclass
class Args:
    run: str = "runs/pendulum"
    """The prefrl run directory (or reward.safetensors file) whose reward the agent learns from."""
    env_id: str = "Pendulum-v1"
    """Gymnasium id of the environment the run learned its reward on."""
    total_timesteps: int = 50_000
    """Environment steps in all."""
    num_envs: int = 4
    """Parallel environments."""
    num_steps: int = 256
    """Steps per environment per rollout."""
    learning_rate: float = 1e-3
    """Adam learning rate."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    update_epochs: int = 10
    """Passes over each rollout."""
    num_minibatches: int = 8
    """Minibatches per pass."""
    clip_coef: float = 0.2
    """PPO clip range."""
    seed: int = 1
    """Seed of the environments and the network."""
    threads: int = 1
    """Torch CPU threads (small networks run fastest on one, above all on a busy machine)."""


class Agent(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)
        )
        self.actor_mean = nn.Sequential(
            nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, act_dim)
        )
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)  # (B,)

    def act(self, x: torch.Tensor, action: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        dist = Normal(self.actor_mean(x), self.actor_logstd.expand(len(x), -1).exp())
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.value(x)


def train(args: Args) -> dict[str, np.ndarray]:
    """Train; returns the last rollout: ``obs``, ``actions``, ``next_obs``, ``rewards`` (what the agent
    saw), ``true_rewards``, each ``(num_steps, num_envs, ...)``."""
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    envs = gym.make_vec(args.env_id, num_envs=args.num_envs)
    envs = LearnedRewardVectorWrapper.from_run(envs, args.run)  # <- prefrl: the learned reward
    obs_dim = int(np.prod(envs.single_observation_space.shape))
    act_dim = int(np.prod(envs.single_action_space.shape))
    low, high = envs.single_action_space.low, envs.single_action_space.high
    agent = Agent(obs_dim, act_dim)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    T, N = args.num_steps, args.num_envs
    obs = torch.zeros((T, N, obs_dim))
    next_obs_buf = torch.zeros((T, N, obs_dim))
    actions = torch.zeros((T, N, act_dim))
    logprobs, rewards, true_rewards = torch.zeros((T, N)), torch.zeros((T, N)), torch.zeros((T, N))
    dones, values = torch.zeros((T, N)), torch.zeros((T, N))

    next_obs = torch.tensor(envs.reset(seed=args.seed)[0], dtype=torch.float32)
    next_done = torch.zeros(N)
    start, batch = time.time(), T * N
    for iteration in range(max(1, args.total_timesteps // batch)):
        for step in range(T):
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.act(next_obs)
            actions[step], logprobs[step], values[step] = action, logprob, value
            o, reward, term, trunc, info = envs.step(np.clip(action.numpy(), low, high))
            rewards[step] = torch.as_tensor(reward)  # the learned reward
            true_rewards[step] = torch.as_tensor(info["true_reward"])  # for logging only
            next_obs = torch.tensor(o, dtype=torch.float32)
            next_obs_buf[step] = next_obs
            next_done = torch.tensor(np.logical_or(term, trunc), dtype=torch.float32)

        with torch.no_grad():  # generalised advantage estimation
            advantages = torch.zeros((T, N))
            last_gae = torch.zeros(N)
            next_value = agent.value(next_obs)
            for t in reversed(range(T)):
                not_done = 1.0 - (next_done if t == T - 1 else dones[t + 1])
                nxt = next_value if t == T - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nxt * not_done - values[t]
                advantages[t] = last_gae = delta + args.gamma * args.gae_lambda * not_done * last_gae
            returns = advantages + values

        b_obs, b_act = obs.reshape(batch, obs_dim), actions.reshape(batch, act_dim)  # (T*N, ...)
        b_logp, b_adv, b_ret = logprobs.reshape(-1), advantages.reshape(-1), returns.reshape(-1)
        mb = batch // args.num_minibatches
        for _ in range(args.update_epochs):
            for idx in torch.randperm(batch).split(mb):
                _, logp, _, value = agent.act(b_obs[idx], b_act[idx])
                ratio = (logp - b_logp[idx]).exp()
                adv = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef))
                loss = pg_loss.mean() + 0.5 * ((value - b_ret[idx]) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
        print(f"iteration {iteration + 1}: learned reward per step {rewards.mean():.3f}, "
              f"true reward per step {true_rewards.mean():.3f}, {time.time() - start:.0f} s")  # fmt: skip
    envs.close()
    return {"obs": obs.numpy(), "actions": actions.numpy(), "next_obs": next_obs_buf.numpy(),
            "rewards": rewards.numpy(), "true_rewards": true_rewards.numpy()}  # fmt: skip


if __name__ == "__main__":
    train(tyro.cli(Args))
