"""A config file that names an option removed from prefrl (docs/techniques.md, "Removed"): it loads
where it gave the value that behaves as prefrl does now, and is refused with one line otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefrl.cli.main import main
from prefrl.run.config import REMOVED, config_from_dict
from prefrl.training.config import LoopConfig

GOLDEN = Path(__file__).parents[1] / "training" / "golden" / "pendulum_sac_v1" / "config.json"


def test_removed_options_are_gone_from_their_config() -> None:
    assert REMOVED["LoopConfig"] == {"random_action_size": "full"}
    assert "random_action_size" not in {f.name for f in LoopConfig.__dataclass_fields__.values()}


def test_a_run_written_with_the_removed_options_default_loads_silently(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = json.loads(GOLDEN.read_text())
    assert data["loop"]["random_action_size"] == "full"  # written before the removal
    cfg = config_from_dict(data, "run/config.json")
    assert cfg.loop.total_labels == data["loop"]["total_labels"]
    assert capsys.readouterr().err == ""  # no warning: it ran as prefrl runs now


def test_another_value_is_refused_in_one_line_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(GOLDEN.read_text())
    data["loop"]["random_action_size"] = "varied"
    removed = r"run/config\.json\.loop: option random_action_size=\"varied\" was removed"
    with pytest.raises(ValueError, match=removed):
        config_from_dict(data, "run/config.json")
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    assert main(["train", "--config", str(path), "--print-config"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "random_action_size" in err and "removed" in err, err
    assert str(path) in err  # names the file
    data["loop"]["random_action_size"] = "full"
    path.write_text(json.dumps(data))
    assert main(["train", "--config", str(path), "--print-config"]) == 0
    assert "random_action_size" not in json.loads(capsys.readouterr().out)["loop"]
