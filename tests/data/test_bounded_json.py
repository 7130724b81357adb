"""JSON depth is measured without recursing, strings (brackets, escaped quotes) do not count, and
anything deeper than the bound is a one-line ``ValueError`` instead of a ``RecursionError``."""

from __future__ import annotations

import json

import pytest

from prefrl.data.bounded_json import MAX_JSON_DEPTH, json_depth, loads_bounded


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ('"[[[{{{"', 0),
        ('{"a": [1, {"b": [2]}]}', 4),
        ('["\\"[[[", ["]]]\\\\"]]', 2),  # an escaped quote does not end a string; an escaped backslash does
        ('[[], [[]], {"k": "}}}"}]', 3),
        ('"\\u005b" ', 0),
    ],
)
def test_depth_counts_arrays_and_objects_outside_strings(text: str, depth: int) -> None:
    assert json_depth(text) == depth
    assert loads_bounded(text) == json.loads(text)


def test_deep_json_is_one_line_not_a_recursion_error() -> None:
    with pytest.raises(ValueError, match="JSON nested 100000 levels deep") as e:
        loads_bounded("[" * 100_000 + "]" * 100_000)
    assert "\n" not in str(e.value)
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json_depth(ok) == MAX_JSON_DEPTH and loads_bounded(ok.encode())  # bytes too
    with pytest.raises(ValueError, match=f"at most {MAX_JSON_DEPTH}"):
        loads_bounded("[" + ok + "]")
    with pytest.raises(ValueError, match="at most 2"):
        loads_bounded('{"a": {"b": {}}}', max_depth=2)


def test_an_unterminated_string_cannot_hide_brackets() -> None:
    # the quote opens no string the pattern can close, so the brackets after it count
    with pytest.raises(ValueError, match="levels deep"):
        loads_bounded('"' + "[" * 1000)
    with pytest.raises(json.JSONDecodeError):
        loads_bounded('{"a": ')
