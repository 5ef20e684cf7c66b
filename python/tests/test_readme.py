"""The READMEs' Python examples run as written: the ```python blocks of
README.md and python/README.md in order, in one namespace, and the Spark
command, each in a scratch directory where `data-samples` and `python`
lead to the repository's."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyspark  # noqa: F401  (the Spark example needs it; CI installs it)

ROOT = Path(__file__).resolve().parents[2]
# The READMEs that show Python, in the order their examples run.
READMES = [ROOT / "README.md", ROOT / "python" / "README.md"]


def scratch(tmp_path: Path) -> Path:
    for name in ("data-samples", "python"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def test_the_python_examples_run(tmp_path, monkeypatch):
    blocks = [
        (readme, block)
        for readme in READMES
        for block in re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    ]
    assert len(blocks) >= 2
    monkeypatch.chdir(scratch(tmp_path))
    namespace = {}
    for readme, block in blocks:
        exec(compile(block, str(readme.relative_to(ROOT)), "exec"), namespace)
    assert (tmp_path / "out/py/per_query.csv").exists()
    recall = namespace["graded"].aggregates.column("recall@3")[0].as_py()
    assert round(recall, 3) == 0.833


def test_the_spark_example_runs(tmp_path):
    commands = [
        block
        for readme in READMES
        for block in re.findall(r"```sh\n(.*?)```", readme.read_text(), re.S)
        if "spark_grade.py" in block
    ]
    assert len(commands) == 1
    lines = [line for line in commands[0].replace("\\\n", " ").splitlines() if "spark_grade.py" in line]
    (command,) = lines
    args = shlex.split(command)
    assert args[0] == "python"
    directory = scratch(tmp_path)
    run = subprocess.run([sys.executable, *args[1:]], cwd=directory, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (directory / "out/spark/per_query.csv").exists()
    assert "graded" in run.stdout
    assert os.path.getsize(directory / "out/spark/rejects.jsonl") > 0
