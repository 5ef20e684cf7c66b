//! Input plumbing that reads no log format: where bytes come from, how
//! their compression is undone, how they are cut into newline-aligned
//! blocks and worked on in parallel, how a JSON line is parsed, and how
//! Parquet columns and Arrow tables are read. Labels and logs both read
//! through it. A block carries its input's format and a run's header line
//! as the logs' detection decided them (`crate::logs::detect`), for the
//! logs' readers: io only hands them on.
//!
//! - [`location`]: a path argument judged: local, or an object-storage URI;
//! - [`objects`]: object storage behind blocking calls and readers;
//! - [`inputs`]: one input (a file, an object, stdin, a table, lines
//!   handed over) and what reading it taught;
//! - [`decompress`]: an input opened, gzip or zstd undone, bytes hashed;
//! - [`blocks`]: a stream cut into blocks of whole lines;
//! - [`workers`]: the reader thread and the worker pool over those blocks;
//! - [`progress`]: how far the reading has come, for a front end to show;
//! - [`reread`]: lines read a second time, once their first reading is gone;
//! - [`json`]: simd-json with reused buffers;
//! - [`parquet`]: a Parquet footer and typed column cells;
//! - [`tables`]: Arrow tables and lines handed over in memory;
//! - [`guarded`]: third-party decoders' panics turned into input errors.

pub mod blocks;
pub mod decompress;
pub mod guarded;
pub mod inputs;
pub mod json;
pub mod location;
pub mod objects;
pub mod parquet;
pub mod progress;
pub mod reread;
pub mod tables;
pub mod workers;
