//! A compiled answer key (`rgrade index`): the label index as it lies in
//! memory, written to a file that grading reads back at the speed of the
//! disk instead of parsing and indexing the labels again. The labels of a
//! nightly job rarely change from one night to the next: compiled once,
//! they cost a read each night (docs/guide.md, "Compiled answer keys").
//!
//! The file is [`MAGIC`], one line of JSON (the [`Header`]: the version
//! that wrote it, the labels it was compiled from, the size of each
//! section), zeros up to a multiple of 8 bytes, the body (each section's
//! values as they lie in memory, little-endian, padded with zeros to a
//! multiple of 8 bytes), and last the xxh3-128 of every byte before it.
//! A key written by another version of rgrade, or any byte of which
//! does not hash to that last one, is refused: a damaged header would
//! otherwise name another task, or labels no file has. Every place its
//! values name is checked to lie inside the key as well, so that no file,
//! however made, can send a lookup out of bounds.
//!
//! A key records the labels file it was compiled from; when the file of
//! that name has changed since, the key is read all the same (it grades
//! the labels it holds, and says which) and [`CompiledKey`] says how the
//! file differs now, for a warning.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::ids::{IdRef, IdText};
use super::index::{CompiledKey, IndexParts, QueryTexts};
use super::index::{JudgedDoc, LabelIndex, LabeledQuery, LabelsSource};
use super::index::{Reviewers, NO_POOL};
use crate::base::failure::Setting;
use crate::base::options::{JoinBy, Reviewing};
use crate::base::schema::{ChangedLabels, SourceSummary};
use crate::io::decompress::Source;
use crate::io::inputs::Input;
use crate::io::location::Location;
use crate::io::objects;

/// How a compiled key begins: a line a person who opens it can read.
pub const MAGIC: &[u8] = b"rgrade compiled answer key\n";

/// The layout of the file; a key of another layout is refused (so is one
/// of another rgrade version, whose layout may differ without this
/// saying). Layout 3 hashes the whole file, not the body alone.
const LAYOUT: u32 = 3;

/// The bytes of the hash that ends a key: xxh3-128, little-endian.
const HASH_BYTES: usize = 16;

/// How many bytes of its first line a file may have wrong and still be
/// taken for a damaged key rather than labels of another format.
const MAGIC_DAMAGE: usize = 2;

/// The longest header read: its slice names are the only part that grows.
const MAX_HEADER: u64 = 64 << 20;

/// Who wrote a key: the first fields of its header, read before the rest
/// so that a key of another version is refused as such, whatever else
/// its header holds.
#[derive(Debug, Deserialize)]
struct Maker {
    rgrade: String,
    layout: u32,
}

/// What a compiled key says of itself, as its JSON line.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    /// The rgrade version that wrote it.
    rgrade: String,
    layout: u32,
    /// The labels it was compiled from: what summary.json reports, so a
    /// grading from the key and one from its labels compare as the same.
    labels: Origin,
    queries: u64,
    docs: u64,
    text_bytes: u64,
    /// Whether each query's question text is kept (`--join text`).
    query_texts: bool,
    /// The task, language, split and collection version names.
    slice_names: Vec<String>,
    /// The reviewers the labels name, and how their grades were combined
    /// into the key's.
    #[serde(default)]
    reviewers: Option<Reviewers>,
    /// Each distinct set of runs labels were pooled from, as indices into
    /// the slice names.
    pools: Vec<Vec<u32>>,
    /// The sources the labels name.
    sources: Vec<SourceSummary>,
}

/// The labels file a key was compiled from.
#[derive(Debug, Serialize, Deserialize)]
struct Origin {
    path: String,
    bytes: u64,
    hash: String,
    format: String,
}

