"""Types of JSON values: what ``json.dumps`` writes and ``json.loads`` returns."""

from __future__ import annotations

from typing import TypeAlias

JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"
"""Any JSON value (a recursive type: arrays and objects of JSON values)."""
JSONObject: TypeAlias = "dict[str, JSONValue]"
"""A JSON object (string keys)."""
