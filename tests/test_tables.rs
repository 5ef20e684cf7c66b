//! Arrow tables handed over in memory (docs/reference.md, "Arrow tables"):
//! every Parquet sample read into record batches, whole, cut into many
//! small sliced batches or streamed, grades to the bytes its file grades to; labels as
//! a table grade as the labels file does; a bad row is rejected naming the
//! table and row, and a table without a query id column is refused.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch, RecordBatchReader, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rgrade::{ArrowStream, ArrowTable, Cutoff, GradePlan, LogLines, LogTable, RepeatPolicy};

use crate::util::{
    assert_counts_add_up, assert_same_lines, count, repo_path, summary_without, Workdir, RUN_KEYS,
};

/// A trace sample's path.
fn traces(rel: &str) -> PathBuf {
    repo_path("data-samples/traces").join(rel)
}

/// The plan `rgrade grade --labels LABELS -k 1,5,10 -o OUT -j 2 LOGS` makes.
fn plan(labels: PathBuf, logs: Vec<PathBuf>, out: &Path) -> GradePlan {
    GradePlan {
        ks: [1, 5, 10].map(Cutoff::At).to_vec(),
        out: Some(out.to_path_buf()),
        threads: NonZeroUsize::new(2),
        ..GradePlan::new(labels, logs)
    }
}

/// The record batches of a Parquet file, as a table named `name`.
fn read_table(path: &Path, name: &str) -> ArrowTable {
    let file = std::fs::File::open(path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
    ArrowTable::new(name, schema, batches).unwrap()
}

/// The same rows as `table`, in sliced batches of at most `rows` rows.
fn cut(table: &ArrowTable, rows: usize) -> ArrowTable {
    let mut batches = Vec::new();
    for batch in table.batches() {
        for start in (0..batch.num_rows()).step_by(rows) {
            batches.push(batch.slice(start, rows.min(batch.num_rows() - start)));
        }
    }
    ArrowTable::new(table.name(), Arc::clone(table.schema()), batches).unwrap()
}

/// A reader of `table`'s batches, read once, as a stream hands them over.
fn stream_of(table: &ArrowTable) -> impl RecordBatchReader + Send + 'static {
    let batches: Vec<_> = table.batches().iter().cloned().map(Ok).collect();
    arrow_array::RecordBatchIterator::new(batches, Arc::clone(table.schema()))
}

/// per_query.csv and aggregates.csv of `dir`.
fn outputs(dir: &Path) -> [Vec<u8>; 2] {
    ["per_query.csv", "aggregates.csv"].map(|file| std::fs::read(dir.join(file)).unwrap())
}

#[track_caller]
fn assert_same_outputs(what: &str, got: &Path, want: &Path) {
    let (got, want) = (outputs(got), outputs(want));
    assert_same_lines(&format!("{what}: per_query.csv"), &got[0], &want[0]);
    assert_same_lines(&format!("{what}: aggregates.csv"), &got[1], &want[1]);
}

#[test]
fn every_parquet_sample_grades_as_a_table_as_its_file_does() {
    let wd = Workdir::new("tables_samples");
    let labels = traces("labels.jsonl");
    for sample in ["events", "events_structs", "results_long", "phoenix_spans"] {
        let path = traces(&format!("parquet/{sample}.parquet"));
        let file_out = wd.path(&format!("{sample}-file"));
        rgrade::grade(
            &plan(labels.clone(), vec![path.clone()], &file_out),
            &mut |_| {},
        )
        .unwrap();
        let whole = read_table(&path, sample);
        let cut = cut(&whole, 3);
        let streamed = ArrowStream::new(sample, stream_of(&cut));
        let mut hashes = Vec::new();
        for (shape, table) in [
            ("whole", LogTable::from(whole.clone())),
            ("cut", cut.into()),
            ("streamed", streamed.into()),
        ] {
            let out = wd.path(&format!("{sample}-{shape}"));
            let mut plan = plan(labels.clone(), Vec::new(), &out);
            plan.tables.logs.push(table);
            rgrade::grade(&plan, &mut |_| {}).unwrap();
            assert_same_outputs(&format!("{sample} {shape}"), &out, &file_out);
            let summary = wd.read_json(&format!("{sample}-{shape}/summary.json"));
            assert_counts_add_up(&summary);
            assert_eq!(summary["inputs"][0]["path"], sample);
            assert_eq!(
                summary["inputs"][0]["lines"].as_u64(),
                Some(whole.rows()),
                "{sample} {shape}"
            );
            hashes.push(summary["inputs"][0]["hash"].clone());
        }
        // The same batches hash the same, held whole or streamed.
        assert_eq!(hashes[1], hashes[2], "{sample}");
    }
}

