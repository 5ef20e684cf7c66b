"""``rgrade.trend`` over nightly gradings made in Python: it raises the drop
gen planted and no other alarm, writes what ``rgrade trend -o`` writes
over the same nights, takes Gradings as well as directories, and refuses
what the command line refuses, with its message and an exception of the
error's kind."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import rgrade

ROOT = Path(__file__).resolve().parents[2]
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
NIGHTS = 5


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """Five nights of gen's logs with billing's evidence halved from night
    4 on, each graded in Python for the night it stands for, and written
    out as ``grade -o`` would: (the Gradings, their directories)."""
    tmp = tmp_path_factory.mktemp("series")
    subprocess.run(
        [RGRADE, "gen", "--queries", "1500", "--nights", str(NIGHTS), "--drop-from", "4",
         "--drop-task", "billing", "--drop-rate", "0.5", "-o", str(tmp / "gen")],
        check=True, capture_output=True)
    gradings, dirs = [], []
    for night in range(1, NIGHTS + 1):
        graded = rgrade.grade(tmp / "gen" / "labels.jsonl", tmp / "gen" / f"night-{night:02}",
                              k=10, as_of=f"2026-11-{night:02}")
        dirs.append(tmp / "nights" / f"{night:02}")
        graded.write(dirs[-1])
        gradings.append(graded)
    return gradings, dirs


def test_the_planted_drop_alarms_and_nothing_else(series):
    _, dirs = series
    # In any order: each night is placed by the time it stands for.
    watched = rgrade.trend(reversed(dirs), baseline=3)
    assert watched.alarmed
    alarms = watched.alarms["alarms"]
    assert alarms, "billing's halved evidence alarms"
    assert {a["task"] for a in alarms} <= {"billing", "*"}
    assert any(a["task"] == "billing" for a in alarms)
    # Night 4's drop alarms on night 4, the first watched night.
    assert {a["as_of"] for a in alarms} == {"2026-11-04T00:00:00Z"}
    assert all(a["drop"] > 0 for a in alarms)
    assert [n["as_of"][:10] for n in watched.alarms["nights"]] == [
        f"2026-11-{night:02}" for night in range(1, NIGHTS + 1)]
    # trend.csv flags each alarm on its night, one row for one alarm.
    rows = watched.trend.to_pylist()
    flagged = {(r["task"], r["language"], r["split"], r["metric"]) for r in rows if r["alarm"]}
    assert flagged == {(a["task"], a["language"], a["split"], a["metric"]) for a in alarms}
    assert len(rows) == len({(r["as_of"], r["run"], r["stage"], r["task"], r["language"],
                              r["split"], r["metric"]) for r in rows})
    shown = repr(watched)
    assert shown.startswith(f"<rgrade.Trend {NIGHTS} nights, {len(alarms)} alarm(s) on 1 night(s)")
    assert "billing" in shown and "billing" in watched._repr_html_()


def test_it_writes_what_the_command_line_writes(series, tmp_path):
    _, dirs = series
    metrics = ["recall@10", "ndcg@10"]
    watched = rgrade.trend(dirs, baseline=3, metrics=metrics,
                           openmetrics=tmp_path / "python.prom")
    watched.write(tmp_path / "python")
    run = subprocess.run(
        [RGRADE, "trend", "--baseline", "3", "--metrics", ",".join(metrics), "-q",
         "--openmetrics", str(tmp_path / "cli.prom"), "-o", str(tmp_path / "cli"),
         *map(str, dirs)],
        capture_output=True, text=True, check=False)
    assert run.returncode == 1, run.stderr  # the drop alarms
    for name in ["trend.csv", "report.html"]:
        assert (tmp_path / "python" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert (tmp_path / "python.prom").read_bytes() == (tmp_path / "cli.prom").read_bytes()
    python, cli = (json.loads((tmp_path / side / "alarms.json").read_text()) for side in ["python", "cli"])
    assert python.pop("command")[0] == "rgrade.trend"
    assert cli.pop("command")[1] == "trend"
    assert python == cli
    # What Trend.write wrote is a complete trend: the page draws again from it.
    again = subprocess.run([RGRADE, "report", str(tmp_path / "python"), "-o", str(tmp_path / "again.html")],
                           capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr


def test_one_metric_may_be_named_alone(series):
    _, dirs = series
    watched = rgrade.trend(dirs, baseline=3, metrics="recall@10")
    assert set(watched.trend["metric"].to_pylist()) == {"recall@10"}
    with pytest.raises(rgrade.UsageError, match="metrics=\"judged@10\": judged@k measures"):
        rgrade.trend(dirs, metrics=["judged@10"])


def test_gradings_are_watched_as_their_directories_are(series):
    gradings, dirs = series
    by_grading = rgrade.trend(gradings, baseline=3).trend.drop_columns(["night"])
    by_dir = rgrade.trend(dirs, baseline=3).trend.drop_columns(["night"])
    assert by_grading == by_dir


def test_it_refuses_what_the_command_line_refuses(series):
    _, dirs = series
    with pytest.raises(rgrade.UsageError, match="baseline=1: the baseline takes at least 2 nights"):
        rgrade.trend(dirs, baseline=1)
    with pytest.raises(rgrade.UsageError, match="alpha=1.5: must lie strictly between 0 and 1"):
        rgrade.trend(dirs, alpha=1.5)
    with pytest.raises(rgrade.UsageError, match="name at least one night"):
        rgrade.trend([])
    # A night graded again for the same time stands for it twice.
    gen = dirs[0].parents[1] / "gen"
    again = rgrade.grade(gen / "labels.jsonl", gen / "night-02", k=10, as_of="2026-11-01")
    with pytest.raises(rgrade.ComparisonError, match="both stand for 2026-11-01T00:00:00Z"):
        rgrade.trend([again, *dirs])
    # So is a night graded at other cutoffs.
    other = rgrade.grade(gen / "labels.jsonl", gen / "night-02", k=5, as_of="2026-10-31")
    with pytest.raises(rgrade.ComparisonError, match="graded with other cutoffs.*allow_label_changes="):
        rgrade.trend([other, *dirs])
    # Too few nights to watch any is a warning, not an error.
    with pytest.warns(rgrade.RgradeWarning, match="none past its baseline.*baseline= sets"):
        quiet = rgrade.trend(dirs[:2], baseline=3)
    assert not quiet.alarmed and not quiet.alarms["alarms"]
    assert repr(quiet) == "<rgrade.Trend 2 nights, nothing tested (see the warnings)>"
    # A message that quotes a value back, whatever its characters.
    for odd in ["\u3000x", " x", "recall@010", "recall@+10"]:
        with pytest.raises(rgrade.UsageError, match="not a metric"):
            rgrade.trend(dirs, metrics=odd)
