"""The READMEs' Python examples run as written: the ```python blocks of
README.md and python/README.md in order, in one namespace, and the Spark
command, each in a scratch directory where `data-samples` and `python`
lead to the repository's."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pyspark  # noqa: F401  (the Spark command needs it; CI installs it)

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


def test_the_spark_command_runs(tmp_path):
    """spark-submit, given the module's file, runs the job in local mode
    (the way a cluster runs it) with the README's arguments."""
    commands = [
        block
        for readme in READMES
        for block in re.findall(r"```sh\n(.*?)```", readme.read_text(), re.S)
        if "spark-submit" in block
    ]
    assert len(commands) == 1
    (command,) = [line for line in commands[0].replace("\\\n", " ").splitlines() if "spark-submit" in line]
    directory = scratch(tmp_path)
    # The command as a shell runs it, with this Python's environment first
    # on the PATH (its `python` and pyspark's `spark-submit`).
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYSPARK_PYTHON=sys.executable)
    run = subprocess.run(["bash", "-c", command], cwd=directory, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    graded = directory / "out/spark"
    assert sorted(p.name for p in graded.iterdir() if not p.name.startswith(".")) == [
        "aggregates.csv", "per_query.csv", "rejects.jsonl", "report.html", "summary.json"]
    assert len((graded / "rejects.jsonl").read_text().splitlines()) == 5