/// A labeled query as the key stores it; `n_relevant`, which depends on
/// `--min-rel`, is counted again when the key is read.
#[repr(C)]
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout)]
struct StoredQuery {
    id: IdRef,
    task: u32,
    language: u32,
    split: u32,
    collection_version: u32,
    docs_start: u32,
    docs_end: u32,
    judged_end: u32,
    required: u32,
    pool: u32,
}

/// Zeros to pad a section with.
const PADDING: [u8; 8] = [0; 8];

/// The zeros that bring `len` bytes up to a multiple of 8.
fn padding(len: usize) -> &'static [u8] {
    &PADDING[..(8 - len % 8) % 8]
}

/// Whether `head`, the first bytes of a file, begin a compiled key: whole,
/// cut short, or with a damaged byte or two, which no labels of another
/// format begin with (it is then refused as a key, not read as qrels).
pub fn is_compiled(head: &[u8]) -> bool {
    let common = head.len().min(MAGIC.len());
    let wrong = (head.iter().zip(MAGIC)).filter(|(a, b)| a != b).count();
    common > 0 && wrong <= MAGIC_DAMAGE.min(common / 2)
}

impl LabelIndex {
    /// Write the index as a compiled key to `out`; it reads back as the
    /// same index, whatever `--min-rel` it is read with.
    ///
    /// # Errors
    /// `out` cannot be written.
    pub fn write_compiled(&self, out: &mut impl Write) -> Result<()> {
        if cfg!(target_endian = "big") {
            bail!("rgrade writes compiled keys on little-endian machines only");
        }
        let queries: Vec<StoredQuery> = (self.queries.iter())
            .map(|q| StoredQuery {
                id: q.id,
                task: q.task,
                language: q.language,
                split: q.split,
                collection_version: q.collection_version,
                docs_start: q.docs.start,
                docs_end: q.docs.end,
                judged_end: q.judged_end,
                required: u32::from(q.required),
                pool: q.pool,
            })
            .collect();
        let texts = self.query_texts.as_ref().map_or(&[][..], |t| &t.texts[..]);
        let sections: [&[u8]; 6] = [
            queries.as_bytes(),
            self.docs.as_bytes(),
            self.ideal_grades.as_bytes(),
            self.by_text.as_bytes(),
            self.text.0.as_bytes(),
            texts.as_bytes(),
        ];
        let header = Header {
            rgrade: env!("CARGO_PKG_VERSION").to_string(),
            layout: LAYOUT,
            labels: Origin {
                path: self.source.path.display().to_string(),
                bytes: self.source.bytes,
                hash: self.source.hash.clone(),
                format: self.source.format.to_string(),
            },
            queries: self.queries.len() as u64,
            docs: self.docs.len() as u64,
            text_bytes: self.text.0.len() as u64,
            query_texts: self.query_texts.is_some(),
            slice_names: self.slice_names.iter().map(|n| n.to_string()).collect(),
            reviewers: self.reviewers().cloned(),
            pools: self.pools.iter().map(|p| p.to_vec()).collect(),
            sources: self.sources().to_vec(),
        };
        let mut head = MAGIC.to_vec();
        serde_json::to_writer(&mut head, &header)?;
        head.push(b'\n');
        head.extend_from_slice(padding(head.len()));
        let mut hasher = Xxh3::new();
        let mut put = |bytes: &[u8]| {
            hasher.update(bytes);
            out.write_all(bytes)
        };
        put(&head)?;
        for section in sections {
            put(section)?;
            put(padding(section.len()))?;
        }
        out.write_all(&hasher.digest128().to_le_bytes())?;
        Ok(())
    }
}

