"""The `>>>` examples in prefrl's docstrings run, as the style notes promise.

Every module of `src/prefrl` whose source holds `>>>` is found and run through `doctest`; a new
example is covered without touching this file.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import prefrl

_ROOT = Path(prefrl.__file__).parent


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(_ROOT.rglob("*.py")):
        if ">>>" in path.read_text(encoding="utf-8"):
            parts = path.relative_to(_ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join(("prefrl", *parts)))
    return names


_MODULES = _modules_with_examples()
_EXTRAS = {"prefrl.envs.procgen": "procgen"}
"""Modules whose examples need an optional extra: the module they import (skipped without it,
as the README's test command installs no extra; .ci/run installs them)."""


def test_examples_are_found() -> None:
    assert len(_MODULES) >= 9


@pytest.mark.parametrize("name", _MODULES)
def test_doctests(name: str) -> None:
    if name in _EXTRAS:
        pytest.importorskip(_EXTRAS[name], reason=f"{name}'s examples need its optional extra")
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.attempted > 0, f"{name} has `>>>` but doctest found no example"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"
