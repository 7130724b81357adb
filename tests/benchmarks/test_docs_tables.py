"""The benchmark docs' tables are generated from benchmarks/results/ (benchmarks/docs_tables.py):
the committed docs match the committed results, and a figure changed on either side is caught."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from prefrl.run.sweep_report import ENOUGH_SEEDS, FAILED_SEED, SEED_SPREAD

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "benchmarks.md", *sorted((ROOT / "docs" / "benchmarks").glob("*.md"))]


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "benchmarks" / "docs_tables.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


dt = _module()


BROAD_CHEETAH = "benchmarks/results/HalfCheetah-v5-sac-oracle-50l-100000s-method=broad"
GATED_CHEETAH = (
    "benchmarks/results/bonus-seeds-2026-11-30/HalfCheetah-v5-sac-oracle-50l-100000s"
    "-exploration_bonus=3.0-exploration_bonus_gate=0.75-exploration_bonus_schedule=labels"
)


def test_the_docs_show_what_the_committed_results_give() -> None:
    """Fails when a table in docs/benchmarks*.md differs from benchmarks/results/ (a figure
    copied by hand, or results added without `python benchmarks/docs_tables.py`)."""
    problems = dt.sync(list(dt.DOCS), dt.Results(), check=True)
    assert not problems, "\n".join(problems) + "\n\nrun: python benchmarks/docs_tables.py"
    assert {p.name for p in dt.DOCS} >= {"benchmarks.md", "ablation.md", "label-efficiency.md", "dmc.md"}


def test_the_summary_fits_one_page_and_shows_the_tables_of_today() -> None:
    summary = (ROOT / "docs" / "benchmarks.md").read_text()
    assert len(summary.encode()) <= 30_000
    glance = summary.split("<!-- generated: at-a-glance -->")[1].split("<!-- end generated")[0]
    cheetah = next(line for line in glance.splitlines() if line.startswith("| HalfCheetah-v5 |"))
    gated = json.loads((ROOT / GATED_CHEETAH / "result.json").read_text())
    # today's default on HalfCheetah is the broad first reward with the gated bonus: its 50-label
    # runs are the row, not the broad first reward's alone (measured before the bonus)
    worst = min(gated["scores"])  # a median hides a failed seed: the worst is named beside it
    assert f"| **50** | **{gated['median_normalized_score']:.2f}**, worst {worst:.2f} (" in cheetah, cheetah
    broad = json.loads((ROOT / BROAD_CHEETAH / "result.json").read_text())
    assert f"worst {min(broad['scores']):.2f}" not in cheetah


def _copies(tmp_path: Path) -> list[Path]:
    out = []
    for page in PAGES:
        dest = tmp_path / page.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(page, dest)
        out.append(dest)
    return out


def test_a_figure_changed_in_a_doc_is_named_with_its_table_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _copies(tmp_path)
    summary = docs[0]
    text = summary.read_text()
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| HalfCheetah-v5 |"))
    bump = lambda m: f"**{m.group(1)}.{int(m.group(2)) ^ 1:02d}**"  # noqa: E731  # 1.14 -> 1.15
    changed = re.sub(r"\*\*(\d)\.(\d\d)\*\*", bump, lines[at], count=1)
    assert changed != lines[at]
    summary.write_text(text.replace(lines[at], changed))
    argv = ["--check", "--docs", *map(str, docs)]
    assert dt.main(argv) == 1
    err = capsys.readouterr().err
    assert f"{summary}:{at + 1}: table 'at-a-glance' differs from the results" in err, err
    assert f"doc:     {changed}" in err and f"results: {lines[at]}" in err
    assert dt.main(["--docs", *map(str, docs)]) == 0  # writes the results' figure back
    assert summary.read_text() == text
    assert dt.main(argv) == 0


def _speed_results(tmp_path: Path) -> Path:
    res = tmp_path / "results"
    res.mkdir()
    shutil.copy(ROOT / "benchmarks/results" / dt.SPEED_FILE, res / dt.SPEED_FILE)
    return res


def test_a_figure_changed_in_the_results_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = _speed_results(tmp_path)
    doc = tmp_path / "speed.md"
    doc.write_text("# Speed\n\n<!-- generated: speed -->\n<!-- end generated: speed -->\n\nafter\n")
    assert dt.main(["--results", str(res), "--docs", str(doc)]) == 0
    written = doc.read_text()
    assert "**20.9x**" in written and written.endswith("\n\nafter\n")
    data = json.loads((res / dt.SPEED_FILE).read_text())
    data["ratio.single"] = 19.4  # a new measurement
    (res / dt.SPEED_FILE).write_text(json.dumps(data))
    capsys.readouterr()
    assert dt.main(["--check", "--results", str(res), "--docs", str(doc)]) == 1
    err = capsys.readouterr().err
    assert "table 'speed' differs from the results at its line 3" in err and "**19.4x**" in err, err
    assert doc.read_text() == written  # --check writes nothing


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "<!-- generated: nonesuch -->\n<!-- end generated: nonesuch -->\n",
            "no generated table named 'nonesuch'",
        ),
        ("<!-- generated: speed -->\n| a |\n", "generated table 'speed' is not closed"),
        (
            "<!-- generated: speed -->\n<!-- end generated: overhead -->\n",
            "generated table 'speed' is not closed",
        ),
        ("text\n<!-- end generated: speed -->\n", "without its opening marker"),
    ],
)
def test_broken_markers_are_refused_with_the_doc_and_line(tmp_path: Path, body: str, message: str) -> None:
    doc = tmp_path / "page.md"
    doc.write_text("# Page\n\n" + body)
    with pytest.raises(SystemExit, match=re.escape(message)) as e:
        dt.main(["--check", "--results", str(_speed_results(tmp_path)), "--docs", str(doc)])
    assert str(doc) + ":" in str(e.value)


def test_every_registered_table_is_shown_in_some_doc(tmp_path: Path) -> None:
    doc = tmp_path / "page.md"
    doc.write_text("<!-- generated: speed -->\n<!-- end generated: speed -->\n")
    problems = dt.sync([doc], dt.Results(_speed_results(tmp_path)), check=True, every_table=True)
    assert "table 'overhead' is in no doc" in "\n".join(problems)


def _result(root: Path, name: str, labels: int, scores: list[float], output: str, **kw: Any) -> None:
    d = root / name
    d.mkdir(parents=True)
    res = {
        "env": "Toy-v0", "agent": "sac", "teacher": "oracle", "labels": labels, "steps": 1000,
        "iterations": 14, "loop_options": kw.get("loop_options", {}), "scores": scores,
        "seeds": list(range(len(scores))), "median_normalized_score": sorted(scores)[len(scores) // 2],
        "learned_return": 1.0, "oracle_return": 2.0, "random_return": 0.0, "learned_train_wall_s": 1.0,
        **{k: v for k, v in kw.items() if k != "loop_options"},
    }  # fmt: skip
    (d / "result.json").write_text(json.dumps(res))
    for seed in range(len(scores)):
        (d / f"seed{seed}-learned.json").write_text(json.dumps({"return": 1.0, "reward_output": output}))


def test_at_a_glance_reads_todays_defaults_from_what_the_runs_resolved(tmp_path: Path) -> None:
    """Random actions that only meet time limits (the runs resolved a linear output): today's
    default there is the broad first reward, so its runs are the row, and an older setting that
    needed fewer labels is shown beside it."""
    broad = {"active_selection": True, "uncertainty_measure": "probability", "active_selection_from": 30,
             "initial_steps_per_label": 100, "trainer.l2_init": 0.01}  # fmt: skip
    _result(tmp_path, "broad-20", 20, [0.5, 0.6, 0.7], "linear", method="broad", loop_options=broad,
            reward_next_obs=True, query_selection="probability", selection_from=30)  # fmt: skip
    _result(tmp_path, "broad-50", 50, [0.9, 1.0, 1.1], "linear", method="broad", loop_options=broad,
            reward_next_obs=True, query_selection="probability", selection_from=30)  # fmt: skip
    _result(tmp_path, "old-10", 10, [0.95, 0.95], "linear", method="baseline")
    table = dt.at_a_glance(dt.Results(tmp_path))
    row = table.splitlines()[2]
    assert row.startswith("| Toy-v0 | SAC | **50** | **1.00**, worst 0.90 (0.90, 1.00, 1.10) | 1,000 |"), row
    assert row.endswith("| 10: **0.95**, worst 0.95 (0.95, 0.95), 1,000 steps, options – |"), row
    # where random actions reach a termination (tanh), the broad runs are not today's defaults
    for seed in (tmp_path / "broad-50").glob("seed*-learned.json"):
        seed.write_text(json.dumps({"reward_output": "tanh"}))
    for seed in (tmp_path / "broad-20").glob("seed*-learned.json"):
        seed.write_text(json.dumps({"reward_output": "tanh"}))
    for seed in (tmp_path / "old-10").glob("seed*-learned.json"):
        seed.write_text(json.dumps({"reward_output": "tanh"}))
    row = dt.at_a_glance(dt.Results(tmp_path)).splitlines()[2]
    assert "| not measured | – |" in row and "| 10: **0.95**" in row, row


def test_runs_at_todays_watch_defaults_replace_the_older_runs_of_their_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row measured again since the run watch's defaults changed (a series folder whose options
    name today's default values, listed by the run watch's table) is what the summary shows."""
    _result(tmp_path, "old-50", 50, [0.2, 1.0, 1.1], "linear", method="baseline")
    assert "| not measured |" in dt.at_a_glance(dt.Results(tmp_path)).splitlines()[2]
    _result(tmp_path / "series", "restore", 50, [0.8, 0.9, 1.0, 1.0, 1.2], "linear", method="baseline",
            loop_options={"watch_restore": 3.6})  # fmt: skip
    monkeypatch.setattr(dt, "todays_runs", lambda: ["series/restore", "series/not-run-yet"])
    row = dt.at_a_glance(dt.Results(tmp_path)).splitlines()[2]
    shown = "| Toy-v0 | SAC | **50** | **1.00**, worst 0.80 (0.80, 0.90, 1.00, 1.00, 1.20) |"
    assert row.startswith(shown), row