/// Read the compiled key at `path`, counting as relevant the grades of at
/// least `min_rel` (its query table built on `pool`); joined by text, the
/// key must keep the question texts; with a reviewers policy, the key
/// must have been compiled with it. The labels file it names is checked
/// against it meanwhile.
///
/// # Errors
/// A file that is no complete key of this version of rgrade, whose bytes
/// do not hash to the hash it ends with, or whose values point outside
/// it; a key compiled without the texts or the reviewers policy asked for.
pub fn read(
    input: &Input,
    min_rel: i64,
    join: JoinBy,
    reviewing: Reviewing<'_>,
    pool: &rayon::ThreadPool,
) -> Result<LabelIndex> {
    let (raw, size) = open_key(input).context("cannot read labels")?;
    let mut reader = BufReader::with_capacity(1 << 20, raw);
    let mut magic = Vec::with_capacity(MAGIC.len());
    (&mut reader)
        .take(MAGIC.len() as u64)
        .read_to_end(&mut magic)
        .context("cannot read labels")?;
    if magic != MAGIC {
        if !is_compiled(&magic) {
            bail!(
                "no compiled key: it does not begin as `rgrade index` writes one (a key is read \
                 as written, never compressed)"
            );
        }
        bail!(damaged(if magic.len() < MAGIC.len() {
            "less than its first line (a truncated file?)"
        } else {
            "a first line that is not the one `rgrade index` writes"
        }));
    }
    let mut line = Vec::new();
    (&mut reader)
        .take(MAX_HEADER)
        .read_until(b'\n', &mut line)
        .context("cannot read labels")?;
    let header = read_header(&line)?;
    // Ids are addressed in u32, as when labels are read.
    if header.text_bytes > u64::from(u32::MAX) {
        bail!(damaged("more than 4 GiB of ids"));
    }
    if header.queries == 0 {
        bail!("a compiled key without a labeled query");
    }
    if join == JoinBy::Text && !header.query_texts {
        bail!(
            "this compiled key keeps no question texts, which {} matches captures \
             by: compile it with `rgrade index --join text`",
            Setting::Join.given("text")
        );
    }
    let Reviewing { policy, option } = reviewing;
    if let Some(policy) = policy {
        let compiled = header.reviewers.as_ref().map(|r| r.policy.as_ref());
        match compiled {
            None => bail!(
                "{}: no label of this compiled key names a reviewer",
                option.given(policy)
            ),
            Some(Some(same)) if same == policy => {}
            Some(other) => bail!(
                "this key was compiled {}: its grades are combined already; compile it again \
                 with `rgrade index --reviewers {policy}`",
                other.map_or(format!("without {}", Setting::Reviewers), |p| format!(
                    "with {}",
                    Setting::Reviewers.given(p)
                ))
            ),
        }
    }
    let head = MAGIC.len() + line.len();
    let mut skip = vec![0; padding(head).len()];
    reader
        .read_exact(&mut skip)
        .context("a truncated compiled key")?;

    // The whole size, from the header's counts, before anything is
    // allocated: a damaged count must not ask for terabytes.
    let queries = header.queries;
    let texts = if header.query_texts { queries } else { 0 };
    let section_bytes = [
        queries.checked_mul(size_of::<StoredQuery>() as u64),
        header.docs.checked_mul(size_of::<JudgedDoc>() as u64),
        header.docs.checked_mul(8),
        header.docs.checked_mul(4),
        Some(header.text_bytes),
        texts.checked_mul(size_of::<IdRef>() as u64),
    ];
    let body = (section_bytes.iter()).try_fold(0u64, |sum, bytes| {
        bytes.and_then(|b| sum.checked_add(b.checked_add(7)? / 8 * 8))
    });
    let whole = (body.and_then(|b| b.checked_add((head + skip.len() + HASH_BYTES) as u64)))
        .ok_or_else(|| damaged("sizes beyond any file"))?;
    if whole != size {
        bail!("a compiled key whose size is not what its header says (a truncated file?)");
    }

    // Every byte of the file, its first line and header included, hashes
    // to the hash it ends with.
    let mut hasher = Xxh3::new();
    for part in [MAGIC, &line, &skip] {
        hasher.update(part);
    }
    // The labels file the key names is hashed while the body is read.
    let (body, labels_changed) = std::thread::scope(|scope| {
        let changed = scope.spawn(|| changed_since(&header.labels));
        let body = read_body(&mut reader, &header, &mut hasher);
        let changed = changed
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (body, changed)
    });
    let body = body?;
    let mut stored_hash = [0; HASH_BYTES];
    reader
        .read_exact(&mut stored_hash)
        .context("a truncated compiled key")?;
    if hasher.digest128() != u128::from_le_bytes(stored_hash) {
        bail!("a compiled key whose bytes do not hash to the hash it ends with (a damaged file?)");
    }
    hasher.update(&stored_hash);
    let key = CompiledKey {
        path: input.path(),
        bytes: size,
        hash: format!("{:032x}", hasher.digest128()),
        labels_changed,
    };
    index_of(header, body, key, min_rel, join, pool)
}

