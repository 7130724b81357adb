"""``prefrl train --help``: the common options first (env, teacher, budget, seed, run directory,
resume, agent), then every other option once, grouped by config section as tyro draws them."""

from __future__ import annotations

import re
from contextlib import redirect_stdout
from io import StringIO

import pytest
import tyro
import tyro._fmtlib

from prefrl.cli.help_order import COMMON, common_first
from prefrl.cli.main import main
from prefrl.run.config import TrainConfig

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _options(text: str) -> list[str]:
    """Every option of a help text, in order (the first ``--name`` of each entry's line)."""
    lines = (ANSI.sub("", x) for x in text.splitlines())
    return [m.group(0) for x in lines if x.startswith("│ -") and (m := re.search(r"--[\w.-]+", x))]


def _titles(text: str) -> list[str]:
    return re.findall(r"╭─ (.*?) ─", ANSI.sub("", text))


def _train_help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(["train", "--help"])
    assert e.value.code in (0, None)
    return capsys.readouterr().out


def _tyro_help() -> str:
    """The help as tyro draws it, with box borders."""
    out = StringIO()
    force, tyro._fmtlib._FORCE_UTF8_BOXES = tyro._fmtlib._FORCE_UTF8_BOXES, True
    try:
        with redirect_stdout(out), pytest.raises(SystemExit):
            tyro.cli(TrainConfig, args=["--help"], prog="prefrl train")
    finally:
        tyro._fmtlib._FORCE_UTF8_BOXES = force
    return out.getvalue()


@pytest.mark.parametrize("columns", ["100", "200"])  # 200: tyro would lay its boxes side by side
def test_help_shows_the_common_options_first_and_every_option_once(
    columns: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    text = _train_help(capsys)
    got = _options(text)
    assert got[: len(COMMON)] == list(COMMON)
    assert got[:8] == ["--env.id", "--teacher", "--loop.total-labels", "--loop.total-steps", "--seed",
                       "--agent.algo", "--run-dir", "--resume"]  # fmt: skip
    monkeypatch.setenv("COLUMNS", "100")  # tyro's own help in one column, to read its options
    assert len(got) == len(set(got))  # none twice
    assert sorted(got) == sorted(_options(_tyro_help()))  # none lost
    # the rest grouped by section, in tyro's order, one box under another
    assert _titles(text) == ["common options", "options", "env options", "agent options", "loop options",
                             "reward options", "trainer options"]  # fmt: skip
    assert text.index("╭─ common options") < text.index("╭─ options") < text.index("╭─ env options")
    assert "--help" in got and "--loop.fragment-length" in got[len(COMMON) :]
    widths = {len(x) for x in text.splitlines() if x.startswith(("╭", "│", "╰"))}
    assert len(widths) == 1, widths  # the new box is as wide as tyro's


def test_coloured_help_is_rearranged_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal tyro colours its help; the colour codes do not hide the boxes or the titles."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(tyro._fmtlib, "_FORCE_ANSI", True)
    coloured = _tyro_help()
    assert "\x1b[" in coloured
    monkeypatch.setattr(tyro._fmtlib, "_FORCE_ANSI", False)
    plain = _tyro_help()
    assert ANSI.sub("", common_first(coloured)) == common_first(plain)
    assert _options(common_first(coloured))[: len(COMMON)] == list(COMMON)


def test_help_that_cannot_be_read_is_printed_as_it_is() -> None:
    text = "usage: prefrl train [-h]\n\n options \n ------- \n  --seed INT\n"  # tyro's plain layout
    assert common_first(text) == text


def test_a_stdout_without_utf8_gets_plain_borders(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    ascii_out.flush()
    text = ascii_out.buffer.getvalue().decode("ascii")  # printable: no box border
    monkeypatch.undo()
    names = [m.group(0) for m in re.finditer(r"^\s+(--[\w.-]+)", text, re.M)]
    assert [n.strip() for n in names[: len(COMMON)]] == list(COMMON)