def test_the_todays_default_column_of_the_run_watch_table_is_found() -> None:
    runs = dt.todays_runs()
    assert len(runs) >= 5, runs
    assert sum("watch_restore=3.6" in r for r in runs) >= 5, runs  # the run watch's column
    assert all((dt.RESULTS / r / "result.json").is_file() for r in runs), runs


def test_every_median_of_seeds_names_its_worst_seed(tmp_path: Path) -> None:
    """The worst seed beside the median: computed from ``scores`` in a result combined before it
    was recorded, read where ``combine()`` recorded it; one seed says so instead."""
    _result(tmp_path, "old", 10, [0.9, 0.2, 1.1], "linear", method="baseline")
    _result(tmp_path, "new", 20, [0.8, 0.95, 0.7], "linear", method="baseline", seeds=[4, 5, 6],
            worst_normalized_score=0.7, worst_seed=6)  # fmt: skip
    _result(tmp_path, "one", 30, [0.6], "linear", method="baseline")
    res = dt.Results(tmp_path)
    old, new, one = (res.folder(name) for name in ("old", "new", "one"))
    assert dt.per_seed(old) == "**0.90**, worst 0.20 (0.90, 0.20, 1.10)"
    assert dt.per_seed(new) == "**0.80**, worst 0.70 (0.80, 0.95, 0.70)"
    assert dt.per_seed(one) == "**0.60** (1 seed)"
    full = dt.label_efficiency(res).splitlines()
    assert full[0].split(" | ")[5:8] == ["seeds", "median score", "worst seed"], full[0]
    worst = {line.split(" | ")[3]: line.split(" | ")[7] for line in full[2:]}  # labels -> worst seed
    assert worst == {"10": "0.20 (seed 1)", "20": "0.70 (seed 6)", "30": "0.60 (seed 0)"}


