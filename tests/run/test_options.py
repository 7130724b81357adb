"""``NAME=VALUE`` options (``prefrl sweep --set``, the benchmarks' ``--loop``) take the type of the
option they name: Python's ``False`` is the bool False, not the text "False" (which is true), and a
value of the wrong kind is refused before anything runs."""

from __future__ import annotations

import pytest

from prefrl.run.config import TrainConfig
from prefrl.run.options import apply_options, parse_options


def test_python_spelled_bools_and_none_are_values_not_text() -> None:
    opts = parse_options(
        ["watch_end_clips=False", "watch_against_older=True", "active_selection=None", "end_clip_frac=null"],
        bare="loop",
    )
    assert opts == {"watch_end_clips": False, "watch_against_older": True, "active_selection": None,
                    "end_clip_frac": None}  # fmt: skip
    cfg = apply_options(TrainConfig(), opts, bare="loop")
    assert cfg.loop.watch_end_clips is False and cfg.loop.watch_against_older is True
    assert cfg.loop.active_selection is None


def test_values_keep_their_kind_and_text_options_their_text() -> None:
    items = ["loop.watch_restore=0", "reward.hidden=[8,8]", "loop.query_schedule=front",
             "env.kwargs={\"size\": 32}", "agent.algo=a2c", "trainer.l2_band=[1.2, 1.4]"]  # fmt: skip
    opts = parse_options(items)
    assert opts["loop.watch_restore"] == 0 and opts["reward.hidden"] == [8, 8]
    assert opts["loop.query_schedule"] == "front" and opts["agent.algo"] == "a2c"
    assert opts["env.kwargs"] == '{"size": 32}'  # a JSON-text option is not parsed here
    assert apply_options(TrainConfig(), opts).trainer.l2_band == (1.2, 1.4)


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ("iterations=x5", 'takes an integer, got "x5"'),
        ("fragment_length=2.5", "takes an integer, got 2.5"),
        ("watch_restore=yes", "takes a number"),
        ("watch_against_older=1", "takes true or false, got 1"),
        ("active_selection=2", "true or false or null"),
        ("query_schedule=nope", 'one of "constant"'),
    ],
)
def test_a_value_of_the_wrong_kind_is_one_line_naming_the_option(item: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as err:
        parse_options([item], bare="loop")
    assert item in str(err.value) and "\n" not in str(err.value)


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="naming an option of prefrl train"):
        parse_options(["loop.no_such_option=1"])
