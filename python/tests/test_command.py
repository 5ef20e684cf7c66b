"""The ``rgrade`` command a pip install puts on PATH is the Rust binary's
command line: the same files byte for byte, the same exit statuses and
messages, without cargo."""

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
# The console script pip installed beside this interpreter.
SCRIPT = Path(sys.executable).parent / "rgrade"


def run(program, args, cwd):
    return subprocess.run([str(program), *args], cwd=cwd, capture_output=True, text=True)


def test_the_installed_command_is_the_binary(tmp_path):
    assert SCRIPT.exists(), f"no console script at {SCRIPT}"
    grade = ["grade", "--labels", str(SAMPLES / "realistic/labels.jsonl"), "-k", "1,5,10"]
    grade += ["--repeats", "last", "--max-rejects", "10", str(SAMPLES / "realistic/logs")]
    # Each in a directory of its own, so that the paths the pages show agree.
    for name, program in [("script", SCRIPT), ("binary", RGRADE)]:
        (tmp_path / name).mkdir()
        graded = run(program, [*grade, "-o", "out"], tmp_path / name)
        assert graded.returncode == 0, graded.stderr
        assert "recall@10" in graded.stdout
        compared = run(program, ["compare", "out", "out", "-o", "cmp"], tmp_path / name)
        assert compared.returncode == 0, compared.stderr
    for out in ["out", "cmp"]:
        script, binary = tmp_path / "script" / out, tmp_path / "binary" / out
        names = sorted(p.name for p in binary.iterdir() if p.suffix in (".csv", ".jsonl", ".html"))
        assert names and names == sorted(p.name for p in script.iterdir() if p.suffix in (".csv", ".jsonl", ".html"))
        match, mismatch, errors = filecmp.cmpfiles(binary, script, names, shallow=False)
        assert (mismatch, errors) == ([], []), out


@pytest.mark.parametrize(
    "args, status, needle",
    [
        (["--version"], 0, "rgrade 0.1.0"),
        (["grade"], 2, "--labels <FILE>"),
        (["grade", "--labels", "nope.jsonl", "logs.jsonl"], 2, "nope.jsonl"),
    ],
)
def test_statuses_and_messages_are_the_binarys(tmp_path, args, status, needle):
    script, binary = run(SCRIPT, args, tmp_path), run(RGRADE, args, tmp_path)
    assert script.returncode == binary.returncode == status
    assert needle in script.stdout + script.stderr
    assert (script.stdout, script.stderr) == (binary.stdout, binary.stderr)


def test_python_dash_m_runs_it(tmp_path):
    shown = subprocess.run([sys.executable, "-m", "rgrade", "--version"], capture_output=True, text=True)
    assert (shown.returncode, shown.stdout.strip()) == (0, "rgrade 0.1.0")


def test_a_compiled_key_grades_as_its_labels(tmp_path):
    import rgrade

    labels = SAMPLES / "realistic/labels.jsonl"
    compiled = run(SCRIPT, ["index", str(labels), "-o", "labels.rgx"], tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    logs = str(SAMPLES / "realistic/logs")
    options = dict(k=(1, 5, 10), repeats="last", min_rel=2)
    with pytest.warns(rgrade.RejectedRecordsWarning):
        from_labels = rgrade.grade(str(labels), logs, **options)
    with pytest.warns(rgrade.RejectedRecordsWarning):
        from_key = rgrade.grade(str(tmp_path / "labels.rgx"), logs, **options)
    assert from_key.per_query.equals(from_labels.per_query)
    assert from_key.aggregates.equals(from_labels.aggregates)
    assert from_key.summary["labels"]["hash"] == from_labels.summary["labels"]["hash"]
    assert from_key.summary["labels"]["compiled_key"]["path"].endswith("labels.rgx")
