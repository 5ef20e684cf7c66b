"""Logs, labels, compiled keys and results in object storage, against an
S3-compatible server (moto's) started on 127.0.0.1 for these tests: the
command line and the Python API grade what they read there as they grade
the same files on disk; Parquet is read by ranges; every command writes
its result there complete or not at all, two writers of one prefix never
mix, and readers refuse a result left half written; no credential
written into a URI reaches an output or a message; a URI of a scheme
rgrade does not support is refused, exit 2, and never becomes a local
folder; rgrade.spark stores its result there as the command line does.
CI installs moto: these tests never skip."""

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
def test_an_output_uri_of_an_unsupported_scheme_is_refused_and_never_a_local_folder(s3, tmp_path, flag):
    uri = "ftp://host/night"
    refused = run(["grade", "--labels", str(SAMPLES / "realistic/labels.jsonl"), flag, uri,
                   str(SAMPLES / "realistic/logs")], cwd=tmp_path)
    assert refused.returncode == 2
    assert uri in refused.stderr and "does not read or write" in refused.stderr
    assert list(tmp_path.iterdir()) == []


def keys(s3, prefix: str) -> dict:
    """Every object under `prefix`, by key, with its bytes."""
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"]: s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}


def grade_night(night: str, day: int, logs=None, stdin=None, extra=(), labels=None):
    """grade the realistic sample as of 2026-12-0DAY into `night` (a URI);
    with `stdin`, the logs are read from it."""
    args = [RGRADE, "grade", "--labels", labels or str(SAMPLES / "realistic/labels.jsonl"), *REALISTIC, "-q",
            "--max-rejects", "10", "--as-of", f"2026-12-{day:02}T00:00:00Z", "-o", night, *extra,
            logs or str(SAMPLES / "realistic/logs")]
    return subprocess.Popen(args, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(process, stdin=None):
    out, err = process.communicate(stdin)
    return process.returncode, out, err


def test_results_written_to_a_bucket_are_complete_and_read_back_by_every_command(s3, tmp_path):
    """grade -o, --partial and --openmetrics, compare, trend, merge and
    index write to the bucket what they write to a directory: each listed
    file under its content hash, the marker last, the page beside it; and
    compare, trend, report and merge read results from it as from disk."""
    for day in (6, 7):
        code, _, err = finished(grade_night(f"s3://{BUCKET}/nights/{day}", day,
                                            extra=["--openmetrics", f"s3://{BUCKET}/metrics/{day}.prom"]))
        assert code == 0, err
    local = run(["grade", "--labels", str(SAMPLES / "realistic/labels.jsonl"), *REALISTIC, "-q",
                 "--max-rejects", "10", "--as-of", "2026-12-06T00:00:00Z", "-o", str(tmp_path / "6"),
                 str(SAMPLES / "realistic/logs")])
    assert local.returncode == 0, local.stderr
    stored = keys(s3, "nights/6/")
    summary = json.loads(stored["nights/6/summary.json"])
    assert summary == json.loads((tmp_path / "6/summary.json").read_text()) | {"elapsed_seconds": summary["elapsed_seconds"], "throughput": summary["throughput"], "command": summary["command"]}
    for listed in summary["outputs"]:
        body = stored[f"nights/6/.rgrade/{listed['hash']}/{listed['name']}"]
        assert body == (tmp_path / "6" / listed["name"]).read_bytes()
    assert "nights/6/report.html" in stored
    assert set(stored) == {f"nights/6/.rgrade/{f['hash']}/{f['name']}" for f in summary["outputs"]} \
        | {"nights/6/summary.json", "nights/6/report.html"}
    assert b"rgrade_" in keys(s3, "metrics/6.prom")["metrics/6.prom"]

    nights = [f"s3://{BUCKET}/nights/6", f"s3://{BUCKET}/nights/7"]
    compared = run(["compare", *nights, "-o", f"s3://{BUCKET}/compared", "-q"])
    assert compared.returncode == 0, compared.stderr
    comparison = json.loads(keys(s3, "compared/comparison.json")["compared/comparison.json"])
    assert comparison["baseline"]["path"] == f"s3://{BUCKET}/nights/6/per_query.csv"
    locally = run(["compare", str(tmp_path / "6"), nights[1], "-o", str(tmp_path / "cmp"), "-q"])
    assert locally.returncode == 0, locally.stderr
    assert (tmp_path / "cmp/comparison.csv").read_bytes() == \
        keys(s3, "compared/.rgrade/")[f"compared/.rgrade/{comparison['outputs'][0]['hash']}/comparison.csv"]

    trended = run(["trend", *nights, "-o", f"s3://{BUCKET}/trend"])
    assert trended.returncode == 0, trended.stderr
    assert "trend/alarms.json" in keys(s3, "trend/")

    for result in (nights[0], f"s3://{BUCKET}/compared", f"s3://{BUCKET}/trend"):
        drawn = run(["report", result, "-o", str(tmp_path / "page.html")])
        assert drawn.returncode == 0, drawn.stderr
    drawn = run(["report", nights[1]])
    assert drawn.returncode == 0 and f"{nights[1]}/report.html" in drawn.stderr, drawn.stderr

    code, _, err = finished(grade_night(f"s3://{BUCKET}/shards/a", 6, extra=["--partial"]))
    assert code == 0, err
    merged = run(["merge", "--labels", str(SAMPLES / "realistic/labels.jsonl"), "-q", "--max-rejects", "10",
                  "-o", f"s3://{BUCKET}/merged", f"s3://{BUCKET}/shards/a"])
    assert merged.returncode == 0, merged.stderr
    merged_summary = json.loads(keys(s3, "merged/summary.json")["merged/summary.json"])
    assert [o["hash"] for o in merged_summary["outputs"] if o["name"] == "per_query.csv"] == \
        [o["hash"] for o in summary["outputs"] if o["name"] == "per_query.csv"]

    indexed = run(["index", "-o", f"s3://{BUCKET}/keys/labels.rgk", str(SAMPLES / "realistic/labels.jsonl")])
    assert indexed.returncode == 0, indexed.stderr
    code, _, err = finished(grade_night(str(tmp_path / "keyed"), 6, labels=f"s3://{BUCKET}/keys/labels.rgk"))
    assert code == 0, err
    assert (tmp_path / "keyed/per_query.csv").read_bytes() == (tmp_path / "6/per_query.csv").read_bytes()


def test_a_second_writer_of_one_prefix_is_refused_and_the_first_result_kept(s3, tmp_path):
    """A run that claimed the prefix and is still reading (its logs come
    on stdin) loses to one that stores its result meanwhile: exit 2 naming
    the prefix, and the prefix holds the other run's complete set."""
    night = f"s3://{BUCKET}/race"
    slow = grade_night(night, 6, logs="-", stdin=True)
    code, _, err = finished(grade_night(night, 6, logs=str(SAMPLES / "realistic/logs/part-000.jsonl")))
    assert code == 0, err
    kept = keys(s3, "race/")
    code, _, err = finished(slow, (SAMPLES / "realistic/logs/part-000.jsonl").read_text())
    assert code == 2
    assert f"{night}: another rgrade run stored a result here" in err
    assert keys(s3, "race/") == kept
    summary = json.loads(kept["race/summary.json"])
    assert summary["inputs"][0]["path"].endswith("part-000.jsonl")
    assert run(["compare", night, night, "-q"]).returncode == 0
    # Run again, it replaces the result whole.
    code, _, err = finished(grade_night(night, 7))
    assert code == 0, err
    replaced = keys(s3, "race/")
    assert len(json.loads(replaced["race/summary.json"])["inputs"]) == 2
    assert set(replaced) == {f"race/.rgrade/{f['hash']}/{f['name']}"
                             for f in json.loads(replaced["race/summary.json"])["outputs"]} \
        | {"race/summary.json", "race/report.html"}


def test_a_half_written_result_is_refused_by_every_reader(s3, tmp_path):
    """Without its marker (a run killed before it), or with a listed file
    gone, a result is refused with exit 2 naming what is missing."""
    for night in ("half", "cut"):
        code, _, err = finished(grade_night(f"s3://{BUCKET}/{night}", 6))
        assert code == 0, err
    s3.delete_object(Bucket=BUCKET, Key="half/summary.json")
    per_query = next(k for k in keys(s3, "cut/") if k.endswith("/per_query.csv"))
    s3.delete_object(Bucket=BUCKET, Key=per_query)
    for prefix, missing in (("half", "holds none of summary.json"),
                            ("cut", f"s3://{BUCKET}/{per_query}: missing, though s3://{BUCKET}/cut/summary.json")):
        uri = f"s3://{BUCKET}/{prefix}"
        for args in (["compare", uri, uri], ["trend", uri, uri], ["report", uri],
                     ["merge", "--labels", str(SAMPLES / "realistic/labels.jsonl"), "-o", str(tmp_path / "m"), uri]):
            refused = run(args)
            assert refused.returncode == 2, (args, refused.stderr)
            assert missing in refused.stderr, (args, refused.stderr)


def test_no_credential_in_an_output_uri_reaches_what_is_written(s3, tmp_path):
    secret, signature = "wJalrXUtnFEMIsecretKEY", "X-Amz-Signature=deadbeef0123"
    out = f"s3://AKIDEXAMPLE:{secret}@{BUCKET}/secret-night?{signature}"
    metrics = f"s3://AKIDEXAMPLE:{secret}@{BUCKET}/secret-metrics.prom?{signature}"
    graded = run(["grade", "--labels", str(SAMPLES / "realistic/labels.jsonl"), *REALISTIC, "-q", "-o", out,
                  "--openmetrics", metrics, str(SAMPLES / "realistic/logs")])
    stdout, stderr = graded.stdout, graded.stderr
    assert graded.returncode == 1, stderr
    compared = run(["compare", out, out, "-o", out.replace("secret-night", "secret-cmp")])
    drawn = run(["report", out])
    written = [stdout, stderr, compared.stdout, compared.stderr, drawn.stdout, drawn.stderr]
    written += [body.decode() for prefix in ("secret-", ) for key, body in keys(s3, prefix).items()
                if not key.endswith(".zst")]
    assert f"s3://{BUCKET}/secret-night/rejects.jsonl" in stderr
    for text in written:
        for leaked in ("AKIDEXAMPLE", secret, signature, "deadbeef"):
            assert leaked not in text


def test_log_files_lists_a_prefix_with_the_gil_released(s3):
    """The server answers from a thread of this interpreter, so a call
    that held the GIL while it waited on the network would wait forever."""
    listed = rgrade.log_files(f"s3://{BUCKET}/samples/realistic/logs")
    assert listed == [f"s3://{BUCKET}/samples/realistic/logs/part-000.jsonl",
                      f"s3://{BUCKET}/samples/realistic/logs/part-001.jsonl.gz"]


def test_the_options_naming_a_file_read_it_from_a_bucket(s3, tmp_path):
    """--corpus, --doc-collections and compare's --rules read an object as
    they read a file."""
    diagnostics, compare = SAMPLES / "diagnostics", SAMPLES / "compare"
    for path in (diagnostics / "corpus.txt", diagnostics / "doc_collections.csv", compare / "rules.toml"):
        s3.upload_file(str(path), BUCKET, f"options/{path.name}")
    stops = {}
    for where, prefix in (("local", str(diagnostics) + "/"), ("bucket", f"s3://{BUCKET}/options/")):
        graded = run(["grade", "--labels", str(diagnostics / "labels.jsonl"), "-q", "--max-leaks", "10",
                      "--doc-collections", prefix + "doc_collections.csv", "--corpus", prefix + "corpus.txt",
                      str(diagnostics / "logs.jsonl")])
        stops[where] = (graded.returncode, graded.stderr.replace(prefix, "PREFIX/"))
    assert stops["local"] == stops["bucket"] and stops["local"][0] == 2, stops
    sides = []
    for side, logs in (("baseline", SAMPLES / "realistic/logs"), ("candidate", compare / "candidate")):
        graded = run(["grade", "--labels", str(compare / "labels.jsonl"), "-k", "1,5,10", "--repeats", "last",
                      "--max-rejects", "10", "-q", "-o", str(tmp_path / side), str(logs)])
        assert graded.returncode == 0, graded.stderr
        sides.append(str(tmp_path / side))
    gated = [run(["compare", *sides, "--metrics", "recall@5,recall@10,rr@10,ndcg@10", "--rules", rules])
             for rules in (str(compare / "rules.toml"), f"s3://{BUCKET}/options/rules.toml")]
    assert [g.returncode for g in gated] == [1, 1], gated[1].stderr
    assert gated[0].stdout == gated[1].stdout


def test_errors_found_in_a_result_read_back_name_its_uri_not_a_local_copy(s3, tmp_path):
    """A result read from a bucket is checked in a local copy; an error
    found there (a run the result does not hold, a shard graded with other
    labels) names the objects as the user gave them."""
    night, shard = f"s3://{BUCKET}/named/night", f"s3://{BUCKET}/named/shard"
    for out, extra in ((night, []), (shard, ["--partial"])):
        code, _, err = finished(grade_night(out, 6, extra=extra))
        assert code == 0, err
    other_labels = tmp_path / "labels.jsonl"
    other_labels.write_text("".join((SAMPLES / "realistic/labels.jsonl").read_text().splitlines(True)[1:]))
    for args, named in ((["compare", night, night, "--baseline-run", "no-such-run", "-q"],
                         f"{night}/per_query.csv: no rows of run 'no-such-run'"),
                        (["merge", "--labels", str(other_labels), "-o", str(tmp_path / "merged"), shard],
                         f"{shard}: graded with other labels")):
        refused = run(args)
        assert refused.returncode == 2, (args, refused.stderr)
        assert named in refused.stderr, (args, refused.stderr)
        assert "rgrade-read-" not in refused.stderr, (args, refused.stderr)


def test_spark_writes_its_result_to_a_bucket_as_the_command_line_does(s3, spark, tmp_path):
    """rgrade.spark's `out` may be a prefix: the driver stores the merged
    result there, and rgrade reads it back as the command line's."""
    import rgrade.spark

    night = f"s3://{BUCKET}/spark/2026-12-07"
    with pytest.warns(rgrade.RejectedRecordsWarning):
        rgrade.spark.grade(SAMPLES / "realistic/logs", SAMPLES / "realistic/labels.jsonl", [1, 5, 10],
                           repeats="last", stage_order=["retrieve", "final"], as_of="2026-12-07T00:00:00Z",
                           spark=spark, partitions=3, out=night)
    code, _, err = finished(grade_night(str(tmp_path / "cli"), 7))
    assert code == 0, err
    back = run(["report", night, "-o", str(tmp_path / "report.html")])
    assert back.returncode == 0, back.stderr
    stored = {key.rsplit("/", 1)[-1]: body for key, body in keys(s3, "spark/2026-12-07/").items()}
    for name in ("per_query.csv", "aggregates.csv", "rejects.jsonl"):
        assert stored[name] == (tmp_path / "cli" / name).read_bytes(), name
