//! logs.parquet: the events of logs.jsonl as one Parquet row each
//! (docs/reference.md, "Parquet"), written by the Arrow project's writer in row
//! groups of [`ROW_GROUP_ROWS`] events, so readers can decode them in
//! parallel and the generator holds one row group at a time.

use std::io;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use rand_pcg::Pcg64;

use super::corpus::Corpus;
use super::logs::{final_latency, retrieve_latency, LogFormat, RUN};
use super::output::Output;
use super::queries::{QueryName, QuerySpec};
use super::ranking::{Hit, RankingModel};

/// Events per row group.
const ROW_GROUP_ROWS: usize = 8192;

/// The rows of the row group being filled, and the writer that encodes
/// each full one into a buffer the output then takes.
pub(super) struct ParquetLog {
    schema: SchemaRef,
    /// Encodes into a buffer, emptied into the output after each row
    /// group: the writer counts file offsets itself.
    writer: Option<ArrowWriter<Vec<u8>>>,
    rows: Rows,
}

/// One builder per column.
struct Rows {
    query_id: StringBuilder,
    stage: StringBuilder,
    run: StringBuilder,
    results: ListBuilder<StringBuilder>,
    latency_ms: Float64Builder,
    context_tokens: Int64Builder,
    len: usize,
}

impl ParquetLog {
    pub(super) fn new() -> Self {
        let results = Field::new_list("results", Field::new_list_field(DataType::Utf8, true), true);
        let schema = Arc::new(Schema::new(vec![
            Field::new("query_id", DataType::Utf8, false),
            Field::new("stage", DataType::Utf8, false),
            Field::new("run", DataType::Utf8, false),
            results,
            Field::new("latency_ms", DataType::Float64, true),
            Field::new("context_tokens", DataType::Int64, true),
        ]));
        ParquetLog {
            schema,
            writer: None,
            rows: Rows {
                query_id: StringBuilder::new(),
                stage: StringBuilder::new(),
                run: StringBuilder::new(),
                results: ListBuilder::new(StringBuilder::new()),
                latency_ms: Float64Builder::new(),
                context_tokens: Int64Builder::new(),
                len: 0,
            },
        }
    }

    /// Encode the rows held as one row group and hand its bytes on.
    fn write_row_group(&mut self, output: &mut Output) -> io::Result<()> {
        let rows = std::mem::replace(&mut self.rows.len, 0);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.rows.query_id.finish()),
            Arc::new(self.rows.stage.finish()),
            Arc::new(self.rows.run.finish()),
            Arc::new(self.rows.results.finish()),
            Arc::new(self.rows.latency_ms.finish()),
            Arc::new(self.rows.context_tokens.finish()),
        ];
        let batch = RecordBatch::try_new(self.schema.clone(), columns).map_err(io::Error::other)?;
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => {
                let properties = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                    .build();
                let writer =
                    ArrowWriter::try_new(Vec::new(), self.schema.clone(), Some(properties));
                self.writer.insert(writer.map_err(parquet_error)?)
            }
        };
        writer.write(&batch).map_err(parquet_error)?;
        writer.flush().map_err(parquet_error)?;
        let bytes = std::mem::take(writer.inner_mut());
        output.write_binary(&bytes, rows as u64)
    }
}

fn parquet_error(err: ParquetError) -> io::Error {
    io::Error::other(err)
}

impl Rows {
    fn push(
        &mut self,
        query: QueryName,
        stage: &str,
        hits: &[Hit],
        latency_tenths: u32,
        corpus: &Corpus,
    ) {
        let mut id = Vec::new();
        query.push_to(&mut id);
        self.query_id.append_value(String::from_utf8_lossy(&id));
        self.stage.append_value(stage);
        self.run.append_value(RUN);
        for hit in hits {
            self.results.values().append_value(corpus.id(hit.doc));
        }
        self.results.append(true);
        self.latency_ms
            .append_value(f64::from(latency_tenths) / 10.0);
        let context_tokens: u32 = hits.iter().map(|hit| corpus.tokens(hit.doc)).sum();
        self.context_tokens.append_value(i64::from(context_tokens));
        self.len += 1;
    }
}

impl LogFormat for ParquetLog {
    const FILE_NAME: &'static str = "logs.parquet";

    fn write_query(
        &mut self,
        output: &mut Output,
        query: QueryName,
        rng: &mut Pcg64,
        model: &mut RankingModel,
        spec: &QuerySpec,
    ) -> io::Result<()> {
        let corpus = model.corpus;
        let retrieved = model.retrieve(rng, spec);
        let results = retrieved.len();
        let retrieve_tenths = retrieve_latency(rng, results);
        self.rows
            .push(query, "retrieve", retrieved, retrieve_tenths, corpus);
        let reranked = model.rerank(rng, spec);
        let final_tenths = final_latency(rng, retrieve_tenths, results);
        self.rows
            .push(query, "final", reranked, final_tenths, corpus);
        if self.rows.len >= ROW_GROUP_ROWS {
            self.write_row_group(output)?;
        }
        Ok(())
    }

    fn finish(&mut self, output: &mut Output, _corpus: &Corpus) -> io::Result<()> {
        if self.rows.len > 0 || self.writer.is_none() {
            self.write_row_group(output)?;
        }
        if let Some(mut writer) = self.writer.take() {
            writer.finish().map_err(parquet_error)?;
            output.write_binary(writer.inner(), 0)?;
        }
        Ok(())
    }
}
