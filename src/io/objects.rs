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
//! A failed request is retried a few times ([`RETRIES_VARIABLE`]), briefly:
//! an endpoint that cannot be reached fails the run within seconds, naming
//! the endpoint, instead of after the client's default three minutes.
//!
//! A streamed object is fetched ahead of its reader by a few chunks, so
//! the network and the parser overlap; Parquet is read by ranges
//! ([`RangeReader`] for the footer, [`FetchedRanges`] for the column chunks
//! of a row group, [`ReadAhead`] for those of the next row groups while a
//! worker decodes one).

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;
use futures_util::StreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::Path as Key;
use object_store::{
    BackoffConfig, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
};
use parquet::file::reader::{ChunkReader, Length};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

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

/// The environment variable that sets how many times a failed request is
/// retried (a whole number; [`DEFAULT_RETRIES`] when unset).
pub const RETRIES_VARIABLE: &str = "RGRADE_OBJECT_RETRIES";

/// Retries of a failed request by default: three attempts in all, as the
/// AWS SDKs' standard retry mode makes.
const DEFAULT_RETRIES: usize = 2;

/// How long a request's retries may go on: past it, the last failure is
/// the run's. The connection timeout (5 s, the client's default; each
/// cloud's `*_CONNECT_TIMEOUT` variable sets it) bounds each attempt's
/// connecting, so an endpoint that never answers fails the run in
/// seconds, not in the client's default three minutes.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);

/// The retries of a failed request: [`RETRIES_VARIABLE`]'s, with short
/// waits between them.
///
/// # Errors
/// The variable is set to something else than a whole number.
fn retry_config() -> Result<RetryConfig> {
    let retries = match std::env::var(RETRIES_VARIABLE) {
        Err(std::env::VarError::NotPresent) => DEFAULT_RETRIES,
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| anyhow!("{RETRIES_VARIABLE}={text}: not a whole number of retries"))?,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(anyhow!("{RETRIES_VARIABLE}: not a whole number of retries"))
        }
    };
    Ok(RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: retries,
        retry_timeout: RETRY_TIMEOUT,
    })
}

/// A bucket's store, with the endpoint its requests go to, as messages
/// name it.
#[derive(Clone)]
struct Store {
    store: Arc<dyn ObjectStore>,
    endpoint: String,
}

/// The store of `uri`'s bucket, built once per bucket.
fn store(uri: &ObjectUri) -> Result<Store> {
    static STORES: OnceLock<Mutex<HashMap<String, Store>>> = OnceLock::new();
    let root = uri.root();
    let mut stores = STORES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(store) = stores.get(&root) {
        return Ok(store.clone());
    }
    let retry = retry_config()?;
    let built: object_store::Result<(Arc<dyn ObjectStore>, String)> = match uri.url().scheme() {
        "s3" | "s3a" => {
            let builder = AmazonS3Builder::from_env()
                .with_url(root.as_str())
                .with_retry(retry);
            let endpoint =
                (builder.get_config_value(&AmazonS3ConfigKey::Endpoint)).unwrap_or_else(|| {
                    let region = builder.get_config_value(&AmazonS3ConfigKey::Region);
                    let region = region.unwrap_or_else(|| "us-east-1".to_string());
                    format!("https://s3.{region}.amazonaws.com")
                });
            builder.build().map(|s| (Arc::new(s) as _, endpoint))
        }
        "gs" => GoogleCloudStorageBuilder::from_env()
            .with_url(root.as_str())
            .with_retry(retry)
            .build()
            .map(|s| {
                (
                    Arc::new(s) as _,
                    "https://storage.googleapis.com".to_string(),
                )
            }),
        _ => {
            let builder = MicrosoftAzureBuilder::from_env()
                .with_url(root.as_str())
                .with_retry(retry);
            let endpoint =
                (builder.get_config_value(&AzureConfigKey::Endpoint)).unwrap_or_else(|| {
                    let account = builder.get_config_value(&AzureConfigKey::AccountName);
                    format!(
                        "https://{}.blob.core.windows.net",
                        account.unwrap_or_default()
                    )
                });
            builder.build().map(|s| (Arc::new(s) as _, endpoint))
        }
    };
    let (store, endpoint) =
        built.with_context(|| format!("{root}: cannot configure object storage"))?;
    let store = Store { store, endpoint };
    stores.insert(root, store.clone());
    Ok(store)
}

/// Run `work` against `uri`'s store and wait for it.
///
/// # Errors
/// As [`failed`] says.
fn call<T, F>(uri: &ObjectUri, work: impl FnOnce(Arc<dyn ObjectStore>, Key) -> F) -> Result<T>
where
    F: std::future::Future<Output = object_store::Result<T>>,
{
    let store = store(uri)?;
    runtime()?
        .block_on(work(store.store, Key::from(uri.key())))
        .map_err(|err| failed(uri, &store.endpoint, err))
}

/// The store's error `err` for a request about `uri` sent to `endpoint`,
/// as rgrade tells it: "no such object" for the store's long account of
/// a 404; an endpoint that cannot be reached named, with the retries made.
fn failed(uri: &ObjectUri, endpoint: &str, err: object_store::Error) -> anyhow::Error {
    match err {
        object_store::Error::NotFound { .. } => anyhow!(NoSuchObject),
        object_store::Error::AlreadyExists { .. } => anyhow!(AlreadyThere),
        other if cannot_connect(&other) => anyhow!(other).context(format!(
            "{uri}: cannot connect to object storage at {endpoint} (is that endpoint right, \
             and up?)"
        )),
        other => anyhow!(other).context(format!("{uri}: object storage failed")),
    }
}

