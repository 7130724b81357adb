"""A garbage ``metrics.csv`` in a run is one line naming the file from ``prefrl report`` and
``prefrl interpret training``, not a ``UnicodeDecodeError`` without a file name or a ``csv.Error``
traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefrl.cli.main import main
from prefrl.run import config as run_config

GARBAGE = {
    "binary": (bytes(range(256)) * 8, "not a text CSV file"),
    "huge-field": (b'step,a\n1,"' + b"x" * 200_000 + b'"\n', "not a readable CSV file"),
    "no-numbers": (b"hello,note\nworld,x\n", "no numeric metric columns"),
    "only-step": (b"step\n1\n2\n", "no numeric metric columns"),
    "empty": (b"", "no metric rows"),
}


@pytest.mark.parametrize("kind", list(GARBAGE))
def test_a_garbage_metrics_csv_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(run_config.config_to_dict(run_config.TrainConfig())))
    data, words = GARBAGE[kind]
    (run / "metrics.csv").write_bytes(data)
    for argv in (["report", str(run), "--no-video", "--pairs", "0"],
                 ["interpret", "training", "--run", str(run), "--out", str(tmp_path / "out")]):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        lines = [x for x in err.strip().splitlines() if x]
        assert len(lines) == 1 and "Traceback" not in err, err
        assert f"{run / 'metrics.csv'}: {words}" in lines[0], err
    assert not (run / "report" / "index.html").exists()