/// The header of a key, from its JSON line `line`: the version that wrote
/// it first, so that a key of another version is refused as such.
///
/// # Errors
/// A key of another version or layout, a header that cannot be read.
fn read_header(line: &[u8]) -> Result<Header> {
    let unreadable = "a compiled key whose header cannot be read (a damaged file?)";
    let maker: Maker = serde_json::from_slice(line).context(unreadable)?;
    let version = env!("CARGO_PKG_VERSION");
    if maker.rgrade != version || maker.layout != LAYOUT || cfg!(target_endian = "big") {
        bail!(
            "a compiled key made by another version of rgrade ({}, layout {}; this is {version}, \
             layout {LAYOUT}): compile the labels again with `rgrade index`",
            maker.rgrade,
            maker.layout
        );
    }
    serde_json::from_slice(line).context(unreadable)
}

/// A key's arrays, as read, not yet checked.
struct Body {
    stored: Vec<StoredQuery>,
    docs: Vec<JudgedDoc>,
    ideal_grades: Vec<i64>,
    by_text: Vec<u32>,
    text: Vec<u8>,
    texts: Vec<IdRef>,
}

/// The body of a key whose header `header` was read from `reader`, each
/// byte added to `hasher`.
fn read_body(reader: &mut impl Read, header: &Header, hasher: &mut Xxh3) -> Result<Body> {
    let texts = if header.query_texts {
        header.queries
    } else {
        0
    };
    Ok(Body {
        stored: section(reader, header.queries, hasher)?,
        docs: section(reader, header.docs, hasher)?,
        ideal_grades: section(reader, header.docs, hasher)?,
        by_text: section(reader, header.docs, hasher)?,
        text: section(reader, header.text_bytes, hasher)?,
        texts: section(reader, texts, hasher)?,
    })
}

/// The index a key holds, its values checked to point inside it.
///
/// # Errors
/// A value that points outside the key, ids out of order or not UTF-8.
fn index_of(
    header: Header,
    body: Body,
    key: CompiledKey,
    min_rel: i64,
    join: JoinBy,
    pool: &rayon::ThreadPool,
) -> Result<LabelIndex> {
    let Body {
        stored,
        docs,
        ideal_grades,
        by_text,
        text,
        texts,
    } = body;
    let text = IdText(String::from_utf8(text).map_err(|_| damaged("ids that are not UTF-8"))?);
    let slice_names: Vec<Box<str>> = header.slice_names.into_iter().map(Into::into).collect();
    let pools: Vec<Box<[u32]>> = header.pools.into_iter().map(Into::into).collect();
    if !(pools.iter().flatten()).all(|&run| (run as usize) < slice_names.len()) {
        bail!(damaged("a pool that points outside it"));
    }
    let queries = labeled_queries(&stored, &text, &slice_names, &docs, pools.len())?;
    if !(docs.iter().all(|d| text.holds(d.id))
        && by_text.iter().all(|&d| (d as usize) < docs.len()))
    {
        bail!(damaged("a document that points outside it"));
    }
    let query_texts = match join {
        JoinBy::Text => Some(query_texts(texts, &text)?),
        JoinBy::Id => None,
    };
    let Origin {
        path: labels_path,
        bytes,
        hash,
        format,
    } = header.labels;
    let source = LabelsSource {
        path: PathBuf::from(labels_path),
        bytes,
        hash,
        format: format_name(&format)?,
        compiled: Some(key),
    };
    let parts = IndexParts {
        queries,
        docs,
        ideal_grades,
        by_text,
        query_texts,
        text,
        slice_names,
        reviewers: header.reviewers,
        pools,
        sources: header.sources,
    };
    Ok(pool.install(|| LabelIndex::assemble(parts, min_rel, source)))
}

