//! Object storage behind a blocking interface. rgrade reads on threads of
//! its own (a reader thread, rayon's workers); the `object_store` crate is
//! asynchronous. This module owns the one tokio runtime its requests run
//! on, and hands the rest of the library plain calls and [`Read`]ers.
//!
//! Each store (one per bucket) is configured from the environment as the
//! cloud's own tools are: `AWS_*` for S3 (`AWS_ENDPOINT_URL` and
//! `AWS_ALLOW_HTTP` for an S3-compatible server), `GOOGLE_*` for Cloud
//! Storage, `AZURE_*` for Azure (as `object_store`'s `from_env` builders
//! read them).
//!
//! A streamed object is fetched ahead of its reader by a few chunks, so
//! the network and the parser overlap; Parquet is read by ranges
//! ([`RangeReader`] for the footer, [`FetchedRanges`] for the column chunks
//! of a row group).

use std::collections::HashMap;
use std::io::{self, Read};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use parquet::file::reader::{ChunkReader, Length};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use crate::io::location::ObjectUri;

/// Chunks of a streamed object fetched ahead of its reader.
const READ_AHEAD_CHUNKS: usize = 16;

/// The runtime every request runs on: two threads drive the connections
/// while rgrade's own threads wait for what they asked.
fn runtime() -> Result<&'static Runtime> {
    static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();
    let built = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("rgrade-objects")
            .enable_all()
            .build()
            .map_err(|err| err.to_string())
    });
    built
        .as_ref()
        .map_err(|err| anyhow!("cannot start the object-storage client: {err}"))
}

/// The store of `uri`'s bucket, built once per bucket.
fn store(uri: &ObjectUri) -> Result<Arc<dyn ObjectStore>> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    let root = uri.root();
    let mut stores = STORES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(store) = stores.get(&root) {
        return Ok(Arc::clone(store));
    }
    let built: object_store::Result<Arc<dyn ObjectStore>> = match uri.url().scheme() {
        "s3" | "s3a" => AmazonS3Builder::from_env()
            .with_url(root.as_str())
            .build()
            .map(|s| Arc::new(s) as _),
        "gs" => GoogleCloudStorageBuilder::from_env()
            .with_url(root.as_str())
            .build()
            .map(|s| Arc::new(s) as _),
        _ => MicrosoftAzureBuilder::from_env()
            .with_url(root.as_str())
            .build()
            .map(|s| Arc::new(s) as _),
    };
    let store = built.with_context(|| format!("{root}: cannot configure object storage"))?;
    stores.insert(root, Arc::clone(&store));
    Ok(store)
}

/// Run `work` against `uri`'s store and wait for it.
///
/// # Errors
/// The store's error; "no such object" for the store's long account of
/// a 404.
fn call<T, F>(uri: &ObjectUri, work: impl FnOnce(Arc<dyn ObjectStore>, Key) -> F) -> Result<T>
where
    F: std::future::Future<Output = object_store::Result<T>>,
{
    let store = store(uri)?;
    runtime()?
        .block_on(work(store, Key::from(uri.key())))
        .map_err(|err| match err {
            object_store::Error::NotFound { .. } => anyhow!(NoSuchObject),
            object_store::Error::AlreadyExists { .. } => anyhow!(AlreadyThere),
            other => anyhow!(other).context(format!("{uri}: object storage failed")),
        })
}

/// A conditional put found an object already at its key.
#[derive(Debug)]
pub struct AlreadyThere;

impl std::fmt::Display for AlreadyThere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object is already there")
    }
}

impl std::error::Error for AlreadyThere {}

/// The store found no object at the key asked.
#[derive(Debug)]
struct NoSuchObject;

impl std::fmt::Display for NoSuchObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no such object")
    }
}

impl std::error::Error for NoSuchObject {}

/// What the store says of an object.
#[derive(Debug, Clone)]
pub struct Head {
    /// Its size in bytes.
    pub size: u64,
    /// Its version as the store names it (an ETag), if it gives one.
    pub version: Option<String>,
}

