"""Named random streams derived from a run's one seed.

A run has one ``--seed``. Its main streams (environments, agent, reward-net initialisation,
the loop's generator) take that seed as it is; every side task draws from a stream of its own,
named here, so that it never shifts the main ones and two side tasks never share draws::

    rng = stream(seed, "heldout", iteration)   # a NumPy generator
    env.reset(seed=stream_seed(seed, "teacher"))  # an int for APIs that take one

A stream is ``np.random.SeedSequence([seed, key(name), *keys])``: the same seed, name and keys
give the same draws on every machine and Python version (the name's key is a hash of its
bytes, not Python's salted ``hash``).
"""

from __future__ import annotations

import hashlib

import numpy as np

STREAMS = {
    "teacher": "a simulated teacher's mistakes, skips and myopia",
    "reward_output": "random actions probing whether episodes terminate (--reward.output auto)",
    "accuracy_random": "random-action episodes of the final held-out reward accuracy",
    "accuracy_policy": "the final policy's episodes of the final held-out reward accuracy",
    "accuracy_pairs": "clip pairs of the final held-out reward accuracy",
    "fresh_agent": "environments and agent of --final-agent-steps",
    "agent_reset": "the fresh weights of --loop.agent-reset-at",
    "pseudo_labels": "unlabelled clips for the trainer's pseudo-labels, per iteration",
    "heldout": "clip pairs of reward/heldout_accuracy, per iteration",
    "watch": "steps the run watch scores (watch/* metrics), per iteration",
    "page_random": "random-action episodes of a run's page and of prefrl inspect",
    "page_pairs": "fresh clip pairs whose disagreements a run's page shows",
    "coverage_actions": "actions of the space-sample coverage of prefrl evaluate-reward",
}
"""Every named stream and what draws from it."""


def _key(name: str) -> int:
    if name not in STREAMS:
        raise KeyError(f"unknown random stream {name!r}; known: {sorted(STREAMS)}")
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


def seed_sequence(seed: int, name: str, *keys: int) -> np.random.SeedSequence:
    """The seed sequence of stream ``name`` (more ``keys``, e.g. an iteration, split it further)."""
    return np.random.SeedSequence([seed % (1 << 64), _key(name), *(k % (1 << 64) for k in keys)])


def stream(seed: int, name: str, *keys: int) -> np.random.Generator:
    """A NumPy generator on stream ``name`` of ``seed``."""
    return np.random.default_rng(seed_sequence(seed, name, *keys))


def stream_seed(seed: int, name: str, *keys: int) -> int:
    """An int seed (below 2**31, for Gymnasium, SB3 and teachers) on stream ``name`` of ``seed``."""
    return int(seed_sequence(seed, name, *keys).generate_state(1)[0] >> 1)
