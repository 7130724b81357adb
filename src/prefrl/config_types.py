"""Optional config values with readable ``--help`` metavars, and help text that reads as written.

``int | None`` alone shows as ``{None}|INT`` in tyro's help; these say what to pass.

tyro joins a docstring's wrapped lines into one paragraph, but it looks for list items (lines
that do not start with a letter) before removing the indentation, so every continuation line
of an indented attribute docstring kept its line break in ``--help`` (a sentence cut after
"report", the rest on a short line of its own). :func:`_wrapped_as_paragraphs` removes the
indentation first (``inspect.cleandoc``), so ``--help`` rewraps each paragraph to the terminal.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Literal, get_args

import tyro
import tyro._strings

OptInt = Annotated[int | None, tyro.conf.arg(metavar="INT|None")]
OptBool = Annotated[bool | None, tyro.conf.arg(metavar="{True,False,None}")]
OptFloat = Annotated[float | None, tyro.conf.arg(metavar="FLOAT|None")]
OptInts = Annotated[list[int] | None, tyro.conf.arg(metavar="INT [INT ...]|None")]
OptFile = Annotated[str | None, tyro.conf.arg(metavar="FILE", help_behavior_hint="(optional)")]
OptDir = Annotated[str | None, tyro.conf.arg(metavar="DIR", help_behavior_hint="(optional)")]

HiddenEnd = Literal["truncation", "next_episode"]
HIDDEN_ENDS: tuple[HiddenEnd, ...] = get_args(HiddenEnd)
"""How a termination withheld from the agent (``--loop.hide-terminations``) reaches it: as a
truncation, or not at all (its stream runs on into the next episode); shared by the loop's
config and the learned-reward wrapper, which sit in different layers."""


def _wrapped_as_paragraphs(join: Callable[[str], str]) -> Callable[[str], str]:
    """tyro's line joiner, given the docstring without its indentation."""

    def joined(text: str) -> str:
        return join(inspect.cleandoc(text))

    joined.__dict__["prefrl_cleandoc"] = True  # marks tyro's joiner as wrapped once
    return joined


_join = getattr(tyro._strings, "remove_single_line_breaks", None)
if _join is not None and not getattr(_join, "prefrl_cleandoc", False):
    vars(tyro._strings)["remove_single_line_breaks"] = _wrapped_as_paragraphs(_join)