/// A compiled key's bytes, streamed (a file, or an object never
/// downloaded whole first), and its size.
fn open_key(input: &Input) -> Result<(Box<dyn Read>, u64)> {
    match input {
        Input::File(path) => {
            let file = File::open(path)?;
            let size = file.metadata()?.len();
            Ok((Box::new(file), size))
        }
        Input::Object(uri) => {
            let head = objects::head(uri)?.context("no such object")?;
            Ok((Box::new(objects::open(uri)?), head.size))
        }
        other => bail!("{}: a compiled key is read from a file", other.name()),
    }
}

/// How the labels file a key names differs now from the one it was
/// compiled from, if it does; `None` too when there is no file to look at
/// (labels handed over in memory, or a key taken where its labels are not).
fn changed_since(origin: &Origin) -> Option<ChangedLabels> {
    if matches!(origin.format.as_str(), "arrow" | "memory") {
        return None;
    }
    let input = match Location::parse(Path::new(&origin.path)).ok()? {
        Location::Local(path) if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) => {
            Input::File(path)
        }
        Location::Local(_) => return None,
        Location::Object(uri) => Input::Object(uri),
    };
    let mut source = Source::open(&input).ok()?;
    let (bytes, hash) = source.digest_to_end().ok()?;
    (bytes != origin.bytes || hash != origin.hash).then_some(ChangedLabels { bytes, hash })
}

/// The next section of `reader`: `n` values and the padding after them,
/// added to `hasher`.
fn section<T: FromBytes + IntoBytes + Immutable + KnownLayout>(
    reader: &mut impl Read,
    n: u64,
    hasher: &mut Xxh3,
) -> Result<Vec<T>> {
    let n = usize::try_from(n).map_err(|_| damaged("a count beyond this machine"))?;
    let mut values = T::new_vec_zeroed(n).map_err(|_| damaged("a count beyond memory"))?;
    let bytes = values.as_mut_bytes();
    reader
        .read_exact(bytes)
        .context("a truncated compiled key")?;
    hasher.update(bytes);
    let mut pad = vec![0; padding(bytes.len()).len()];
    reader
        .read_exact(&mut pad)
        .context("a truncated compiled key")?;
    hasher.update(&pad);
    Ok(values)
}

/// The labeled queries of a key, each checked to point inside it, with
/// ids in strictly increasing byte order as an index keeps them.
fn labeled_queries(
    stored: &[StoredQuery],
    text: &IdText,
    slice_names: &[Box<str>],
    docs: &[JudgedDoc],
    pools: usize,
) -> Result<Vec<LabeledQuery>> {
    let slice = |n: u32| (n as usize) < slice_names.len();
    let mut queries: Vec<LabeledQuery> = Vec::with_capacity(stored.len());
    for q in stored {
        let inside = text.holds(q.id)
            && [q.task, q.language, q.split, q.collection_version]
                .into_iter()
                .all(slice)
            && q.docs_start <= q.docs_end
            && q.docs_end <= q.judged_end
            && (q.judged_end as usize) <= docs.len()
            && q.required <= 1
            && (q.pool == NO_POOL || (q.pool as usize) < pools);
        if !inside {
            bail!(damaged("a query that points outside it"));
        }
        if queries
            .last()
            .is_some_and(|p| text.get(p.id) >= text.get(q.id))
        {
            bail!(damaged("queries out of order"));
        }
        queries.push(LabeledQuery {
            id: q.id,
            task: q.task,
            language: q.language,
            split: q.split,
            collection_version: q.collection_version,
            required: q.required == 1,
            docs: q.docs_start..q.docs_end,
            judged_end: q.judged_end,
            n_relevant: 0,
            pool: q.pool,
        });
    }
    Ok(queries)
}