/// The object at `uri`; `None` if there is none (it may be a prefix).
///
/// # Errors
/// The store cannot be reached or refuses the request.
pub fn head(uri: &ObjectUri) -> Result<Option<Head>> {
    let found = call(uri, |store, key| async move { store.head(&key).await });
    match found {
        Ok(meta) => Ok(Some(Head {
            size: meta.size,
            version: meta.e_tag.or(meta.version),
        })),
        Err(err) if is_not_found(&err) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Whether `err` is the store's "no such object".
fn is_not_found(err: &anyhow::Error) -> bool {
    err.is::<NoSuchObject>()
}

/// Every object under the prefix `uri` (as a folder: `uri/…`), sorted by
/// key, with its size.
///
/// # Errors
/// The store cannot be reached or refuses the listing.
pub fn list(uri: &ObjectUri) -> Result<Vec<(ObjectUri, u64)>> {
    let listed = call(uri, |store, key| async move {
        let prefix = (!key.as_ref().is_empty()).then_some(key);
        let mut stream = store.list(prefix.as_ref());
        let mut found = Vec::new();
        while let Some(meta) = stream.next().await {
            let meta = meta?;
            found.push((meta.location.to_string(), meta.size));
        }
        Ok(found)
    })?;
    let mut objects: Vec<(ObjectUri, u64)> = (listed.into_iter())
        .map(|(key, size)| (uri.with_key(&key), size))
        .collect();
    objects.sort_by_key(|(object, _)| object.key());
    Ok(objects)
}

/// The whole object at `uri`; `None` if there is none.
///
/// # Errors
/// The store cannot be reached or the object read.
pub fn get(uri: &ObjectUri) -> Result<Option<Bytes>> {
    let found = call(uri, |store, key| async move {
        store.get(&key).await?.bytes().await
    });
    match found {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if is_not_found(&err) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Store `bytes` at `uri`, whole: a reader sees the object before or
/// after, never part of it. With `only_if_absent`, the put fails with
/// [`AlreadyThere`] when an object is at `uri` (a conditional put, which
/// two writers cannot both win).
///
/// # Errors
/// The store cannot be reached or refuses the object.
pub fn put(uri: &ObjectUri, bytes: Bytes, only_if_absent: bool) -> Result<()> {
    let mode = if only_if_absent {
        PutMode::Create
    } else {
        PutMode::Overwrite
    };
    call(uri, |store, key| async move {
        let options = PutOptions {
            mode,
            ..PutOptions::default()
        };
        store.put_opts(&key, PutPayload::from(bytes), options).await
    })
    .map(drop)
}

/// Remove the object at `uri`, if there is one.
///
/// # Errors
/// The store cannot be reached or refuses.
pub fn delete(uri: &ObjectUri) -> Result<()> {
    match call(uri, |store, key| async move { store.delete(&key).await }) {
        Err(err) if !is_not_found(&err) => Err(err),
        _ => Ok(()),
    }
}

/// The bytes `range` of the object at `uri`.
///
/// # Errors
/// The object cannot be read.
pub fn get_range(uri: &ObjectUri, range: Range<u64>) -> Result<Bytes> {
    call(uri, |store, key| async move {
        store.get_range(&key, range).await
    })
}

/// The bytes of each of `ranges` of the object at `uri`, fetched together
/// (nearby ranges in one request).
///
/// # Errors
/// The object cannot be read.
pub fn get_ranges(uri: &ObjectUri, ranges: Vec<Range<u64>>) -> Result<Vec<Bytes>> {
    call(uri, |store, key| async move {
        store.get_ranges(&key, &ranges).await
    })
}

/// The object at `uri`, read front to back as it arrives.
///
/// # Errors
/// The object cannot be found or its reading started.
pub fn open(uri: &ObjectUri) -> Result<ObjectReader> {
    let result = call(uri, |store, key| async move { store.get(&key).await })?;
    let (send, chunks) = mpsc::channel(READ_AHEAD_CHUNKS);
    runtime()?.spawn(async move {
        let mut stream = result.into_stream();
        while let Some(chunk) = stream.next().await {
            let failed = chunk.is_err();
            if send.send(chunk).await.is_err() || failed {
                break;
            }
        }
    });
    Ok(ObjectReader {
        chunks,
        chunk: Bytes::new(),
    })
}

/// An object's bytes in order, fetched ahead by the runtime.
pub struct ObjectReader {
    chunks: mpsc::Receiver<object_store::Result<Bytes>>,
    chunk: Bytes,
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.chunks.blocking_recv() {
                None => return Ok(0),
                Some(Ok(chunk)) => self.chunk = chunk,
                Some(Err(err)) => return Err(io::Error::other(err)),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk = self.chunk.slice(n..);
        Ok(n)
    }
}

/// An object read by ranges, as Parquet reads a file: for the footer,
/// which takes a request or two at the end of the object.
#[derive(Debug, Clone)]
pub struct RangeReader {
    uri: ObjectUri,
    size: u64,
}

impl RangeReader {
    /// The object at `uri`, of `size` bytes.
    pub fn new(uri: ObjectUri, size: u64) -> Self {
        RangeReader { uri, size }
    }
}

impl Length for RangeReader {
    fn len(&self) -> u64 {
        self.size
    }
}

impl ChunkReader for RangeReader {
    type T = io::Cursor<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(io::Cursor::new(self.get_bytes(
            start,
            self.size.saturating_sub(start) as usize,
        )?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        get_range(&self.uri, start..start.saturating_add(length as u64))
            .map_err(|err| parquet::errors::ParquetError::External(err.into()))
    }
}

/// Ranges of an object fetched in advance (a row group's column chunks),
/// read as a Parquet file whose other bytes are never asked for.
#[derive(Debug, Clone)]
pub struct FetchedRanges {
    size: u64,
    /// Each range's start and bytes, sorted by start.
    ranges: Vec<(u64, Bytes)>,
}

impl FetchedRanges {
    /// Fetch `ranges` of the object at `uri`, of `size` bytes.
    ///
    /// # Errors
    /// The object cannot be read.
    pub fn fetch(uri: &ObjectUri, size: u64, mut ranges: Vec<Range<u64>>) -> Result<Self> {
        ranges.sort_by_key(|range| range.start);
        let starts: Vec<u64> = ranges.iter().map(|range| range.start).collect();
        let fetched = get_ranges(uri, ranges)?;
        Ok(FetchedRanges {
            size,
            ranges: starts.into_iter().zip(fetched).collect(),
        })
    }

    /// The fetched bytes from `start` on, to the end of the range that
    /// holds `start`.
    fn from(&self, start: u64) -> parquet::errors::Result<Bytes> {
        let i = self.ranges.partition_point(|(first, _)| *first <= start);
        let held = i.checked_sub(1).map(|i| &self.ranges[i]);
        match held {
            Some((first, bytes)) if start - first <= bytes.len() as u64 => {
                Ok(bytes.slice((start - first) as usize..))
            }
            _ => Err(parquet::errors::ParquetError::General(format!(
                "byte {start} was not fetched"
            ))),
        }
    }
}

impl Length for FetchedRanges {
    fn len(&self) -> u64 {
        self.size
    }
}

impl ChunkReader for FetchedRanges {
    type T = io::Cursor<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(io::Cursor::new(self.from(start)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let bytes = self.from(start)?;
        if bytes.len() < length {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "{length} bytes at {start} were not fetched"
            )));
        }
        Ok(bytes.slice(..length))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetched_ranges_serve_only_what_was_fetched() {
        let ranges = FetchedRanges {
            size: 100,
            ranges: vec![
                (10, Bytes::from_static(b"abcdef")),
                (50, Bytes::from_static(b"xyz")),
            ],
        };
        assert_eq!(&ranges.get_bytes(12, 3).unwrap()[..], b"cde");
        assert_eq!(&ranges.get_bytes(50, 3).unwrap()[..], b"xyz");
        let mut rest = Vec::new();
        ranges.get_read(13).unwrap().read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"def");
        assert!(ranges.get_bytes(14, 3).is_err());
        assert!(ranges.get_bytes(5, 1).is_err());
        assert!(ranges.get_bytes(30, 1).is_err());
        assert_eq!(ranges.len(), 100);
    }
}
