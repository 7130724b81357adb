"""``prefrl train --help`` with the common options first, the rest grouped by config section.

tyro draws one box per config section (the top-level options, then ``env``, ``agent``, ``loop``,
``reward``, ``trainer``) and cannot show options of different sections together, while the
options most runs set are spread over four of them. :func:`common_first` rearranges the help
tyro rendered: the options of :data:`COMMON`, in that order, in a box of their own first, then
every section's box as tyro drew it, without them. Help that does not look as expected (a new
tyro) is printed as tyro drew it.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field

COMMON = (
    "--env.id",
    "--teacher",
    "--loop.total-labels",
    "--loop.total-steps",
    "--seed",
    "--agent.algo",
    "--run-dir",
    "--resume",
    "--config",
    "--print-config",
)
"""The options ``prefrl train --help`` shows first: what most runs set."""

TITLE = "common options"
ONE_COLUMN = 120
"""Help width at most: tyro lays boxes side by side from 130 columns on, which would put the
common options beside the others instead of above them."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_OPTION = re.compile(r"--[\w.-]+")


def wants_help(argv: list[str]) -> bool:
    """Whether ``argv`` asks for the help (tyro answers ``-h`` and ``--help`` anywhere)."""
    return any(a in ("-h", "--help") for a in argv)


ASCII_BORDERS = str.maketrans("╭╮╰╯│─", "     -")
"""The box borders where stdout cannot print them (the help is drawn with them, then rearranged)."""


def _utf8(stream: object) -> bool:
    try:
        return codecs.lookup(str(getattr(stream, "encoding", None) or "ascii")).name == "utf-8"
    except LookupError:
        return False


class _Capture(io.StringIO):
    """stdout while tyro prints its help: colours where the real one is a terminal, and always
    the box borders (tyro draws them only for a stream whose encoding is spelled ``utf-8``)."""

    def __init__(self, real: object) -> None:
        super().__init__()
        self._tty = bool(getattr(real, "isatty", lambda: False)())

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


@contextmanager
def _one_column() -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(min(shutil.get_terminal_size().columns, ONE_COLUMN))
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def print_help(parse: Callable[[], object]) -> None:
    """Run ``parse()`` (tyro on an argv asking for help), print its help with the common options
    first and exit as tyro does (``SystemExit(0)``); an error tyro raised instead passes through."""
    out = _Capture(sys.stdout)
    try:
        with _one_column(), redirect_stdout(out):
            parse()
    except SystemExit as e:
        text = out.getvalue()
        if e.code not in (0, None):
            sys.stdout.write(text if _utf8(sys.stdout) else text.translate(ASCII_BORDERS))
            raise
        text = common_first(text)
        sys.stdout.write(text if _utf8(sys.stdout) else text.translate(ASCII_BORDERS))
        raise SystemExit(0) from None
    sys.stdout.write(out.getvalue())


# ---------------------------------------------------------------------------- the boxes
def _plain(line: str) -> str:
    return _ANSI.sub("", line)


@dataclass
class _Box:
    top: str
    header: list[str] = field(default_factory=list)
    entries: list[list[str]] = field(default_factory=list)
    bottom: str = ""

    def lines(self) -> list[str]:
        return [self.top, *self.header, *(x for e in self.entries for x in e), self.bottom]


def _key(entry: list[str]) -> str:
    found = _OPTION.search(_plain(entry[0]))
    return found.group(0) if found else ""


def _box(lines: list[str]) -> _Box:
    """One of tyro's boxes (its first and last lines the border): a header (the section's
    description up to a rule) and one entry per option, from its ``--name`` line on."""
    box = _Box(lines[0], bottom=lines[-1])
    body = lines[1:-1]
    rule = next((i for i, x in enumerate(body) if re.fullmatch(r"│ ─+ │", _plain(x).strip())), -1)
    box.header = body[: rule + 1]
    for line in body[rule + 1 :]:
        if _plain(line).startswith("│ -") or not box.entries:
            box.entries.append([line])
        else:
            box.entries[-1].append(line)
    return box


def _retitle(top: str, old: str, new: str) -> str:
    """A box's top border with its title ``old`` replaced by ``new``, the same width."""
    if old not in top:
        return top
    line = top.replace(old, new, 1)  # the title, between colour codes where there are any
    extra = len(new) - len(old)
    for _ in range(extra):  # take the surplus off the border's run of dashes, from its end
        at = line.rfind("─")
        line = line[:at] + line[at + 1 :]
    if extra < 0:
        at = line.rfind("─")
        line = line[:at] + "─" * -extra + line[at:]
    return line


def common_first(text: str, common: tuple[str, ...] = COMMON) -> str:
    """tyro's rendered help ``text`` with the options ``common`` moved, in that order, to a
    box of their own before the others; ``text`` itself where its boxes cannot be read."""
    lines = text.split("\n")
    starts = [i for i, x in enumerate(lines) if _plain(x).startswith("╭")]
    ends = [i for i, x in enumerate(lines) if _plain(x).startswith("╰")]
    if not starts or len(starts) != len(ends) or any(e < s for s, e in zip(starts, ends)):
        return text
    boxes = [_box(lines[s : e + 1]) for s, e in zip(starts, ends)]
    found = {_key(e): e for b in boxes for e in b.entries}
    moved = [found[k] for k in common if k in found]
    title = re.match(r"╭─ (.*?) ─", _plain(boxes[0].top))
    if not moved or title is None:
        return text
    first = _Box(_retitle(boxes[0].top, title.group(1), TITLE), entries=moved, bottom=boxes[0].bottom)
    rest = []
    for b in boxes:
        b.entries = [e for e in b.entries if _key(e) not in common]
        if b.entries:
            rest.append(b)
    body = [x for b in (first, *rest) for x in b.lines()]
    return "\n".join([*lines[: starts[0]], *body, *lines[ends[-1] + 1 :]])
