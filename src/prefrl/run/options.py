"""``NAME=VALUE`` options of prefrl train as text (``prefrl sweep --set``, the benchmarks' ``--loop``).

:func:`parse_options` reads each value as JSON and checks it against the type of the option it
names, so a value of the wrong kind fails with one line before anything runs rather than
reaching the run as text: ``watch_restore=x`` is refused, and ``flag=True`` / ``flag=False``
(Python's spelling, as ``prefrl train --help`` shows it) set a bool option to a bool, not to the
string ``"False"`` (which is true). :func:`apply_options` builds a new config with them.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Union

if TYPE_CHECKING:
    from prefrl.run.config import TrainConfig

Options = Mapping[str, object]
"""``{"section.option": value}``; a name without a section is a top-level option (or one of
the section the caller names as ``bare``)."""


WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "text",
    "list": "a JSON list",
    "tuple": "a JSON list",
}
"""How :func:`coerce`'s error names a type."""


SPELLED: dict[str, object] = {"true": True, "false": False, "none": None, "null": None}
"""Words read as JSON's ``true``/``false``/``null`` in any case (Python's ``True``, ...)."""


def _arms(hint: Any) -> list[Any]:
    """The members of a union type (``int | None`` -> ``[int, NoneType]``), else ``[hint]``."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        return [a for arm in typing.get_args(hint) for a in _arms(arm)]
    return [hint]


def _describe(arms: list[Any]) -> str:
    """``[int, NoneType]`` -> ``"an integer or null"``; Literal members are listed."""
    words = []
    for arm in arms:
        if typing.get_origin(arm) is Literal:
            words.append("one of " + ", ".join(json.dumps(v) for v in typing.get_args(arm)))
        elif arm is type(None):
            words.append("null")
        else:
            name = getattr(typing.get_origin(arm) or arm, "__name__", str(arm))
            words.append(WORDS.get(name, f"a {name}"))
    return " or ".join(words)


def coerce(item: str, value: object, hint: Any) -> object:
    """``value`` (read from JSON) as the option of type ``hint`` takes it, or a ValueError naming
    ``item`` and what the option takes. ``True``/``False``/``None`` (any case) are read as JSON's
    ``true``/``false``/``null``; an int stands for a float (kept as written); a JSON list for a
    list or tuple."""
    arms = _arms(hint)
    word = value.lower() if isinstance(value, str) else None
    if word in SPELLED and type(SPELLED[word]) in arms:  # bool for True/False, NoneType for None
        return SPELLED[word]
    for arm in arms:
        origin = typing.get_origin(arm)
        if arm is Any or (arm is type(None) and value is None):
            return value
        if origin is Literal:
            if value in typing.get_args(arm):
                return value
        elif arm is bool:
            if isinstance(value, bool):
                return value
        elif arm is float:
            if isinstance(value, int | float) and not isinstance(value, bool):
                return value  # as written: 0 stays 0 (result folders are named by the values)
        elif arm is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        elif origin in (list, tuple) or arm in (list, tuple):
            if isinstance(value, list):
                return value
        elif isinstance(arm, type) and isinstance(value, arm):
            return value
        elif not isinstance(arm, type) and origin is None:
            return value  # a type this check does not know: the option's own checks decide
    raise ValueError(f"{item!r}: this option takes {_describe(arms)}, got {json.dumps(value)}")


def parse_options(items: list[str], bare: str | None = None) -> dict[str, object]:
    """``["section.option=value", ...]`` -> ``{"section.option": value}`` (JSON values of the
    option's type, :func:`coerce`), checked against prefrl train's config so that a typo or a
    value of the wrong kind fails before anything runs. A name without a section is a top-level
    option, or one of section ``bare`` when given."""
    from prefrl.run.config import TrainConfig

    cfg = TrainConfig()
    out: dict[str, object] = {}
    for item in items:
        name, sep, text = item.partition("=")
        section, dot, opt = name.rpartition(".")
        owner = section if dot else bare
        target = cfg if owner is None else getattr(cfg, owner, None)
        if not sep or target is None or not dataclasses.is_dataclass(target) or not hasattr(target, opt):
            where = f" (a bare NAME is a {bare} option)" if bare else ""
            raise ValueError(f"{item!r}: expected NAME=VALUE naming an option of prefrl train{where}")
        hint = typing.get_type_hints(type(target))[opt]
        if str in _arms(hint):  # a text option (env.kwargs' JSON, agent.algo) keeps its text
            none = SPELLED.get(text.lower(), "") is None and type(None) in _arms(hint)
            out[name] = None if none else text
            continue
        try:
            value: object = json.loads(text)
        except json.JSONDecodeError:
            value = text
        out[name] = coerce(item, value, hint)
    return out


def apply_options(cfg: TrainConfig, options: Options, bare: str | None = None) -> TrainConfig:
    """``cfg`` with ``{"section.option": value}`` set (bare names: in section ``bare``), a new config
    (``cfg`` is frozen): each section is replaced once with all its options, then the config,
    so a section's checks see the options together."""
    # values checked by name only: each section's __post_init__ and the run check them
    top: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for name, value in options.items():
        section, dot, opt = name.rpartition(".")
        owner = section if dot else bare
        target = cfg if owner is None else getattr(cfg, owner)
        if isinstance(value, list) and isinstance(getattr(target, opt), tuple):
            value = tuple(value)
        if owner is None:
            top[opt] = value
        else:
            sections.setdefault(owner, {})[opt] = value
    replaced = {owner: dataclasses.replace(getattr(cfg, owner), **kw) for owner, kw in sections.items()}
    return dataclasses.replace(cfg, **top, **replaced)
