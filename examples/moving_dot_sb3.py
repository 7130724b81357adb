"""An unmodified stable-baselines3 PPO learns the moving dot from synthetic preferences.

The agent only ever sees the reward returned by ``PreferenceEnv``: the true reward until
the reward model has had ``learned_after`` training steps, the learned one after that.
At the end the policy is evaluated on the *true* reward of a fresh, unwrapped env.

    python examples/moving_dot_sb3.py --total-timesteps 60000 --obs-type state
    python examples/moving_dot_sb3.py --total-timesteps 300000   # pixels, CnnPolicy (slow on CPU)
    python examples/moving_dot_sb3.py --total-timesteps 60000 --obs-type state --oracle  # true reward
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Literal

import gymnasium as gym
import tyro
from stable_baselines3 import PPO

import prefrl.envs.moving_dot  # noqa: F401  (registers prefrl/MovingDot-v0)
from prefrl.preference_env import PreferenceEnv


@dataclass
class Args:
    total_timesteps: int = 60_000
    """Agent environment steps."""
    obs_type: Literal["pixels", "state"] = "state"
    """Observations of the agent and the reward model (pixels: CnnPolicy + CNNReward)."""
    size: int = 40
    """Image side of the moving-dot world."""
    fragment_length: int = 25
    """Transitions per compared clip (the wrapper's default is 50; docs/wrapper.md's figures use 25)."""
    learned_after: int = 100
    """Reward training steps before the agent gets the learned reward."""
    total_labels: int = 1000
    """Label budget of the synthetic teacher."""
    n_steps: int = 512
    """PPO rollout length."""
    eval_episodes: int = 10
    """Episodes to evaluate the final policy on the true reward."""
    seed: int = 0
    oracle: bool = False
    """Baseline: train the same PPO on the unwrapped env's true reward (no preferences)."""


def true_return(model: PPO | None, args: Args, episodes: int) -> float:
    """Mean true return of ``model`` (random actions when ``None``) on a fresh env."""
    env = gym.make("prefrl/MovingDot-v0", obs_type=args.obs_type, size=args.size)
    total = 0.0
    for ep in range(episodes):
        obs, _ = env.reset(seed=10_000 + ep)
        done = False
        while not done:
            a = env.action_space.sample() if model is None else model.predict(obs, deterministic=True)[0]
            obs, r, term, trunc, _ = env.step(a)
            total += float(r)
            done = term or trunc
    return total / episodes


def main(args: Args) -> dict[str, float]:
    t0 = time.perf_counter()
    base = gym.make("prefrl/MovingDot-v0", obs_type=args.obs_type, size=args.size)
    env: gym.Env = base
    if not args.oracle:
        env = PreferenceEnv(
            base,
            fragment_length=args.fragment_length,
            learned_after=args.learned_after,
            total_labels=args.total_labels,
            seed=args.seed,
        )
    policy = "CnnPolicy" if args.obs_type == "pixels" else "MlpPolicy"
    model = PPO(policy, env, n_steps=min(args.n_steps, args.total_timesteps), batch_size=64, seed=args.seed)
    model.learn(total_timesteps=args.total_timesteps)
    metrics = env.metrics() if isinstance(env, PreferenceEnv) else {"reward_source": "true (oracle)"}
    env.close()
    result = {
        "true_return": true_return(model, args, args.eval_episodes),
        "random_return": true_return(None, args, args.eval_episodes),
        "preferences": metrics.get("preferences", 0),
        "reward_train_steps": metrics.get("reward_train_steps", 0),
        "final_reward_source": metrics["reward_source"],
        "wall_s": time.perf_counter() - t0,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(tyro.cli(Args))
