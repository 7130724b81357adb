"""The tests are type-checked: CI runs ``mypy tests`` (bodies checked, not strict), and at most
``MAX_IGNORES`` ``# type: ignore`` comments silence it, each on a call that passes a wrong type on purpose
to test the error it gets. Anything else is narrowed honestly (``tests/narrow.py``: asserts that return
the narrowed value), so that a test's wrong assumption fails with a line saying which.

The comments are read with ``tokenize`` (a docstring that mentions one does not count)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_IGNORES = 10


def ignores(source: str) -> list[int]:
    """Lines of ``source`` with a ``# type: ignore`` comment."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [t.start[0] for t in tokens if t.type == tokenize.COMMENT and "type: ignore" in t.string]


def test_at_most_ten_type_ignores_in_the_tests() -> None:
    found = {
        f"{p.relative_to(ROOT)}:{line}"
        for p in sorted((ROOT / "tests").rglob("*.py"))
        for line in ignores(p.read_text())
    }
    assert len(found) <= MAX_IGNORES, f"{len(found)} type: ignore comments in tests: " + ", ".join(
        sorted(found)
    )


def test_ci_checks_the_tests_bodies() -> None:
    sections = (ROOT / "pyproject.toml").read_text().split("\n[")  # tomllib is Python 3.11+
    tests = [s for s in sections if re.search(r'^module = \[.*"tests\.\*"', s, re.M)]
    assert len(tests) == 1 and re.search(r"^check_untyped_defs = true$", tests[0], re.M)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci.index(".venv/bin/mypy tests") > ci.index(".venv/bin/mypy src/prefrl")


def test_the_count_reads_comments_only() -> None:
    source = 'x = 1  # type: ignore[assignment]\n"""# type: ignore in a docstring"""\ny = "# type: ignore"\n'
    assert ignores(source) == [1]
