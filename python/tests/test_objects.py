"""Logs, labels and compiled keys read from object storage, against an
S3-compatible server (moto's) started on 127.0.0.1 for these tests: the
command line and the Python API grade what they read there as they grade
the same files on disk; Parquet is read by ranges; no credential written
into a URI reaches an output or a message; a URI rgrade cannot write to
is refused, exit 2, and never becomes a local folder. CI installs moto:
these tests never skip."""

import json
import os
import subprocess
from pathlib import Path

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from moto.server import ThreadedMotoServer

import rgrade

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data-samples"
RGRADE = os.environ.get("RGRADE_BIN", str(ROOT / "target" / "debug" / "rgrade"))
BUCKET = "lake"
REALISTIC = ["-k", "1,5,10", "--repeats", "last", "--stage-order", "retrieve,final"]


class Requests:
    """The server's application, noting each request's method, key and
    Range header, so that a test sees how an object was read."""

    def __init__(self, app):
        self.app = app
        self.seen = []

    def __call__(self, environ, start_response):
        self.seen.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get("HTTP_RANGE")))
        return self.app(environ, start_response)


@pytest.fixture(scope="module")
def server():
    """An S3 server on a free port of 127.0.0.1 and the environment
    pointing rgrade (as the AWS tools) at it, and a bucket holding
    data-samples/ under `samples/`. Yields the requests it notes."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    requests = Requests(server._server.app)
    server._server.app = requests
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ALLOW_HTTP": "true",
    }
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    client = boto3.client("s3")
    client.create_bucket(Bucket=BUCKET)
    for path in SAMPLES.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"samples/{path.relative_to(SAMPLES).as_posix()}")
    try:
        yield requests
    finally:
        server.stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def s3(server):
    """The boto3 client of the server."""
    return boto3.client("s3")


def run(args, cwd=None):
    return subprocess.run([RGRADE, *args], capture_output=True, text=True, cwd=cwd)


def outputs(directory: Path) -> dict:
    """Every output but those naming the inputs (summary.json, the
    report), by name."""
    named = ("summary.json", "report.html")
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.name not in named and not p.name.startswith(".")}


def inputs(directory: Path) -> list:
    summary = json.loads((directory / "summary.json").read_text())
    return [(i["path"], i["lines"], i["records"], i["rejected"]) for i in summary["inputs"]]


def test_jsonl_and_gzip_logs_and_labels_read_from_a_bucket_grade_as_on_disk(s3, tmp_path):
    """A prefix is listed as a directory is walked; the rejects of the
    gzip part are read again from the bucket, excerpts and all."""
    local = run(["grade", "--labels", str(SAMPLES / "realistic/labels.jsonl"), *REALISTIC, "-q",
                 "-o", str(tmp_path / "local"), str(SAMPLES / "realistic/logs")])
    remote = run(["grade", "--labels", f"s3://{BUCKET}/samples/realistic/labels.jsonl", *REALISTIC, "-q",
                  "-o", str(tmp_path / "remote"), f"s3://{BUCKET}/samples/realistic/logs"])
    assert (local.returncode, remote.returncode) == (1, 1), remote.stderr
    there = f"s3://{BUCKET}/samples/realistic/logs/"
    assert there + "part-001.jsonl.gz:325: invalid_json" in remote.stderr
    mine, theirs = outputs(tmp_path / "local"), outputs(tmp_path / "remote")
    here = str(SAMPLES / "realistic/logs") + "/"
    mine["rejects.jsonl"] = mine["rejects.jsonl"].replace(here.encode(), there.encode())
    assert mine == theirs
    assert [(p.replace(here, there),) + rest for p, *rest in inputs(tmp_path / "local") for rest in [tuple(rest)]] \
        == inputs(tmp_path / "remote")


def parquet_sample(s3, tmp_path: Path) -> Path:
    """A Parquet log of many row groups, with a large column no grading
    reads, on disk and in the bucket as `logs/events.parquet`."""
    events = pa.concat_tables([pq.read_table(SAMPLES / "traces/parquet/events.parquet")] * 40)
    notes = pa.array([os.urandom(2000).hex() for _ in range(events.num_rows)])
    path = tmp_path / "events.parquet"
    pq.write_table(events.append_column("notes", notes), path, row_group_size=50, compression="none")
    s3.upload_file(str(path), BUCKET, "logs/events.parquet")
    return path


def test_parquet_logs_and_labels_are_read_by_ranges_as_on_disk(server, s3, tmp_path):
    path = parquet_sample(s3, tmp_path)
    server.seen.clear()
    labels = SAMPLES / "traces/parquet/labels.parquet"
    local = run(["grade", "--labels", str(labels), "--repeats", "last", "-q", "-o", str(tmp_path / "local"), str(path)])
    remote = run(["grade", "--labels", f"s3://{BUCKET}/samples/traces/parquet/labels.parquet", "--repeats", "last", "-q",
                  "-o", str(tmp_path / "remote"), f"s3://{BUCKET}/logs/events.parquet"])
    assert (local.returncode, remote.returncode) == (0, 0), remote.stderr
    assert outputs(tmp_path / "local") == outputs(tmp_path / "remote")
    summary = json.loads((tmp_path / "remote/summary.json").read_text())
    assert summary["inputs"][0]["path"] == f"s3://{BUCKET}/logs/events.parquet"
    assert summary["inputs"][0]["bytes"] == path.stat().st_size
    # Its footer and the column chunks wanted, by ranges: the first bytes
    # (the format's check) aside, never the large column, never the whole.
    gets = [r for method, key, r in server.seen if method == "GET" and key == f"/{BUCKET}/logs/events.parquet"]
    assert len(gets) > 3 and all(gets), gets
    fetched = sum(int(end) - int(start) + 1 for start, end in (r.removeprefix("bytes=").split("-") for r in gets))
    assert fetched < path.stat().st_size / 4, (fetched, path.stat().st_size)


def test_a_compiled_key_in_a_bucket_is_read_as_on_disk(s3, tmp_path):
    key = tmp_path / "key.rgx"
    assert run(["index", "-o", str(key), str(SAMPLES / "realistic/labels.jsonl")]).returncode == 0
    s3.upload_file(str(key), BUCKET, "keys/key.rgx")
    logs = str(SAMPLES / "realistic/logs")
    local = run(["grade", "--labels", str(key), *REALISTIC, "-q", "-o", str(tmp_path / "local"), logs])
    remote = run(["grade", "--labels", f"s3://{BUCKET}/keys/key.rgx", *REALISTIC, "-q", "-o", str(tmp_path / "remote"), logs])
    assert (local.returncode, remote.returncode) == (1, 1), remote.stderr
    assert outputs(tmp_path / "local") == outputs(tmp_path / "remote")
    missing = run(["grade", "--labels", f"s3://{BUCKET}/keys/none.rgx", logs])
    assert missing.returncode == 2
    assert f"s3://{BUCKET}/keys/none.rgx: cannot read labels: no such object" in missing.stderr


def test_the_python_api_reads_paths_in_a_bucket(s3):
    labels = f"s3://{BUCKET}/samples/realistic/labels.jsonl"
    logs = f"s3://{BUCKET}/samples/realistic/logs/part-000.jsonl"
    remote = rgrade.grade(labels, logs, k=[1, 5, 10])
    local = rgrade.grade(SAMPLES / "realistic/labels.jsonl", SAMPLES / "realistic/logs/part-000.jsonl", k=[1, 5, 10])
    assert remote.aggregates.equals(local.aggregates)
    assert remote.summary["inputs"][0]["path"] == logs


def test_no_credential_in_a_uri_reaches_an_output_or_a_message(s3, tmp_path):
    """User info and a presigned URL's query string are dropped from every
    URI rgrade records or prints; the object is still the one named."""
    secret, signature = "wJalrXUtnFEMIsecretKEY", "X-Amz-Signature=deadbeef0123"
    logs = f"s3://AKIDEXAMPLE:{secret}@{BUCKET}/samples/realistic/logs/part-001.jsonl.gz?{signature}"
    labels = f"s3://AKIDEXAMPLE:{secret}@{BUCKET}/samples/realistic/labels.jsonl?{signature}"
    graded = run(["grade", "--labels", labels, *REALISTIC, "-o", str(tmp_path / "out"), logs])
    assert graded.returncode == 1, graded.stderr
    written = [graded.stdout, graded.stderr] + [p.read_text() for p in sorted((tmp_path / "out").iterdir())
                                                  if p.suffix in (".json", ".jsonl", ".csv", ".html")]
    for text in written:
        for leaked in ("AKIDEXAMPLE", secret, signature, "deadbeef"):
            assert leaked not in text
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert [i["path"] for i in summary["inputs"]] == [f"s3://{BUCKET}/samples/realistic/logs/part-001.jsonl.gz"]
    assert summary["labels"]["path"] == f"s3://{BUCKET}/samples/realistic/labels.jsonl"


@pytest.mark.parametrize("flag", ["-o", "--openmetrics"])
@pytest.mark.parametrize("uri", [f"s3://{BUCKET}/night", "gs://bucket/night", "ftp://host/night"])
def test_an_output_uri_is_refused_and_never_a_local_folder(s3, tmp_path, flag, uri):
    refused = run(["grade", "--labels", str(SAMPLES / "realistic/labels.jsonl"), flag, uri,
                   str(SAMPLES / "realistic/logs")], cwd=tmp_path)
    assert refused.returncode == 2
    assert uri in refused.stderr
    assert list(tmp_path.iterdir()) == []
