"""The package's shape: imports only point down, no cycles, short modules, balanced folders.

These read the source (``ast``), so lazy imports inside functions count too.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "prefrl"

LAYERS: dict[str, int] = {
    "config_types": 0, "registration": 0, "seeding": 0, "threads": 0,  # option types, env ids, seeds, threads
    "data": 1, "envs": 1,  # no RL machinery
    "rewards": 2,
    "storage": 3, "selection": 3,
    "teachers": 4,  # the web teacher files queries in the store
    "agents": 5,
    "preference": 6,  # the Bradley-Terry model and the reward fitter: nothing about agents
    "training": 7, "preference_env": 7, "interpret": 7,  # three drivers over the fitter, never each other
    "run": 8,  # the application: configs, run directories, resume, report, sweeps
    "web": 9,
    "cli": 10,
}  # fmt: skip
"""Layer of each top-level package (docs/architecture.md, "Package map"): a module may import its own
package and any package of a lower layer, never one of its own layer or above."""


MAX_LINES = 600
MAX_FOLDER_SHARE = 0.20


def modules() -> dict[str, Path]:
    """``{"prefrl.training.loop": path, ...}`` for every module of the package."""
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(path: Path, known: dict[str, Path], for_types: bool = True) -> set[str]:
    """The prefrl modules ``path`` imports (``from a import b`` counts ``a.b`` when that is a module);
    those under ``if TYPE_CHECKING:`` only ``for_types`` (a callback naming the loop's type, as
    stable-baselines3's callbacks do, imports nothing at run time)."""
    found = set()
    tree = ast.parse(path.read_text())
    blocks = [] if for_types else [b for b in ast.walk(tree) if isinstance(b, ast.If) and _type_checking(b)]
    skip = {id(n) for b in blocks for stmt in b.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("prefrl")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("prefrl"):
                subs = {f"{node.module}.{a.name}" for a in node.names} & set(known)
                found |= subs or {node.module}
    return {m for m in found if m in known}


def _type_checking(node: ast.If) -> bool:
    """Whether ``node`` is ``if TYPE_CHECKING:`` (its body is for type checkers only)."""
    test = node.test
    return isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith("TYPE_CHECKING")


def package(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_every_package_has_a_layer() -> None:
    tops = {
        p.name.removesuffix(".py") for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    assert tops - {"__init__"} <= set(LAYERS), f"give these a layer: {tops - {'__init__'} - set(LAYERS)}"


def test_imports_only_point_down() -> None:
    known = modules()
    upward = []
    for name, path in known.items():
        if name == "prefrl":
            continue
        src = package(name)
        for target in imports(path, known):
            dst = package(target)
            if dst and dst != src and LAYERS[dst] >= LAYERS[src]:
                upward.append(f"{name} -> {target}")
    assert not upward, "imports that do not point down:\n" + "\n".join(sorted(upward))


def test_no_import_cycles_between_modules() -> None:
    known = modules()
    graph = {n: imports(p, known, for_types=False) - {n} for n, p in known.items()}
    # a package's __init__ re-exports its modules: edges into an __init__ are not cycles by themselves
    inits = {n for n, p in known.items() if p.name == "__init__.py"}
    graph = {n: {t for t in ts if t not in inits} for n, ts in graph.items()}
    state: dict[str, int] = defaultdict(int)  # 0 new, 1 on the stack, 2 done
    cycles: list[list[str]] = []

    def visit(n: str, stack: list[str]) -> None:
        state[n] = 1
        for t in sorted(graph.get(n, ())):
            if state[t] == 1:
                cycles.append([*stack[stack.index(t) :], t])
            elif state[t] == 0:
                visit(t, [*stack, t])
        state[n] = 2

    for n in sorted(graph):
        if state[n] == 0:
            visit(n, [n])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_modules_are_short() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_folder_holds_more_than_a_fifth_of_the_code() -> None:
    lines = {p: len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    total = sum(lines.values())
    share: dict[str, float] = defaultdict(float)
    for p, n in lines.items():
        rel = p.relative_to(SRC)
        if len(rel.parts) > 1:
            share[rel.parts[0]] += n / total
    big = {k: round(v, 3) for k, v in share.items() if v > MAX_FOLDER_SHARE}
    assert not big, f"folders over {MAX_FOLDER_SHARE:.0%} of the code: {big}"


def test_old_import_paths_are_gone() -> None:
    """The shims of 0.1.0 were removed (docs/core.md names the new homes)."""
    import importlib

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("prefrl.envs.preference_env")
    import prefrl.envs

    assert not hasattr(prefrl.envs, "LearnedRewardVecEnv")