/// Whether `err` is a failure to connect (refused, unreachable, timed
/// out connecting): among its causes, the client's connect error.
fn cannot_connect(err: &object_store::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(error) = cause {
        if (error.downcast_ref::<HttpError>())
            .is_some_and(|http| http.kind() == HttpErrorKind::Connect)
        {
            return true;
        }
        cause = error.source();
    }
    false
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
    /// Fetch `ranges` of the object at `uri`, of `size` bytes, together
    /// (ranges less than 1 MiB apart in one request, the requests at once).
    ///
    /// # Errors
    /// The object cannot be read.
    pub fn fetch(uri: &ObjectUri, size: u64, ranges: Vec<Range<u64>>) -> Result<Self> {
        Fetching::start(uri, ranges)?.wait(size)
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

/// A fetch of ranges under way on the runtime: their starts, and the task
/// that fetches their bytes.
#[derive(Debug)]
struct Fetching {
    starts: Vec<u64>,
    task: JoinHandle<Result<Vec<Bytes>>>,
}

impl Fetching {
    /// Start fetching `ranges` of the object at `uri`.
    ///
    /// # Errors
    /// The store cannot be configured, or the runtime started.
    fn start(uri: &ObjectUri, mut ranges: Vec<Range<u64>>) -> Result<Self> {
        ranges.sort_by_key(|range| range.start);
        let starts = ranges.iter().map(|range| range.start).collect();
        let store = store(uri)?;
        let uri = uri.clone();
        let task = runtime()?.spawn(async move {
            let key = Key::from(uri.key());
            (store.store.get_ranges(&key, &ranges).await)
                .map_err(|err| failed(&uri, &store.endpoint, err))
        });
        Ok(Fetching { starts, task })
    }

    /// Wait for the bytes, as ranges of an object of `size` bytes.
    ///
    /// # Errors
    /// The ranges could not be fetched.
    fn wait(self, size: u64) -> Result<FetchedRanges> {
        let fetched = runtime()?
            .block_on(self.task)
            .map_err(|err| anyhow!("the fetch of a row group failed: {err}"))??;
        Ok(FetchedRanges {
            size,
            ranges: self.starts.into_iter().zip(fetched).collect(),
        })
    }
}

/// Row groups to fetch ahead of the one a worker asks for: the network
/// fetches them while the workers decode, and at most this many row
/// groups' column chunks wait in memory for a worker.
const READ_AHEAD_GROUPS: usize = 2;

/// The row groups of a Parquet object read one at a time, each worker's
/// row group fetched with the next [`READ_AHEAD_GROUPS`] ones already
/// under way: when a worker asks for row group N, the column chunks of
/// N+1 and N+2 are requested if they are not yet, so that a row group is
/// most often in memory by the time a worker asks for it. Memory stays
/// bounded: the row groups held are those being decoded and at most
/// [`READ_AHEAD_GROUPS`] fetched ahead of the last one asked for.
#[derive(Debug)]
pub struct ReadAhead {
    uri: ObjectUri,
    size: u64,
    state: Mutex<Ahead>,
}

/// The fetches a [`ReadAhead`] started and no worker has taken yet.
#[derive(Debug, Default)]
struct Ahead {
    /// By row group.
    fetching: BTreeMap<usize, Fetching>,
    /// The first row group whose fetch has not been started.
    next: usize,
}

impl ReadAhead {
    /// The row groups of the object at `uri`, of `size` bytes.
    pub fn new(uri: ObjectUri, size: u64) -> Self {
        ReadAhead {
            uri,
            size,
            state: Mutex::new(Ahead::default()),
        }
    }

    /// The column chunks of row group `group` (of `groups`), which
    /// `wanted` gives the byte ranges of for any row group: fetched ahead
    /// if they were, else now; the next row groups' fetches are started
    /// before waiting for them.
    ///
    /// # Errors
    /// The column chunks cannot be fetched.
    pub fn take(
        &self,
        group: usize,
        groups: usize,
        wanted: impl Fn(usize) -> Vec<Range<u64>>,
    ) -> Result<FetchedRanges> {
        let own = {
            let mut ahead = self
                .state
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let own = match ahead.fetching.remove(&group) {
                Some(fetching) => fetching,
                None => {
                    // Not fetched ahead: the first row group asked for,
                    // or the file read again from here.
                    ahead.next = group + 1;
                    Fetching::start(&self.uri, wanted(group))?
                }
            };
            let last = (group + READ_AHEAD_GROUPS).min(groups.saturating_sub(1));
            for next in ahead.next.max(group + 1)..=last {
                if let Entry::Vacant(slot) = ahead.fetching.entry(next) {
                    slot.insert(Fetching::start(&self.uri, wanted(next))?);
                }
            }
            ahead.next = ahead.next.max(last + 1);
            own
        };
        own.wait(self.size)
    }
}

impl Drop for ReadAhead {
    /// Fetches no worker will take (the reading stopped early) stop.
    fn drop(&mut self) {
        let ahead = self
            .state
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for fetching in ahead.fetching.values() {
            fetching.task.abort();
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
