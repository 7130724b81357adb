"""JSON from files prefrl did not necessarily write, with its nesting depth bounded.

Python's :func:`json.loads` recurses once per ``[`` or ``{``: a crafted file nested 100,000 deep
ends in a ``RecursionError`` traceback, and a structure a few thousand deep that still parses
would break whatever walks it next. :func:`loads_bounded` measures the depth first, without
recursing (string contents, which may hold brackets, are blanked out), and refuses anything
deeper than ``max_depth`` with a one-line ``ValueError``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

MAX_JSON_DEPTH = 32
"""Deeper than any JSON prefrl writes (a policy file's metadata is about 4 levels deep)."""
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN, _CLOSE = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)


def json_depth(text: str) -> int:
    """How deep the arrays and objects of JSON ``text`` nest (0 for a bare value).

    An unterminated string leaves its brackets counted: text that is not JSON may be called
    deeper than it is, never shallower than :func:`json.loads` would recurse before failing.
    """
    bare = np.frombuffer(_STRING.sub('""', text).encode("utf-8", "surrogatepass"), np.uint8)
    step = np.isin(bare, _OPEN).astype(np.int64) - np.isin(bare, _CLOSE)
    return int(np.cumsum(step).max(initial=0))


def loads_bounded(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """:func:`json.loads` of ``text`` nested at most ``max_depth`` deep; else one-line ``ValueError``
    (``json.JSONDecodeError`` for text that is not JSON, ``UnicodeDecodeError`` for bytes that are
    not UTF-8: both are ``ValueError`` too)."""
    if isinstance(text, bytes):
        text = text.decode()
    depth = json_depth(text)
    if depth > max_depth:
        raise ValueError(f"JSON nested {depth} levels deep (at most {max_depth} allowed)")
    try:
        return json.loads(text)
    except RecursionError:  # only where the interpreter's own limit is lower than max_depth
        raise ValueError(f"JSON nested too deeply to read ({depth} levels)") from None
