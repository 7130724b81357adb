"""No code of the project saves or loads an agent with stable-baselines3's own (pickled) format.

SB3's ``agent.save(...)`` / ``PPO.load(...)`` write and read a ``.zip`` whose entries are pickled
Python objects (``data``'s ``:serialized:`` values, ``policy.pth``, ``pytorch_variables.pth``);
loading one runs whatever code it carries. prefrl has its own writer and reader
(:func:`prefrl.agents.policy_io.save_agent` / ``load_agent``: safetensors plus JSON). This reads the
source (``ast``) of the package, the benchmarks, the examples and the scripts, and refuses:

- ``.save(``, ``.load(``, ``.save_replay_buffer(``, ``.load_replay_buffer(`` called on an agent: an
  expression ending in a name like ``agent``, ``model``, ``policy`` (``loop.agent``,
  ``self.model``), or one that holds an SB3 class or agent: imported from
  ``stable_baselines3`` / ``sbx`` / ``sb3_contrib``, ``ALGOS[...]``, ``agent_class(...)``,
  ``make_agent(...)``, ``load_agent(...)``, or a name assigned from one of those;
- SB3's zip and pickle helpers (``load_from_zip_file``, ``save_to_zip_file``, ``load_from_pkl``,
  ``save_to_pkl``), ``torch.save`` / ``torch.load``, and importing ``pickle``, ``cloudpickle`` or
  ``dill``.

prefrl's own ``dataset.save``, ``PreferenceDataset.load``, ``batch.save``, ``LoopCheckpoint(...).load``
and ``np.load`` pass.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("src/prefrl", "benchmarks", "examples", "scripts")
SB3_MODULES = ("stable_baselines3", "sbx", "sb3_contrib")
AGENT_NAME = re.compile(r"(^|_)(agent|model|policy|algo|learner|ppo|sac|td3|dqn|a2c)s?$", re.IGNORECASE)
"""The last name of an expression that is an agent (``agent``, ``loop.agent``, ``sac_model``)."""
SB3_MAKERS = frozenset({"ALGOS", "agent_class", "make_agent", "load_agent"})
"""prefrl's names whose value (or call) is an SB3 class or agent."""
PERSIST = frozenset({"save", "load", "save_replay_buffer", "load_replay_buffer"})
PICKLE_HELPERS = frozenset({"load_from_zip_file", "save_to_zip_file", "load_from_pkl", "save_to_pkl"})
PICKLE_MODULES = frozenset({"pickle", "cloudpickle", "dill", "_pickle"})


def last_name(node: ast.expr) -> str | None:
    """``agent`` for ``loop.agent``, ``ALGOS`` for ``ALGOS[k]``, ``make_agent`` for ``make_agent(...)``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return node.attr
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def root_name(node: ast.expr) -> str | None:
    """``loop`` for ``loop.agent``, ``sb`` for ``sb.SAC``, ``make_agent`` for ``make_agent(...).x``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def holds_sb3(node: ast.expr, tainted: set[str]) -> bool:
    """Whether ``node`` is an SB3 class or agent: its last or first name is one."""
    return bool({last_name(node), root_name(node)} & tainted)


def sb3_names(tree: ast.AST) -> set[str]:
    """Names that hold an SB3 class or agent: imported from SB3, prefrl's makers, and (to a fixed
    point) names assigned one of them (``cls = agent_class(algo)``, ``m = PPO(...)``, ``x = m``)."""
    tainted = set(SB3_MAKERS)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in SB3_MODULES:
            tainted |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            tainted |= {
                a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in SB3_MODULES
            }
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None]
    while True:
        more = {
            t.id
            for a in assigns
            if a.value is not None and holds_sb3(a.value, tainted)
            for target in (a.targets if isinstance(a, ast.Assign) else [a.target])
            for t in ast.walk(target)
            if isinstance(t, ast.Name)
        } - tainted
        if not more:
            return tainted
        tainted |= more


def violations(source: str, where: str = "<code>") -> list[str]:
    """Every SB3 save/load of an agent and every pickle helper in ``source``, as ``where:line: what``."""
    tree = ast.parse(source)
    tainted = sb3_names(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            imported = {a.name for a in node.names}
            if {m.split(".")[0] for m in modules} & PICKLE_MODULES:
                found.append(f"{where}:{line}: imports a pickle module")
            if imported & PICKLE_HELPERS:
                found.append(
                    f"{where}:{line}: imports SB3's pickle helpers {sorted(imported & PICKLE_HELPERS)}"
                )
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method, receiver = node.func.attr, node.func.value
        text = ast.unparse(node.func)
        if method in PICKLE_HELPERS:
            found.append(f"{where}:{line}: {text}(...) is SB3's pickle-based format")
        elif method in ("save", "load") and last_name(receiver) in ("torch", "th"):
            found.append(f"{where}:{line}: {text}(...) pickles")
        elif method in PERSIST:
            name = last_name(receiver)
            if (name is not None and AGENT_NAME.search(name)) or holds_sb3(receiver, tainted):
                found.append(
                    f"{where}:{line}: {text}(...) is SB3's own (pickled) format; use save_agent/load_agent"
                )
    return found


BAD = {
    "agent.save(str(run / 'policy.zip'))": "agent.save",
    "loop.agent.save(p)": "loop.agent.save",
    "self.model.load(p)": "self.model.load",
    "sac_model.save(p)": "sac_model.save",
    "from stable_baselines3 import PPO\nPPO.load(p)": "PPO.load",
    "import stable_baselines3 as sb\nsb.SAC.load(p)": "sb.SAC.load",
    "from sbx import SAC as S\nlearner = S('MlpPolicy', env)\nthing = learner\nthing.save(p)": "thing.save",
    "cls = agent_class('sac')\nx = cls.load(p)": "cls.load",
    "ALGOS['ppo'].load(p)": "ALGOS['ppo'].load",
    "runner = make_agent(cfg, venv)\nrunner.save_replay_buffer(p)": "runner.save_replay_buffer",
    "from stable_baselines3.common.save_util import load_from_zip_file": "pickle helpers",
    "import torch\ntorch.save(state, p)": "torch.save",
    "import pickle": "pickle module",
}
GOOD = [
    "dataset.save(p)",
    "self.dataset.save(self.run_dir / 'preferences.npz')",
    "PreferenceDataset.load(p)",
    "batch = TrajectoryBatch.load(p)\nbatch.save(q)",
    "LoopCheckpoint(self).load(agent_loader)",
    "save_agent(agent, p)",
    "agent = load_agent('sac', p, venv)\nagent.predict(obs)",
    "np.load(p, allow_pickle=False)",
    "save_replay_buffer(loop.agent.replay_buffer, p)",
]


@pytest.mark.parametrize("code", list(BAD))
def test_the_check_catches_sb3_saves_and_loads(code: str) -> None:
    found = violations(code)
    assert len(found) == 1 and BAD[code] in found[0], found


@pytest.mark.parametrize("code", GOOD)
def test_the_check_passes_prefrls_own_files(code: str) -> None:
    assert violations(code) == []


def test_no_code_saves_or_loads_an_agent_with_sb3s_pickled_format() -> None:
    files = [p for d in SOURCES for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 100  # the tree was found
    found = [v for p in files for v in violations(p.read_text(), str(p.relative_to(ROOT)))]
    assert not found, "\n".join(found)
