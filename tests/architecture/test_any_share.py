"""At most 20% of the functions of ``src/prefrl`` have ``Any`` in their signature (issue 46).

What is counted: every ``def`` and ``async def`` in ``src/prefrl`` (methods, nested functions and
``@overload`` stubs included), read with ``ast``; a function counts as *with Any* when the text of
one of its annotations (a positional, keyword-only or positional-only parameter's, ``*args``',
``**kwargs``' or the return's) contains ``Any``: ``Any`` itself, ``dict[str, Any]``,
``spaces.Space[Any]``, or any name that contains it. Bodies are not read: a local variable annotated
``Any`` does not count, and neither does an alias (``JSON = Any`` used as ``JSON`` would hide it,
which is why such aliases are not used: the types in signatures are the real ones).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "prefrl"
MAX_SHARE = 0.20


def signature_annotations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """Every annotation of ``fn``'s signature: its parameters' (all kinds) and its return's."""
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p is not None)]
    out = [p.annotation for p in params if p.annotation is not None]
    return out + ([fn.returns] if fn.returns is not None else [])


def count_any(source: str) -> tuple[int, int]:
    """``(functions with Any in their signature, all functions)`` of one module's source."""
    with_any = total = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            total += 1
            with_any += any("Any" in ast.unparse(ann) for ann in signature_annotations(node))
    return with_any, total


def test_counter_reads_every_annotation() -> None:
    source = """
def plain(x: int, *, y: str = "") -> None: ...
def param(x: Any) -> int: ...
def ret() -> dict[str, Any]: ...
def star(*args: Any) -> None: ...
def kw(**kwargs: Any) -> None: ...
def pos(x: Any, /) -> None: ...
async def run(x: list[Any]) -> None: ...
class C:
    def method(self, space: "spaces.Space[Any]") -> None:
        def inner(y: int) -> Any: ...
    def body_only(self) -> None:
        x: Any = 1
"""
    assert count_any(source) == (8, 10)


def test_at_most_a_fifth_of_functions_have_any_in_their_signature() -> None:
    per_file: Counter[str] = Counter()
    with_any = total = 0
    for path in sorted(SRC.rglob("*.py")):
        n_any, n = count_any(path.read_text())
        with_any, total = with_any + n_any, total + n
        per_file[str(path.relative_to(SRC))] += n_any
    assert total > 500, f"only {total} functions found under {SRC}"
    worst = ", ".join(f"{name} {n}" for name, n in per_file.most_common(8))
    assert with_any <= MAX_SHARE * total, (
        f"{with_any} of {total} functions ({with_any / total:.1%}) have Any in their signature, more than "
        f"{MAX_SHARE:.0%}; most in: {worst}. Give them their real types (TypedDicts for JSON-shaped dicts, "
        "np.ndarray, torch.Tensor, Protocols, object for values only passed on)"
    )
