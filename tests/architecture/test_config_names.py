"""One concept, one name, one default: a walk over every config dataclass of the package."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections import defaultdict
from typing import Any

import prefrl

RETIRED = {
    "segment_length": "fragment_length",
    "max_preferences": "total_labels",
    "max_preferences_kept": "max_labels_kept",
    "comparison_queue_size": "max_labels_kept",
    "min_preferences": "min_labels",
    "pairs_per_segment": "pairs_per_fragment",
    "initial_comparison_frac": "initial_label_frac",
    "allow_variable_horizon": "(nothing: episode ends are handled by absorbing states)",
}
"""Old spellings of an idea that has one name now: no config field may use them."""

DIFFERENT_CONCEPTS = {
    "total_labels": "a budget spread over the loop's iterations (20) vs the wrapper's optional cap on an "
    "open-ended run (None: no cap)",
    "batch_size": "SB3 transitions per agent update vs preference pairs per reward step vs regression rows",
    "lr": "agent, reward trainer and the interpretation fits each have their own optimiser",
    "epochs": "interpret's supervised regression on the true reward is not the preference trainer",
    "gamma": "the agent's discount vs a shaping potential's vs the synthetic teacher's (myopic) discount",
    "hidden": "the reward network's layers vs a shaping potential's (none: linear)",
    "seed": "evaluation episodes use seeds apart from training (10000 on) so they are unseen",
    "algo": "rollouts records with a named agent; training picks one from the action space",
    "deterministic": "evaluation: the mean action, sampled for discrete actions on images (auto); rollouts "
    "record the behaviour",
    "episodes": "evaluate: episodes scored; rollouts: optional episode count (else steps)",
    "policy": "different things: SB3 policy class vs a policy file",
    "steps": "different things: steps to record, optimiser steps of a shaping fit, a sweep's run length",
    "out": "an output file vs an output folder",
    "run": "a run directory vs a run name in the query store",
    "env": "one environment section vs a sweep's list of ids",
    "teacher": "a sweep takes a list of teachers",
}
"""Field names shared by configs whose defaults differ because they name different things."""


def config_classes() -> list[type]:
    out = []
    for m in pkgutil.walk_packages(prefrl.__path__, "prefrl."):
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            if (isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__
                    and name.endswith(("Config", "Settings"))):  # fmt: skip
                out.append(obj)
    return out


def default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def test_the_walk_sees_every_entry_point() -> None:
    names = {c.__name__ for c in config_classes()}
    assert {"LoopConfig", "RewardTrainerConfig", "PreferenceEnvConfig", "TrainConfig", "AgentConfig",
            "SweepConfig"} <= names  # fmt: skip


def test_no_config_uses_a_retired_name() -> None:
    bad = [f"{c.__module__}.{c.__name__}.{f.name} (now {RETIRED[f.name]})"
           for c in config_classes() for f in dataclasses.fields(c) if f.name in RETIRED]  # fmt: skip
    assert not bad, bad


def test_a_shared_name_has_one_default() -> None:
    seen: dict[str, dict[str, Any]] = defaultdict(dict)
    for c in config_classes():
        for f in dataclasses.fields(c):
            seen[f.name][f"{c.__module__}.{c.__name__}"] = default(f)
    clash = {}
    for name, where in seen.items():
        values = [v for v in where.values() if v is not dataclasses.MISSING]
        if name not in DIFFERENT_CONCEPTS and any(v != values[0] for v in values):
            clash[name] = where
    assert not clash, f"one name, several defaults: {clash}"


def test_every_entry_point_trains_the_reward_with_one_default_trainer() -> None:
    from prefrl.preference.trainer import RewardTrainerConfig
    from prefrl.preference_env import PreferenceEnvConfig
    from prefrl.run.config import TrainConfig
    from prefrl.training.config import LoopConfig

    assert TrainConfig().trainer == RewardTrainerConfig() == PreferenceEnvConfig().trainer
    assert RewardTrainerConfig().epochs == 50
    assert TrainConfig().loop == LoopConfig()
    assert PreferenceEnvConfig().fragment_length == LoopConfig().fragment_length == 50
    assert PreferenceEnvConfig().max_labels_kept == LoopConfig().max_labels_kept == 3000