#[test]
fn labels_as_a_table_grade_as_the_labels_file_does() {
    let wd = Workdir::new("tables_labels");
    let logs = vec![traces("captures.jsonl")];
    let labels = traces("parquet/labels.parquet");
    let file_out = wd.path("file");
    rgrade::grade(&plan(labels.clone(), logs.clone(), &file_out), &mut |_| {}).unwrap();
    let table = read_table(&labels, "labels");
    let mut hashes = Vec::new();
    for (shape, table) in [("whole", table.clone()), ("cut", cut(&table, 4))] {
        let out = wd.path(shape);
        let mut plan = plan(PathBuf::from("labels"), logs.clone(), &out);
        plan.tables.labels = Some(table);
        rgrade::grade(&plan, &mut |_| {}).unwrap();
        assert_same_outputs(shape, &out, &file_out);
        let summary = wd.read_json(&format!("{shape}/summary.json"));
        assert_eq!(summary["labels"]["path"], "labels");
        hashes.push(summary["labels"]["hash"].as_str().unwrap().to_string());
    }
    // The same table hashes the same, as a file does.
    let again = wd.path("again");
    let mut plan = plan(PathBuf::from("labels"), logs, &again);
    plan.tables.labels = Some(read_table(&labels, "labels"));
    rgrade::grade(&plan, &mut |_| {}).unwrap();
    assert_eq!(
        wd.read_json("again/summary.json")["labels"]["hash"],
        hashes[0]
    );
}

/// Search events with `query` ids and one-document rankings.
fn events(name: &str, query: Vec<Option<&str>>) -> ArrowTable {
    let mut results = ListBuilder::new(StringBuilder::new());
    for _ in &query {
        results.values().append_value("a");
        results.append(true);
    }
    let query: ArrayRef = Arc::new(StringArray::from(query));
    let results: ArrayRef = Arc::new(results.finish());
    let batch = RecordBatch::try_from_iter([("query_id", query), ("results", results)]).unwrap();
    ArrowTable::new(name, batch.schema(), vec![batch]).unwrap()
}

#[test]
fn a_bad_row_is_rejected_naming_its_table_and_row() {
    let wd = Workdir::new("tables_bad_row");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"a\"]}\n",
    );
    let mut plan = plan(wd.path("labels.jsonl"), Vec::new(), &wd.path("out"));
    plan.tables
        .logs
        .push(events("events", vec![Some("q1"), None]).into());
    let graded = rgrade::grade(&plan, &mut |_| {}).unwrap();
    assert_eq!(graded.counts.rejected, 1);
    let summary = wd.read_json("out/summary.json");
    assert_counts_add_up(&summary);
    assert_eq!(count(&summary, "graded_records"), 1);
    let rejects = wd.read_jsonl("out/rejects.jsonl");
    assert_eq!(rejects.len(), 1);
    assert_eq!(rejects[0]["file"], "events");
    assert_eq!(rejects[0]["line"], 2);
    assert_eq!(rejects[0]["reason"], "missing_query_id");
    assert_eq!(rejects[0]["detail"], "row 1: 'query_id' is null");
}

/// The error grading `plan` ends in.
fn refusal(plan: &GradePlan) -> rgrade::Error {
    match rgrade::grade(plan, &mut |_| {}) {
        Ok(_) => panic!("graded, though it should have been refused"),
        Err(err) => err,
    }
}

#[test]
fn a_stream_is_read_once_and_refused_where_it_would_be_read_twice() {
    let wd = Workdir::new("tables_stream_once");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"a\"]}\n",
    );
    let stream = ArrowStream::new("mine", stream_of(&events("mine", vec![Some("q1")])));
    let mut plan = plan(wd.path("labels.jsonl"), Vec::new(), &wd.path("out"));
    plan.tables.logs.push(stream.clone().into());

    // The calibration reads the logs under each key: refused before
    // anything is read.
    plan.calibrate = Some(wd.path("labels.jsonl"));
    let err = refusal(&plan);
    assert_eq!(err.kind(), rgrade::ErrorKind::Usage);
    assert!(format!("{err:#}").contains("mine is a stream"), "{err:#}");
    assert!(!stream.was_read());

    plan.calibrate = None;
    assert_eq!(rgrade::grade(&plan, &mut |_| {}).unwrap().counts.graded, 1);
    assert!(stream.was_read());
    // Its clone shares the stream, now read: an error, not an empty grading.
    plan.out = Some(wd.path("again"));
    let err = refusal(&plan);
    assert_eq!(err.kind(), rgrade::ErrorKind::Logs);
    assert!(
        format!("{err:#}").contains("mine: a stream of record batches is read once"),
        "{err:#}"
    );
}