/// The question texts of a key's queries, found again by their text.
fn query_texts(texts: Vec<IdRef>, text: &IdText) -> Result<QueryTexts> {
    if !texts.iter().all(|&id| text.holds(id)) {
        bail!(damaged("a question text that points outside it"));
    }
    QueryTexts::new(texts, text).map_err(|_| damaged("a question text twice"))
}

/// The name of a labels format a key says it was compiled from.
fn format_name(format: &str) -> Result<&'static str> {
    ["jsonl", "csv", "parquet", "trec", "arrow", "memory"]
        .into_iter()
        .find(|&f| f == format)
        .ok_or_else(|| damaged("an unknown labels format"))
}

fn damaged(what: &str) -> anyhow::Error {
    anyhow::anyhow!("a compiled key with {what} (a damaged file?)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::options::LabelsFormat;
    use crate::labels::index::{id_hash, QueryIdx};
    use proptest::prelude::*;

    const LABELS: &str = concat!(
        r#"{"query_id": "q2", "relevant": {"a": 2, "b": 1, "c": 0, "d": -1}, "task": "howto", "language": "de", "query": "Wie?"}"#,
        "\n",
        r#"{"query_id": 7, "relevant": ["x", "ÿ"], "required": true, "split": "test", "query": "seven"}"#,
        "\n",
        r#"{"query_id": "q1", "relevant": [], "collection_version": "v2", "query": "none"}"#,
        "\n",
    );

    /// A scratch directory of this test's own.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rgrade-key-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn load(path: &Path, min_rel: i64, join: JoinBy) -> Result<LabelIndex> {
        let pool = crate::io::workers::pool(std::num::NonZeroUsize::new(2))?;
        LabelIndex::load(
            path,
            LabelsFormat::Auto,
            min_rel,
            join,
            Reviewing::by_reviewers(None),
            &pool,
        )
    }

    /// The labels, and the key compiled from them, in `dir`.
    fn compiled(dir: &Path) -> (PathBuf, PathBuf) {
        let labels = dir.join("labels.jsonl");
        std::fs::write(&labels, LABELS).unwrap();
        let mut key = Vec::new();
        let index = load(&labels, 1, JoinBy::Text).unwrap();
        index.write_compiled(&mut key).unwrap();
        let path = dir.join("key.rgx");
        std::fs::write(&path, key).unwrap();
        (labels, path)
    }

    /// Everything a grading asks of an index, for every query and doc.
    fn answers(index: &LabelIndex) -> Vec<String> {
        let mut said = vec![format!("{:?}", index.source.hash)];
        for q in 0..index.queries().len() as QueryIdx {
            let query = &index.queries()[q as usize];
            let judgments = index.judgments(q);
            said.push(format!(
                "{} {:?} task={} language={} split={:?} version={:?} required={} relevant={} ideal={:?} judged={:?}",
                index.query_id(q),
                index.find_query(index.query_id(q).as_bytes()),
                index.slice_name(query.task),
                index.slice_name(query.language),
                index.split_of(q).map(|s| index.slice_name(s)),
                index.collection_version(q),
                query.required,
                judgments.n_relevant,
                judgments.ideal_grades,
                index.judges_any(q),
            ));
            for doc in ["a", "b", "c", "d", "x", "ÿ", "zz"] {
                let found = index.find_doc(q, doc.as_bytes(), id_hash(doc.as_bytes()));
                let found = found.map(|d| (index.doc_id(d), index.grade(d), index.is_relevant(d)));
                let place = index.place_doc(q, doc.as_bytes());
                said.push(format!("  {doc}: {found:?} {place:?}"));
            }
        }
        for text in ["Wie?", " seven ", "none", "other"] {
            said.push(format!("{text}: {:?}", index.find_captured(text)));
        }
        said
    }

    #[test]
    fn a_key_answers_as_its_labels_at_any_min_rel() {
        let dir = scratch("same");
        let (labels, key) = compiled(&dir);
        for (min_rel, join) in [(1, JoinBy::Text), (2, JoinBy::Text), (1, JoinBy::Id)] {
            let from_labels = load(&labels, min_rel, join).unwrap();
            let from_key = load(&key, min_rel, join).unwrap();
            assert_eq!(
                answers(&from_key),
                answers(&from_labels),
                "{min_rel} {join:?}"
            );
            assert_eq!(from_key.source.format, "jsonl");
            let compiled = from_key.source.compiled.as_ref().unwrap();
            assert_eq!(compiled.path, key);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_or_foreign_key_is_refused() {
        let dir = scratch("refused");
        let (_, key) = compiled(&dir);
        let bytes = std::fs::read(&key).unwrap();
        let refused = |bytes: &[u8], join: JoinBy| {
            let path = dir.join("bad.rgx");
            std::fs::write(&path, bytes).unwrap();
            format!("{:#}", load(&path, 1, join).unwrap_err())
        };
        let cut = refused(&bytes[..bytes.len() - 8], JoinBy::Id);
        assert!(cut.contains("size is not what its header says"), "{cut}");
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let flipped = refused(&flipped, JoinBy::Id);
        assert!(
            flipped.contains("do not hash to the hash it ends with"),
            "{flipped}"
        );
        for (from, to) in [
            ("\"rgrade\":\"", "\"rgrade\":\"9"),
            ("\"layout\":3", "\"layout\":2"),
        ] {
            let foreign = refused(&in_header(&bytes, from, to), JoinBy::Id);
            assert!(
                foreign.contains("made by another version of rgrade")
                    && foreign.contains("compile the labels again with `rgrade index`"),
                "{foreign}"
            );
        }
        // Cut within its first line, it is still taken for a key, and
        // refused as one (not read as TREC qrels).
        for len in [1, 10, MAGIC.len() - 1] {
            let short = refused(&bytes[..len], JoinBy::Id);
            assert!(
                short.contains("a compiled key with less than its first line"),
                "{short}"
            );
        }

        // Compiled without the question texts, it cannot join by text.
        let pool = crate::io::workers::pool(std::num::NonZeroUsize::new(1)).unwrap();
        let index = LabelIndex::load(
            &key,
            LabelsFormat::Auto,
            1,
            JoinBy::Id,
            Reviewing::by_reviewers(None),
            &pool,
        )
        .unwrap();
        let mut by_id = Vec::new();
        index.write_compiled(&mut by_id).unwrap();
        let no_texts = refused(&by_id, JoinBy::Text);
        assert!(no_texts.contains("rgrade index --join text"), "{no_texts}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A key whose every bit is flipped in turn, one at a time: no flip,
    /// in the first line, the header, the body or the hash, is read;
    /// each is refused with an error that names the file.
    #[test]
    fn no_flipped_bit_is_read() {
        let dir = scratch("flips");
        let (_, key) = compiled(&dir);
        let bytes = std::fs::read(&key).unwrap();
        let path = dir.join("flipped.rgx");
        let pool = crate::io::workers::pool(std::num::NonZeroUsize::new(1)).unwrap();
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.clone();
                flipped[at] ^= 1 << bit;
                std::fs::write(&path, &flipped).unwrap();
                for join in [JoinBy::Id, JoinBy::Text] {
                    let read = LabelIndex::load(
                        &path,
                        LabelsFormat::Auto,
                        1,
                        join,
                        Reviewing::by_reviewers(None),
                        &pool,
                    );
                    match read {
                        Ok(index) => panic!("byte {at}, bit {bit}: read as {:?}", answers(&index)),
                        Err(err) => {
                            let err = format!("{err:#}");
                            assert!(
                                err.starts_with(&*path.to_string_lossy()),
                                "{at} {bit}: {err}"
                            );
                        }
                    }
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A key's labels file changed since: the key is read as it was
    /// compiled, and says how the file differs now.
    #[test]
    fn a_key_says_when_its_labels_changed() {
        let dir = scratch("changed");
        let (labels, key) = compiled(&dir);
        let changed = |index: &LabelIndex| index.source.compiled.clone().unwrap().labels_changed;
        let before = load(&key, 1, JoinBy::Id).unwrap();
        assert_eq!(changed(&before), None);
        let file_hash = format!(
            "{:032x}",
            xxhash_rust::xxh3::xxh3_128(&std::fs::read(&key).unwrap())
        );
        assert_eq!(before.source.compiled.as_ref().unwrap().hash, file_hash);

        // The same size, one grade changed.
        let edited = LABELS.replacen("\"a\": 2", "\"a\": 3", 1);
        std::fs::write(&labels, &edited).unwrap();
        let after = load(&key, 1, JoinBy::Id).unwrap();
        assert_eq!(answers(&after), answers(&before));
        let now = changed(&after).unwrap();
        assert_eq!(now.bytes, edited.len() as u64);
        assert_eq!(
            now.hash,
            format!("{:032x}", xxhash_rust::xxh3::xxh3_128(edited.as_bytes()))
        );
        assert_ne!(now.hash, after.source.hash);

        // Gone: nothing to compare with, nothing said.
        std::fs::remove_file(&labels).unwrap();
        assert_eq!(changed(&load(&key, 1, JoinBy::Id).unwrap()), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `bytes` with `from` replaced by `to` in its header line alone.
    fn in_header(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        let line = MAGIC.len()
            ..MAGIC.len()
                + bytes[MAGIC.len()..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .unwrap();
        let header = std::str::from_utf8(&bytes[line.clone()]).unwrap();
        assert!(header.contains(from), "{header}");
        let mut out = bytes[..line.start].to_vec();
        out.extend_from_slice(header.replacen(from, to, 1).as_bytes());
        out.extend_from_slice(&bytes[line.end..]);
        out
    }

    /// `bytes` with the hash they end with made to fit them again, so that
    /// the values' checks are what stands between them and a lookup.
    fn rehashed(bytes: &[u8]) -> Vec<u8> {
        let content = &bytes[..bytes.len() - HASH_BYTES];
        let mut out = content.to_vec();
        out.extend_from_slice(&xxhash_rust::xxh3::xxh3_128(content).to_le_bytes());
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Any bytes of the body, its hash made to fit, read as a key
        /// or refused, and a key read answers without a panic.
        #[test]
        fn no_body_makes_a_lookup_panic(
            changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)
        ) {
            let dir = scratch("prop");
            let (_, key) = compiled(&dir);
            let mut bytes = std::fs::read(&key).unwrap();
            let line_end = MAGIC.len() + bytes[MAGIC.len()..].iter().position(|&b| b == b'\n').unwrap() + 1;
            let body = line_end + padding(line_end).len()..bytes.len() - HASH_BYTES;
            for (at, value) in changes {
                bytes[body.start + at.index(body.len())] = value;
            }
            let path = dir.join("changed.rgx");
            std::fs::write(&path, rehashed(&bytes)).unwrap();
            for join in [JoinBy::Id, JoinBy::Text] {
                if let Ok(index) = load(&path, 1, join) {
                    answers(&index);
                }
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
