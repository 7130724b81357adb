"""How saved discrete-action policies spread their actions over the same frames.

    python benchmarks/policy_actions.py --env.id prefrl/MovingDot-v0 --trajectories random.npz \
        --policy stuck=RUN/checkpoints/iter_000006/policy.zip --policy fresh=other/policy.zip \
        --out actions.json

For each policy (prefrl's ``policy.zip`` of a PPO or A2C agent on a discrete action space)
over the observations of a trajectory file (``prefrl rollouts``; random play covers the states
no policy prefers): the mean probability of each action, the mean entropy of the policy per
observation (what the entropy floor of ``--agent.min-entropy`` reads, on the agent's own
states), and the entropy of the mean. Their difference is how much the action depends on the
observation (the mutual information of action and observation, in nats). A policy can keep its
mean entropy at the floor while it has all but dropped an action everywhere: the entropy of the
mean says so. Prints one JSON object per policy; ``--out`` also writes them to a file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy

from prefrl.agents.policy_io import load_agent
from prefrl.agents.sb3 import make_vec_env
from prefrl.data.trajectories import TrajectoryBatch

CHUNK = 1024
"""Observations per forward pass."""


def entropy(p: np.ndarray) -> np.ndarray:
    """Entropy in nats of each distribution ``[..., n]`` (the last axis)."""
    return -(p * np.log(np.clip(p, 1e-12, None))).sum(-1)


def action_probs(
    policy: str | Path, env_id: str, obs: np.ndarray, env_kwargs: dict[str, object]
) -> np.ndarray:
    """The policy's action probabilities ``[N, n]`` on observations ``obs`` ``[N, ...]``."""
    venv = make_vec_env(env_id, 1, env_kwargs, 0)
    agent = load_agent("auto", policy, venv)
    pi = agent.policy
    if not isinstance(pi, ActorCriticPolicy) or not isinstance(agent.action_space, spaces.Discrete):
        raise ValueError(f"{policy}: needs a PPO or A2C policy over discrete actions")
    out = []
    with torch.no_grad():
        for i in range(0, len(obs), CHUNK):
            o, _ = pi.obs_to_tensor(obs[i : i + CHUNK])
            dist = pi.get_distribution(o).distribution
            assert isinstance(dist, torch.distributions.Categorical)  # a discrete action space
            out.append(dist.probs.cpu().numpy())
    venv.close()
    return np.concatenate(out)


def summarize(probs: np.ndarray) -> dict[str, object]:
    """Mean probability per action, mean entropy, entropy of the mean and their difference."""
    mean = probs.mean(0)
    h_each, h_mean = float(entropy(probs).mean()), float(entropy(mean))
    return {
        "observations": len(probs),
        "mean_probs": [round(float(p), 4) for p in mean],
        "mean_entropy": round(h_each, 4),
        "entropy_of_mean": round(h_mean, 4),
        "mutual_information": round(h_mean - h_each, 4),
        "max_entropy": round(float(np.log(probs.shape[1])), 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env.id", dest="env_id", required=True, help="environment the policies act in")
    ap.add_argument("--env.kwargs", dest="env_kwargs", default="{}", help="gym.make keyword arguments (JSON)")
    ap.add_argument("--trajectories", required=True, help="a prefrl trajectory file (.npz): the frames")
    ap.add_argument(
        "--policy", action="append", required=True, metavar="NAME=FILE", help="a policy.zip, named"
    )
    ap.add_argument("--max-obs", type=int, default=2000, help="at most this many observations (the first)")
    ap.add_argument("--out", help="also write the records to this JSON file")
    args = ap.parse_args(argv)
    kwargs = json.loads(args.env_kwargs)
    batch = TrajectoryBatch.load(args.trajectories)
    obs = np.asarray(batch.obs)[: args.max_obs]
    records = []
    for spec in args.policy:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--policy takes NAME=FILE, got {spec!r}")
        rec = {"policy": name, "file": path, **summarize(action_probs(path, args.env_id, obs, kwargs))}
        print(json.dumps(rec))
        records.append(rec)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            json.dumps({"env": args.env_id, "trajectories": args.trajectories, "records": records}, indent=2)
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