#[test]
fn a_table_without_the_columns_of_a_layout_is_refused() {
    let wd = Workdir::new("tables_no_query");
    wd.write(
        "labels.jsonl",
        "{\"query_id\": \"q1\", \"relevant\": [\"a\"]}\n",
    );
    let mut plan = plan(wd.path("labels.jsonl"), Vec::new(), &wd.path("out"));
    let mut table = events("mine", vec![Some("q1")]);
    plan.fields.query = Some("qid".to_string());
    plan.tables.logs.push(table.clone().into());
    let err = refusal(&plan);
    let message = format!("{err:#}");
    assert_eq!(err.kind(), rgrade::ErrorKind::Logs);
    assert!(message.starts_with("mine: "), "{message}");
    assert!(message.contains("'qid'"), "{message}");
    assert!(!wd.exists("out/summary.json"));

    // No table and no file: nothing to grade.
    plan.tables.logs.clear();
    plan.fields.query = None;
    let err = refusal(&plan);
    assert!(format!("{err:#}").contains("no log input"), "{err:#}");
    assert_eq!(err.kind(), rgrade::ErrorKind::Logs);
    plan.ks.clear();
    assert_eq!(refusal(&plan).kind(), rgrade::ErrorKind::Usage);
    plan.ks = vec!["1".parse().unwrap()];
    plan.labels = wd.path("absent.jsonl");
    assert_eq!(refusal(&plan).kind(), rgrade::ErrorKind::Labels);
    plan.labels = wd.path("labels.jsonl");
    // A table of no rows is an input of no records; when it is the only
    // one, nothing was graded.
    table = ArrowTable::new("empty", Arc::clone(table.schema()), Vec::new()).unwrap();
    plan.tables.logs.push(table.into());
    let err = refusal(&plan);
    assert!(
        format!("{err:#}").contains("no log input holds a record (1 input read"),
        "{err:#}"
    );
}

/// The realistic sample's lines as a Spark job hands them over: split
/// into `parts` partitions by query id (a line that names none in the
/// first), each a table of (input, line, text) rows in no order.
fn partitioned_lines(inputs: &[PathBuf], parts: usize) -> Vec<ArrowTable> {
    let mut rows: Vec<Vec<(i32, i64, Vec<u8>)>> = vec![Vec::new(); parts];
    for (input, path) in (0..).zip(inputs) {
        let mut bytes = Vec::new();
        let file = std::fs::File::open(path).unwrap();
        if path.extension().is_some_and(|e| e == "gz") {
            std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(file), &mut bytes)
                .unwrap();
        } else {
            bytes = std::fs::read(path).unwrap();
        }
        let text = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        for (line, text) in (1..).zip(text.split(|&b| b == b'\n')) {
            let query = serde_json::from_slice::<serde_json::Value>(text)
                .ok()
                .map(|record| record["query_id"].to_string())
                .unwrap_or_default();
            let part = query.bytes().map(usize::from).sum::<usize>() % parts;
            rows[part].push((input, line, text.to_vec()));
        }
    }
    (0..parts)
        .map(|part| {
            let mut rows = std::mem::take(&mut rows[part]);
            rows.reverse();
            let input: ArrayRef = Arc::new(arrow_array::Int32Array::from_iter_values(
                rows.iter().map(|r| r.0),
            ));
            let line: ArrayRef = Arc::new(arrow_array::Int64Array::from_iter_values(
                rows.iter().map(|r| r.1),
            ));
            let text: ArrayRef = Arc::new(arrow_array::BinaryArray::from_iter_values(
                rows.iter().map(|r| r.2.as_slice()),
            ));
            let batch =
                RecordBatch::try_from_iter([("input", input), ("line", line), ("text", text)])
                    .unwrap();
            ArrowTable::new(format!("part {part}"), batch.schema(), vec![batch]).unwrap()
        })
        .collect()
}