def _needs_more_seeds_doc(tmp_path: Path) -> Path:
    doc = tmp_path / "seeds.md"
    doc.write_text(
        "# Seeds\n\n<!-- generated: needs-more-seeds -->\n<!-- end generated: needs-more-seeds -->\n"
    )
    return doc


def test_rows_whose_seeds_disagree_are_listed_until_they_have_five(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = tmp_path / "results"
    spread = SEED_SPREAD + 0.05
    _result(res, "agree", 10, [0.9, 1.0, 0.95], "linear")
    _result(res, "apart", 20, [0.9, 0.9 - spread, 0.95], "linear")  # spread wider than the rule's
    _result(res, "failed", 30, [1.0, 0.45, 1.0], "linear")  # a failed seed under a good median
    _result(res, "above-one", 40, [1.0, 1.6, 2.4], "linear")  # every seed beat the true reward
    _result(res, "five", 50, [1.0, 0.1, 1.0, 0.9, 1.0], "linear")  # disagree, but five seeds ran
    _result(res, "single", 60, [0.1], "linear")
    table = dt.needs_more_seeds(dt.Results(res))
    first, listed = table.splitlines()[0], [line.split(" | ")[0] for line in table.splitlines()[4:]]
    assert listed == ["| `apart`", "| `failed`"], table
    assert first.startswith(f"2 of 6 medians of seeds need {ENOUGH_SEEDS} seeds."), first
    assert f"span more than {SEED_SPREAD:g}" in first and f"below {FAILED_SEED:g}" in first, first
    assert "| `failed` | 3 | **1.00** | 0.45 (seed 1) | 1.00 |" in table, table
    # the doc's list follows the results: a new disagreeing row fails --check until regenerated
    doc = _needs_more_seeds_doc(tmp_path)
    assert dt.main(["--results", str(res), "--docs", str(doc)]) == 0
    _result(res, "new", 70, [0.2, 1.0], "linear")
    capsys.readouterr()
    assert dt.main(["--check", "--results", str(res), "--docs", str(doc)]) == 1
    assert "table 'needs-more-seeds' differs from the results" in capsys.readouterr().err
    assert dt.main(["--results", str(res), "--docs", str(doc)]) == 0
    assert "| `new` | 2 | **1.00** | 0.20 (seed 0) | 1.00 |" in doc.read_text()


def test_deepmind_control_seeds_are_scored_against_the_true_reward_run(tmp_path: Path) -> None:
    res = tmp_path / "results"
    task = res / "frontier" / "walker_walk"
    task.mkdir(parents=True)
    for side, seed, last10 in [("protocol", 0, 950.0), ("protocol", 1, 600.0), ("protocol", 2, 960.0),
                               ("true", 0, 1000.0)]:  # fmt: skip
        res_ = {"seed": seed, "last10_mean": last10, "final_return": last10, "labels_used": 100, "steps": 10}
        (task / f"{side}-seed{seed}.json").write_text(json.dumps(res_))
    (row,) = dt.seed_rows(dt.Results(res))
    assert row.name == "frontier/walker_walk (protocol)" and row.median == pytest.approx(0.95)
    assert row.worst == (pytest.approx(0.6), 1)
    assert (
        "| `frontier/walker_walk (protocol)` | 3 | **0.95** | 0.60 (seed 1) | 0.96 |"
        in dt.needs_more_seeds(dt.Results(res))
    )
    assert "| 950 (worst 600, 3 seeds) |" in dt.dmc(dt.Results(res))


LINK = re.compile(r"\]\(([^)#\s:]+\.md)(#[^)\s]+)?\)")
"""A relative link to a Markdown page, with its section."""


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown page."""
    out = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return out


def test_links_to_and_from_the_benchmark_pages_resolve() -> None:
    """Links into the benchmark pages (README, docs) and out of them (the moved sections), and
    the pages src/ names in docstrings and --help."""
    pages = {p.resolve() for p in PAGES}
    broken = []
    for src in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *PAGES[1:]]:
        for target, anchor in LINK.findall(src.read_text()):
            page = (src.parent / target).resolve()
            if src.resolve() not in pages and page not in pages:
                continue
            if not page.is_file():
                broken.append(f"{src.relative_to(ROOT)}: {target} (no such page)")
            elif anchor and anchor[1:] not in _anchors(page):
                broken.append(f"{src.relative_to(ROOT)}: {target}{anchor} (no such section)")
    for src in sorted((ROOT / "src" / "prefrl").rglob("*.py")):
        for target in re.findall(r"docs/benchmarks[\w./-]*\.md", src.read_text()):
            if not (ROOT / target).is_file():
                broken.append(f"{src.relative_to(ROOT)}: {target} (no such page)")
    assert not broken, "\n".join(broken)


def test_the_figures_show_what_the_committed_results_give() -> None:
    """Every generated figure of the docs was drawn from today's results (its numbers, kept
    beside it, match what the results give) and is shown on a page."""
    problems = dt.sync(list(dt.DOCS), dt.Results(), check=True, figures=dt.FIGURES_DIR)
    assert not problems, "\n".join(problems) + "\n\nrun: python benchmarks/docs_tables.py"
    rows = json.loads((dt.FIGURES_DIR / "label_efficiency.data.json").read_text())
    cheetah = next(r for r in rows if r["env"] == "HalfCheetah-v5" and r["labels"] == 50)
    gated = json.loads((ROOT / GATED_CHEETAH / "result.json").read_text())
    assert cheetah["scores"] == [round(s, 4) for s in gated["scores"]]  # every seed, the worst one too


def test_a_figure_is_redrawn_when_its_results_change_and_caught_until_then(tmp_path: Path) -> None:
    """A new run at today's defaults: ``--check`` names the figure and the row it lacks, writing
    draws it (a PNG and its numbers), and a figure whose numbers already match is not redrawn."""
    broad = {"active_selection": True, "uncertainty_measure": "probability", "active_selection_from": 30,
             "initial_steps_per_label": 100, "trainer.l2_init": 0.01}  # fmt: skip
    kw = dict(method="broad", loop_options=broad, reward_next_obs=True, query_selection="probability",
              selection_from=30)  # fmt: skip
    results, figures = tmp_path / "results", tmp_path / "figures"
    _result(results, "broad-20", 20, [0.5, 0.6, 0.7], "linear", **kw)
    res = dt.Results(results)
    problems = dt.sync_figures(res, figures, check=True)
    assert any("label_efficiency.png: figure is missing" in p for p in problems), problems
    assert not figures.exists()  # --check writes nothing
    dt.sync_figures(res, figures, check=False)
    png = figures / "label_efficiency.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    drawn = json.loads((figures / "label_efficiency.data.json").read_text())
    row = {"env": "Toy-v0", "labels": 20, "steps": 1000, "seeds": [0, 1, 2], "scores": [0.5, 0.6, 0.7]}
    assert drawn == [row]
    assert dt.sync_figures(dt.Results(results), figures, check=True) == []
    stamp = png.stat().st_mtime_ns
    dt.sync_figures(dt.Results(results), figures, check=False)
    assert png.stat().st_mtime_ns == stamp  # unchanged numbers: not redrawn
    data = figures / "label_efficiency.data.json"
    kept = data.read_text()
    data.write_text('{"not": "rows"}')  # a foreign file beside the figure: named, then redrawn
    problems = dt.sync_figures(dt.Results(results), figures, check=True)
    assert any("label_efficiency.data.json is not a list of rows" in p for p in problems), problems
    data.write_text(kept)
    png.write_bytes(b"an older drawing")  # a change to how it is drawn: --redraw draws it again
    assert dt.sync_figures(dt.Results(results), figures, check=False, redraw=True) == []
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    _result(results, "broad-50", 50, [0.9, 1.0, 0.2], "linear", **kw)  # a new row lands
    problems = dt.sync_figures(dt.Results(results), figures, check=True)
    lacks = [p for p in problems if "label_efficiency.png" in p]
    assert lacks and "not drawn: ['Toy-v0 50 1000']" in lacks[0], problems
    dt.sync_figures(dt.Results(results), figures, check=False)
    drawn = json.loads((figures / "label_efficiency.data.json").read_text())
    assert [r["labels"] for r in drawn] == [20, 50] and drawn[1]["scores"] == [0.9, 1.0, 0.2]
    assert dt.sync_figures(dt.Results(results), figures, check=True) == []


def test_a_figure_no_page_shows_is_named(tmp_path: Path) -> None:
    doc = tmp_path / "page.md"
    doc.write_text("<!-- generated: speed -->\n<!-- end generated: speed -->\n")
    results = _speed_results(tmp_path)
    _result(results, "baseline-10", 10, [0.5, 0.6, 0.7], "linear", method="baseline")
    problems = dt.sync([doc], dt.Results(results), check=True, figures=tmp_path / "figures")
    assert "figure 'label_efficiency.png' is in no doc" in "\n".join(problems)


def test_atari_tables_of_several_folders_are_one_table_with_every_row_and_its_time() -> None:
    """Settings run side by side on a game (one folder each) share one header; each row keeps
    its training time, named by its row."""
    one, two = "atari-enduro-floor-2026-11-28", "atari-pong-floor-2026-11-28"
    res = dt.Results()
    merged = dt._pixels.atari_tables(res, (one, two)).splitlines()
    rows = [line for line in merged if line.startswith("| ALE/")]
    assert rows == [dt._pixels.atari_table(res, f).splitlines()[2] for f in (one, two)]
    assert merged[:2] == dt._pixels.atari_table(res, one).splitlines()[:2]
    note = merged[-1]
    assert note.count("Training time of each finished run:") == 1
    assert "row 1: ALE/Enduro-v5 learned side" in note and "; row 2: ALE/Pong-v5 learned side" in note
