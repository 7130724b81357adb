"""Names are imported from the module that defines them, or from a package's public API.

The rule, for every ``from X import name`` in ``src/prefrl``, ``benchmarks/``, ``examples/`` and ``tests/``
where ``X`` is a module of prefrl (relative imports resolved), read from the source (``ast``), so imports
inside functions and under ``if TYPE_CHECKING:`` count too:

- ``name`` is defined in ``X`` (a ``def``, ``class`` or assignment at its top level, also inside a top-level
  ``if``/``try``), or ``X.name`` is a module (``from prefrl.run import config``): fine;
- ``X`` is a package's ``__init__`` that lists ``name`` in its ``__all__`` and the import is from outside
  that package: fine. A package's ``__all__`` is its documented public API (the README, docs and examples
  write ``from prefrl.rewards import MLPReward``); inside the package the defining module is used, so that
  no module of a package imports its own ``__init__`` (a cycle waiting to happen);
- otherwise ``X`` only imports ``name`` from elsewhere (``from prefrl.run.train import TrainConfig``, defined
  in ``prefrl.run.config``): the import names the wrong module, and the failure says which one defines it.
  A module that stops importing a name it no longer uses then breaks nobody.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "prefrl"
SCANNED = ("src/prefrl", "benchmarks", "examples", "tests")


@dataclass(frozen=True)
class Module:
    """What a module of prefrl binds at its top level."""

    path: Path
    defined: frozenset[str]
    imported: dict[str, tuple[str, str | None]]
    """``{bound name: (source module, its name there; None for ``import x``)}``."""
    public: frozenset[str]
    """``__all__`` of a package's ``__init__`` (empty for other modules)."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements run at import time: the body, and the bodies of top-level ``if``/``try``/``with``."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.Try | ast.With):
            for block in (stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])):
                yield from _top_level(block)
            for handler in getattr(stmt, "handlers", []):
                yield from _top_level(handler.body)


def _source(importer: str | None, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module ``node`` imports from (relative imports resolved against ``importer``)."""
    if node.level == 0:
        return node.module
    assert importer is not None, "a relative import outside the package"
    base = importer.split(".")[: None if is_package else -1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _index() -> dict[str, Module]:
    out = {}
    for path in SRC.rglob("*.py"):
        name, tree = module_name(path), ast.parse(path.read_text())
        defined: set[str] = set()
        imported: dict[str, tuple[str, str | None]] = {}
        public: frozenset[str] = frozenset()
        for stmt in _top_level(tree.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(stmt.name)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if path.name == "__init__.py" and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in targets
                ):
                    assert stmt.value is not None
                    public = frozenset(ast.literal_eval(stmt.value))
            elif isinstance(stmt, ast.ImportFrom):
                source = _source(name, path.name == "__init__.py", stmt)
                imported |= {a.asname or a.name: (source or "", a.name) for a in stmt.names}
            elif isinstance(stmt, ast.Import):
                imported |= {a.asname or a.name.split(".")[0]: (a.name, None) for a in stmt.names}
        out[name] = Module(path, frozenset(defined), imported, public)
    return out


def defining_module(modules: dict[str, Module], source: str, name: str) -> str:
    """Where ``name``, as ``source`` binds it, is defined (a prefrl module, or a third-party one)."""
    while True:
        if name in modules[source].defined or f"{source}.{name}" in modules:
            return source
        if name not in modules[source].imported:
            return f"{source} (nowhere: not defined, not imported)"
        source, original = modules[source].imported[name]
        if original is None or source not in modules:
            return source
        name = original


def wrong_imports(
    files: list[Path], modules: dict[str, Module], as_module: dict[Path, str] | None = None
) -> list[str]:
    """``path:line: from X import name`` lines that break the rule, each saying where ``name`` is defined
    (``as_module`` reads a file as that module of prefrl, for the rule's own tests)."""
    found = []
    for path in files:
        importer = (as_module or {}).get(path) or (module_name(path) if SRC in path.parents else None)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _source(importer, path.name == "__init__.py", node)
            if source not in modules:
                continue  # not prefrl
            mod = modules[source]
            inside = importer is not None and (importer == source or importer.startswith(source + "."))
            for alias in node.names:
                name = alias.name
                if (
                    name in mod.defined
                    or f"{source}.{name}" in modules
                    or (name in mod.public and not inside)
                ):
                    continue
                where = defining_module(modules, source, name)
                rel = path.relative_to(ROOT) if ROOT in path.parents else path.name
                found.append(f"{rel}:{node.lineno}: from {source} import {name} (defined in {where})")
    return found


def scanned_files() -> list[Path]:
    return sorted(p for d in SCANNED for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts)


def test_every_import_names_the_defining_module_or_a_public_api() -> None:
    wrong = wrong_imports(scanned_files(), _index())
    assert not wrong, f"{len(wrong)} imports take a name from a module that only imports it:\n" + "\n".join(
        wrong
    )


def test_the_rule_catches_a_re_export_and_spares_a_public_api(tmp_path: Path) -> None:
    """A re-exported config and a package's private name are caught; the public API, the defining
    module and a submodule pass; the failure names where the name is defined."""
    modules = _index()
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from prefrl.run.train import TrainConfig\n"  # defined in prefrl.run.config
        "from prefrl.run.config import TrainConfig\n"
        "from prefrl.rewards import MLPReward\n"  # the package's __all__
        "from prefrl.rewards.mlp import MLPReward\n"
        "from prefrl.run import config\n"
    )
    found = wrong_imports([probe], modules)
    assert [line.split(": ", 1)[1] for line in found] == [
        "from prefrl.run.train import TrainConfig (defined in prefrl.run.config)"
    ]
    assert defining_module(modules, "prefrl.rewards", "MLPReward") == "prefrl.rewards.mlp"


def test_inside_a_package_its_own_init_is_not_a_source(tmp_path: Path) -> None:
    """The public API is for other packages: a module of ``prefrl.rewards`` importing ``MLPReward`` from
    ``prefrl.rewards`` (absolutely or as ``from . import``) is caught; from ``prefrl.interpret`` it passes."""
    modules = _index()
    probe = tmp_path / "probe.py"
    probe.write_text("from prefrl.rewards import MLPReward\nfrom . import MLPReward\n")
    inside = wrong_imports([probe], modules, {probe: "prefrl.rewards.probe"})
    assert [line.split(": ", 1)[1] for line in inside] == 2 * [
        "from prefrl.rewards import MLPReward (defined in prefrl.rewards.mlp)"
    ]
    probe.write_text("from prefrl.rewards import MLPReward\n")
    assert wrong_imports([probe], modules, {probe: "prefrl.interpret.probe"}) == []