/// Three partitions of lines, graded partially and merged, write what one
/// grading of the files writes: every file byte for byte (rejects and
/// their excerpts, stage loss, repeats resolved in input order), and
/// summary.json but for its inputs (parts of files have no content hash)
/// and command line. The report lists the inputs too.
#[test]
fn lines_partitioned_by_query_merge_into_what_one_grading_writes() {
    let wd = Workdir::new("tables_lines");
    let labels = repo_path("data-samples/realistic/labels.jsonl");
    let logs = repo_path("data-samples/realistic/logs");
    let inputs = ["part-000.jsonl", "part-001.jsonl.gz"].map(|f| logs.join(f));
    let options = |plan: &mut GradePlan| {
        plan.repeats = RepeatPolicy::Last;
        plan.stage_order = vec!["retrieve".into(), "final".into()];
    };
    let mut one = plan(labels.clone(), vec![logs], &wd.path("one"));
    options(&mut one);
    rgrade::grade(&one, &mut |_| {}).unwrap();

    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let mut shards = Vec::new();
    for (i, table) in partitioned_lines(&inputs, 3).iter().enumerate() {
        let dir = wd.path(&format!("shard{i}"));
        let mut shard = plan(labels.clone(), Vec::new(), &dir);
        options(&mut shard);
        shard.tables.lines = Some(Arc::new(LogLines::new(names.clone(), table).unwrap()));
        rgrade::grade_partial(&shard, &mut |_| {}).unwrap();
        shards.push(dir);
    }
    let merge = rgrade::MergePlan {
        threads: NonZeroUsize::new(2),
        ..rgrade::MergePlan::new(labels, shards, wd.path("merged"))
    };
    rgrade::merge(&merge, &mut |_| {}).unwrap();

    let mut files: Vec<String> = std::fs::read_dir(wd.path("one"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".csv") || name.ends_with(".jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for file in &files {
        let (one, merged) = (
            wd.read(&format!("one/{file}")),
            wd.read(&format!("merged/{file}")),
        );
        assert_same_lines(file, &merged, &one);
    }
    let without_inputs = |dir: &str| {
        let bytes = wd.read(&format!("{dir}/summary.json"));
        summary_without(&bytes, &[&RUN_KEYS[..], &["inputs", "outputs"]].concat())
    };
    assert_eq!(without_inputs("merged"), without_inputs("one"));
    let merged = wd.read_json("merged/summary.json");
    let one = wd.read_json("one/summary.json");
    for (merged, one) in merged["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(one["inputs"].as_array().unwrap())
    {
        assert_eq!(merged["path"], one["path"]);
        assert_eq!(merged["lines"], one["lines"]);
        assert_eq!(merged["records"], one["records"]);
        assert_eq!(merged["hash"], "");
    }
}

#[test]
fn lines_that_name_no_input_or_repeat_a_line_are_refused() {
    let text: ArrayRef = Arc::new(StringArray::from(vec!["{}", "{}"]));
    let table = |input: Vec<i64>, line: Vec<i64>| {
        let input: ArrayRef = Arc::new(arrow_array::Int64Array::from(input));
        let line: ArrayRef = Arc::new(arrow_array::Int64Array::from(line));
        let batch = RecordBatch::try_from_iter([
            ("input", input),
            ("line", line),
            ("text", Arc::clone(&text)),
        ])
        .unwrap();
        ArrowTable::new("lines", batch.schema(), vec![batch]).unwrap()
    };
    let names = vec!["a.jsonl".to_string()];
    let refusal = |input, line| {
        format!(
            "{:#}",
            LogLines::new(names.clone(), &table(input, line)).unwrap_err()
        )
    };
    assert!(refusal(vec![0, 1], vec![1, 2]).contains("input 1, line 2"));
    assert!(refusal(vec![0, 0], vec![1, 0]).contains("line 0"));
    assert!(refusal(vec![0, 0], vec![3, 3]).contains("line 3 of a.jsonl is given twice"));
    assert!(LogLines::new(names.clone(), &table(vec![0, 0], vec![2, 1])).is_ok());
    let broken: ArrayRef = Arc::new(StringArray::from(vec!["{}", "{}\n{}"]));
    let input: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![0, 0]));
    let line: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![1, 2]));
    let batch =
        RecordBatch::try_from_iter([("input", input), ("line", line), ("text", broken)]).unwrap();
    let table = ArrowTable::new("lines", batch.schema(), vec![batch]).unwrap();
    let err = LogLines::new(names, &table).unwrap_err();
    assert!(format!("{err:#}").contains("row 1 of batch 0: a line holds a line break"));
}

