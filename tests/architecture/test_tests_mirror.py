"""Tests mirror ``src/prefrl/``: where a test lives, and its name, say what it tests.

The rule, checked over every Python file under ``tests/``:

1. **Folders.** Every folder under ``tests/`` that holds Python files is the package of ``src/prefrl/`` at the
   same path (``tests/preference/`` for ``src/prefrl/preference/``), or one of the cross-cutting folders of
   ``CROSS_CUTTING`` (docs, examples, benchmarks, architecture), which check what spans the package rather
   than one of its modules. Folders without Python files (test data such as ``tests/training/golden/``) may
   sit inside either. Every test folder is a package (``__init__.py``), so that two test modules of one name
   in two folders (``tests/agents/test_replay.py``, ``tests/interpret/test_replay.py``) stay two modules.
2. **Names.** A test module ``test_<name>.py`` in a mirrored folder tests a module of that folder's package:
   ``<name>`` is the module's name, or starts with it and ``_`` (``test_policy_io.py`` tests ``policy_io.py``,
   ``test_sweep_orphans.py`` tests ``sweep.py``); or ``<name>`` is (or starts with, and ``_``) a named
   capability listed for that folder in ``CAPABILITIES``, with a line saying what it covers: a behaviour that
   spans the package's modules, such as killing a run at random moments or a page seen in a browser. Top-level
   ``tests/test_<name>.py`` tests a top-level module of ``src/prefrl`` (``registration.py``) or a capability
   listed for ``""``. In ``tests/benchmarks/`` the name points at a script of ``benchmarks/`` the same way;
   the other cross-cutting folders are themselves the capability (a doc, an example, a rule of the code).
3. Python files not named ``test_*.py`` (``conftest.py``, helpers such as ``tests/storage/helpers.py``) hold
   fixtures and helpers, not tests, and may live in any test folder.

A listed capability that no test module uses any more fails too, so the list stays true.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "prefrl"
TESTS = ROOT / "tests"

CROSS_CUTTING: dict[str, str] = {
    "architecture": "rules of the code itself: layers, names, no pickle, this mirror, imports",
    "benchmarks": "the scripts of benchmarks/ and the docs tables made from their results",
    "docs": "every command block of README.md and docs/*.md, and the notebooks, run",
    "examples": "the scripts of examples/ run as their readers run them",
}
"""Top-level test folders that are not packages of ``src/prefrl`` (a reason each)."""

CAPABILITIES: dict[str, dict[str, str]] = {
    "": {
        "doctests": "the >>> examples of every docstring of the package run",
        "install_script": "scripts/install.sh runs for real against a venv",
    },
    "agents": {
        "discrete": "every action space: the agent chosen from it, DQN with replay relabelling",
        "integrations": "a finished run's reward trains agents in CleanRL-style code and RL Zoo",
        "sbx_backend": "the SBX (JAX) agent backend through the same loop",
    },
    "cli": {
        "pixels": "prefrl train on image observations, Atari preprocessing, Pong end to end",
        "threads": "--threads on every prefrl command that computes with torch",
    },
    "data": {"episode_ends": "falls and goals continue in an absorbing state, time limits never do"},
    "envs": {"box2d": "Box2D tasks install with the package and train"},
    "interpret": {
        "coinrun_saliency": "a CoinRun reward's saliency falls on the coin",
        "metrics_csv": "a garbage metrics.csv is one line naming it, from report and interpret",
    },
    "preference_env": {"default_reward": "the wrapper's default reward network is prefrl train's"},
    "rewards": {"crafted_reward": "crafted reward files are one line naming the file, through the CLI"},
    "run": {
        "no_pickle": "every command that writes a run writes no pickle",
        "removed_options": "a config naming a removed technique's option loads or is refused in one line",
        "run_messages": "the lines a run's start or resume refuses with",
    },
    "training": {
        "chaos": "kill -9 a running prefrl train at random moments, resume each time",
        "golden": "a fixed-seed run reproduces its committed figures exactly",
        "resume": "kill prefrl train mid-run and resume it: it loses no label",
        "self_predictive_loop": "REED in prefrl train: logged, checkpointed, resumed",
        "ties": "ties are reported while a run goes and in its report",
        "web": "a web run's budget and crashes, through the real labelling server",
    },
    "web": {
        "api": "the JSON API against a real uvicorn server over a real store",
        "browser": "a person labels in headless Chromium",
        "client_address": "no client-sent header decides who a client is",
        "fuzz": "no malformed request gets a 5xx or leaves a traceback",
        "scope": "a server started for one run serves and counts only that run",
    },
}
"""Named capabilities a test module may be named after, per test folder (``""``: ``tests/`` itself)."""


def _names(folder: Path) -> set[str]:
    """The module and sub-package names of a package folder (without ``.py``)."""
    return {
        p.stem
        for p in folder.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    }


def _points_at(name: str, targets: set[str]) -> bool:
    return any(name == t or name.startswith(t + "_") for t in targets)


def _python_folders() -> list[Path]:
    """Every folder under ``tests/`` that holds a Python file, relative to ``tests/``."""
    return sorted({p.parent.relative_to(TESTS) for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts})


def _test_modules() -> list[Path]:
    return sorted(p.relative_to(TESTS) for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def _misplaced_folder(rel: Path) -> str | None:
    if rel == Path("."):
        return None
    if rel.parts[0] in CROSS_CUTTING:
        return None
    if (SRC / rel / "__init__.py").exists():
        return None
    allowed = ", ".join(CROSS_CUTTING)
    return f"tests/{rel}/ is neither a package of src/prefrl nor a cross-cutting folder ({allowed})"


def _badly_named(rel: Path) -> str | None:
    folder, name = rel.parent, rel.stem.removeprefix("test_")
    top = folder.parts[0] if folder.parts else ""
    if top in CROSS_CUTTING and top != "benchmarks":
        return None
    targets = _names(ROOT / "benchmarks") if top == "benchmarks" else _names(SRC / folder)
    if _points_at(name, targets | set(CAPABILITIES.get(str(folder) if folder.parts else "", {}))):
        return None
    where = "benchmarks/" if top == "benchmarks" else f"src/prefrl/{folder}/".replace("/./", "/")
    return f"tests/{rel}: '{name}' names no module of {where} and no capability listed for it in CAPABILITIES"


def test_the_checks_see_the_tests() -> None:
    """The walk finds what it must judge: the fitter's tests among the preference package's."""
    assert Path("preference/test_trainer.py") in _test_modules()
    assert Path("training/golden/pendulum_sac_v1") not in _python_folders()  # data, not a test folder
    assert len(_test_modules()) > 50


def test_every_test_folder_mirrors_a_package_or_is_cross_cutting() -> None:
    assert not set(CROSS_CUTTING) & _names(SRC), (
        "a cross-cutting folder would hide a package of the same name"
    )
    wrong = [msg for rel in _python_folders() if (msg := _misplaced_folder(rel))]
    assert not wrong, "\n".join(wrong)


def test_every_test_folder_is_a_package() -> None:
    missing = [
        f"tests/{rel}/__init__.py" for rel in _python_folders() if not (TESTS / rel / "__init__.py").exists()
    ]
    assert not missing, "missing (same-named test modules in two folders would collide): " + ", ".join(
        missing
    )


def test_every_test_module_names_a_module_or_a_listed_capability() -> None:
    wrong = [msg for rel in _test_modules() if (msg := _badly_named(rel))]
    assert not wrong, "\n".join(wrong)


def test_every_listed_capability_is_used() -> None:
    used = {
        (str(rel.parent) if rel.parent.parts else "", rel.stem.removeprefix("test_"))
        for rel in _test_modules()
    }
    stale = [
        f"{folder or 'tests'}: {cap}"
        for folder, caps in CAPABILITIES.items()
        for cap in caps
        if not any(f == folder and _points_at(n, {cap}) for f, n in used)
    ]
    assert not stale, "capabilities no test module is named after: " + ", ".join(stale)


def test_the_rule_catches_a_misplaced_test() -> None:
    """The fitter's tests under tests/training/ (where they were before issue 46) break the name rule; a
    folder for a package that does not exist breaks the folder rule."""
    assert _badly_named(Path("training/test_trainer.py")) is not None
    assert _badly_named(Path("preference/test_trainer.py")) is None
    assert _badly_named(Path("training/test_chaos.py")) is None
    assert _badly_named(Path("benchmarks/test_nothing_here.py")) is not None
    assert _misplaced_folder(Path("fitting")) is not None
    assert _misplaced_folder(Path("docs")) is None
