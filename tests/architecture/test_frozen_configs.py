"""Configs are frozen (issue 46, item 4): a config is resolved once into a new one and never
assigned to afterwards; what changes while a run goes lives in its state. The sweep and every
other caller derive a config with ``dataclasses.replace``."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
from pathlib import Path

import pytest

import prefrl

SRC = Path(__file__).resolve().parents[2] / "src" / "prefrl"


def config_dataclasses() -> dict[str, type]:
    """Every dataclass of the package whose name ends in ``Config``, by qualified name."""
    out = {}
    for m in pkgutil.walk_packages(prefrl.__path__, "prefrl."):
        mod = importlib.import_module(m.name)
        for name, obj in vars(mod).items():
            if (isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__
                    and name.endswith("Config")):  # fmt: skip
                out[f"{mod.__name__}.{name}"] = obj
    return out


def test_every_config_dataclass_is_frozen() -> None:
    configs = config_dataclasses()
    # the walk sees the classes the source defines (a broken walk would pass with none)
    in_source = {node.name for p in SRC.rglob("*.py") for node in ast.walk(ast.parse(p.read_text()))
                 if isinstance(node, ast.ClassDef) and node.name.endswith("Config")}  # fmt: skip
    assert {c.__name__ for c in configs.values()} == in_source and len(in_source) >= 16
    thawed = sorted(name for name, c in configs.items() if not vars(c)["__dataclass_params__"].frozen)
    assert not thawed, f"not frozen (use @dataclass(frozen=True), derive with dataclasses.replace): {thawed}"


def test_a_run_config_cannot_be_assigned_to() -> None:
    from prefrl.run.config import TrainConfig

    cfg = TrainConfig()
    for section, name, value in ((cfg, "seed", 3), (cfg.loop, "total_labels", 3), (cfg.agent, "algo", "ppo")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(section, name, value)  # the way the sweep once set its options
    new = dataclasses.replace(cfg, loop=dataclasses.replace(cfg.loop, total_labels=3))
    assert new.loop.total_labels == 3 and cfg.loop.total_labels == TrainConfig().loop.total_labels