/// Lines handed over decide their format from the first JSON object, as a
/// file does from its first line that fits: a partition that starts
/// mid-line still reads as OTLP traces, and only its cut line is rejected.
#[test]
fn lines_handed_over_look_past_a_cut_first_line() {
    let wd = Workdir::new("tables_lines_cut");
    let sample = std::fs::read_to_string(traces("otlp/openinference.jsonl")).unwrap();
    let mut texts: Vec<&str> = sample.lines().collect();
    texts[0] = &texts[0][100..];
    let numbers: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![1, 2, 3]));
    let inputs: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![0, 0, 0]));
    let texts: ArrayRef = Arc::new(StringArray::from(texts));
    let batch = RecordBatch::try_from_iter([("input", inputs), ("line", numbers), ("text", texts)])
        .unwrap();
    let table = ArrowTable::new("lines", batch.schema(), vec![batch]).unwrap();
    let mut graded = plan(traces("labels.jsonl"), Vec::new(), &wd.path("out"));
    let names = vec!["openinference.jsonl".to_string()];
    graded.tables.lines = Some(Arc::new(LogLines::new(names, &table).unwrap()));
    rgrade::grade(&graded, &mut |_| {}).unwrap();
    let summary = wd.read_json("out/summary.json");
    assert_counts_add_up(&summary);
    let counts = ["records", "graded_records", "rejected"].map(|c| count(&summary, c));
    assert_eq!(
        counts,
        [49, 24, 1],
        "the cut line's 32 spans are one rejected record"
    );
}

/// The rows a grading keeps in memory are per_query.csv's, cell for cell:
/// the same columns in the same order, text as written, numbers that read
/// back as the same values, empty numbers and flags as nulls; and the same whether
/// the grading writes files or not.
#[test]
fn rows_kept_in_memory_are_per_query_csvs() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_schema::DataType;

    let wd = Workdir::new("tables_rows_kept");
    let sample = |rel: &str| repo_path("data-samples/diagnostics").join(rel);
    let plan = GradePlan {
        ks: vec![Cutoff::At(3), Cutoff::All],
        repeats: RepeatPolicy::Mean,
        stage_order: vec!["retrieve".into(), "rerank".into(), "final".into()],
        keep_rows: true,
        ..plan(
            sample("labels.jsonl"),
            vec![sample("logs.jsonl")],
            &wd.path("out"),
        )
    };
    let graded = rgrade::grade(&plan, &mut |_| {}).unwrap();
    let table = graded.per_query.expect("the rows were kept");

    let mut csv = csv::Reader::from_path(wd.path("out/per_query.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let names: Vec<&String> = table.schema().fields().iter().map(|f| f.name()).collect();
    assert_eq!(names, header.iter().collect::<Vec<_>>());
    let records: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    let rows: usize = table.batches().iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, records.len());
    let status = header.iter().position(|h| h == "status").unwrap();
    let statuses: std::collections::BTreeSet<&str> = records.iter().map(|r| &r[status]).collect();
    assert!(
        statuses.len() >= 3,
        "a sample of few statuses: {statuses:?}"
    );
    let batches = table.batches().iter();
    let rows = batches.flat_map(|batch| (0..batch.num_rows()).map(move |r| (batch, r)));
    for ((batch, r), record) in rows.zip(&records) {
        for (c, column) in batch.columns().iter().enumerate() {
            let cell = &record[c];
            let at = format!(
                "{} of line {}",
                header[c],
                record.position().unwrap().line()
            );
            if column.is_null(r) {
                assert_eq!(cell, "", "{at}");
                continue;
            }
            match column.data_type() {
                DataType::Utf8 => assert_eq!(column.as_string::<i32>().value(r), cell, "{at}"),
                DataType::Int64 => {
                    let value = column.as_primitive::<Int64Type>().value(r);
                    assert_eq!(value.to_string(), cell, "{at}");
                }
                DataType::Float64 => {
                    let value = column.as_primitive::<Float64Type>().value(r);
                    assert_eq!(Ok(value), cell.parse::<f64>(), "{at}");
                }
                DataType::Boolean => {
                    let value = column.as_boolean().value(r);
                    assert_eq!(value.to_string(), cell, "{at}");
                }
                other => panic!("{at}: a column of {other}"),
            }
        }
    }

    let in_memory = GradePlan {
        out: None,
        ..plan.clone()
    };
    let alone = rgrade::grade(&in_memory, &mut |_| {}).unwrap();
    assert_eq!(alone.per_query.unwrap().batches(), table.batches());
    let not_kept = GradePlan {
        keep_rows: false,
        ..in_memory
    };
    assert!(rgrade::grade(&not_kept, &mut |_| {})
        .unwrap()
        .per_query
        .is_none());
}
