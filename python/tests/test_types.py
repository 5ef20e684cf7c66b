"""The package's type annotations hold: mypy --strict passes on the
package and on python/README.md's Python, and catches what a caller gets wrong
(an option value the command line does not take, a value that is no
table); grade_shard is typed as a Shard. The option values' Literal
types are the command line's choices."""

import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import rgrade

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "python" / "README.md").read_text()

# The `choice!` enums of src/base/options.rs, by the Literal type and the
# keyword that take their values.
CHOICES = {
    "MissingPolicy": (rgrade.Missing, "missing"),
    "RepeatPolicy": (rgrade.Repeats, "repeats"),
    "DuplicateDocs": (rgrade.DuplicateDocs, "duplicate_docs"),
    "RunName": (rgrade.RunName, "run_name"),
    "Unit": (rgrade.Unit, "unit"),
    "JoinBy": (rgrade.JoinBy, "join"),
    "LabelsFormat": (rgrade.LabelsFormat, "labels_format"),
    "LogsFormat": (rgrade.LogsFormat, "logs_format"),
}


@pytest.fixture(scope="module")
def mypy(tmp_path_factory):
    """mypy --strict over the given files, the checkout's package on its
    path, with a cache shared by this module's tests."""
    pytest.importorskip("mypy")
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(*paths):
        env = {**os.environ, "MYPYPATH": str(ROOT / "python")}
        args = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), *map(str, paths)]
        return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)

    return run


def test_the_package_passes_mypy_strict(mypy):
    checked = mypy(ROOT / "python" / "rgrade")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("Success: no issues found")


def test_the_readmes_python_passes_mypy_strict(mypy, tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 2
    example = tmp_path / "readme.py"
    example.write_text("\n".join(blocks))
    checked = mypy(example)
    assert checked.returncode == 0, checked.stdout + checked.stderr


PROBE = """\
import pandas
import polars
import pyarrow as pa
import rgrade

frame = pandas.DataFrame({"query_id": ["q"], "doc_id": ["d"]})
reveal_type(rgrade.grade_shard(frame, polars.DataFrame({"query_id": ["q"]})))
reveal_type(rgrade.grade("labels.jsonl", ["a.jsonl", pa.table({"query_id": ["q"]})], k=[1, "all"]))
reveal_type(rgrade.grade("labels.jsonl", "logs.jsonl").rejects)
rgrade.grade("labels.jsonl", "logs.jsonl", repeats="often")
rgrade.grade("labels.jsonl", 42)
"""


def test_mypy_types_calls_and_catches_mistakes(mypy, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    checked = mypy(probe)
    lines = [line for line in checked.stdout.splitlines() if "probe.py:" in line]
    revealed = [line.split(": note: Revealed type is ", 1)[1] for line in lines if "Revealed type" in line]
    assert revealed[:2] == ['"rgrade.Shard"', '"rgrade.Grading"'], checked.stdout
    assert re.fullmatch(r'"pyarrow\.[\w.]*\.Table"', revealed[2]), checked.stdout
    errors = [line.split(":")[1] for line in lines if ": error: " in line and 'to "grade"' in line]
    assert errors == ["10", "11"], checked.stdout
    assert checked.returncode == 1


def test_the_option_types_are_the_command_lines_choices():
    source = (ROOT / "src" / "base" / "options.rs").read_text()
    options = typing.get_type_hints(rgrade.GradeOptions)
    for enum, (literal, keyword) in CHOICES.items():
        body = re.search(rf"pub enum {enum} \{{(.*?)\n    \}}", source, re.S)
        assert body, enum
        assert typing.get_args(literal) == tuple(re.findall(r'= "([^"]+)",', body.group(1))), enum
        assert options[keyword] == literal, keyword
