//! Where a one-file output goes: `--openmetrics FILE` and `rgrade index
//! -o KEY`. A regular file is replaced whole by renaming (through a link,
//! the file it names), so a reader never sees half of it; a stream (`-`,
//! this process's stdout, a FIFO, a character device, a socket) is written
//! into, never renamed over; and a path that holds a file of an rgrade
//! result (an output directory's files or lock, a file being written, a
//! compiled key, an input of the run) is refused before the run reads
//! anything, so no output of one run destroys another's. An object in
//! object storage is stored whole by one put, which a reader sees whole
//! or not at all, as the rename does.

use std::fs::{File, Metadata};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::bucket;
use super::kind::{is_result_file, ResultKind};
use super::staged::{self, identity, remove_abandoned, stage_alone};
use crate::base::failure::Setting;
use crate::base::schema::LOCK_FILE;
use crate::io::location::{Location, ObjectUri};
use crate::io::objects;
use crate::labels::compiled::{is_compiled, MAGIC};

/// The outputs written to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// `--openmetrics FILE`.
    OpenMetrics,
    /// `rgrade index -o KEY`, which may replace only a compiled key.
    CompiledKey,
}

impl Output {
    /// The option that names the path, for messages.
    fn option(self) -> String {
        match self {
            Output::OpenMetrics => Setting::Openmetrics.to_string(),
            Output::CompiledKey => format!("rgrade index {}", Setting::Out),
        }
    }
}

/// A path a one-file output is asked to go to, with what the run reads
/// and writes besides, which the path must not be.
#[derive(Debug, Clone)]
pub struct Destination<'a> {
    /// The path as given.
    pub path: &'a Path,
    /// What is written there.
    pub output: Output,
    /// The run's output directory (`-o DIR`), whose files it writes.
    pub out_dir: Option<&'a Path>,
    /// The run's inputs (files or directories).
    pub inputs: Vec<&'a Path>,
}

/// Where the bytes go, once the path is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// This process's standard output.
    Stdout,
    /// A FIFO, character device or socket, written into as it is.
    Stream(PathBuf),
    /// A regular file, there or not, replaced by renaming `name` in `dir`.
    File { dir: PathBuf, name: String },
    /// An object, there or not, replaced whole.
    Object(ObjectUri),
}

impl Destination<'_> {
    /// Refuse the path if writing there would destroy what it must not.
    ///
    /// # Errors
    /// The path is a directory, a block device, a link to nothing, a file
    /// of an rgrade result, or an input of the run.
    pub fn check(&self) -> Result<()> {
        self.target().map(drop)
    }

    /// Write the bytes `body` writes to the path, as [`Destination`] says;
    /// returns how many were written.
    ///
    /// # Errors
    /// As [`Destination::check`]; the bytes cannot be written or moved
    /// into place.
    pub fn write(&self, body: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<u64> {
        let path = self.path;
        let failed = || format!("{}: cannot write {}", path.display(), self.output.option());
        let target = self.target()?;
        let stream: Box<dyn Write> = match &target {
            Target::Stdout => Box::new(io::stdout().lock()),
            Target::Stream(stream) => open_stream(stream).with_context(failed)?,
            Target::File { dir, name } => return replace(dir, name, body),
            Target::Object(uri) => {
                let mut bytes = Vec::new();
                body(&mut bytes)?;
                let written = bytes.len() as u64;
                objects::put(uri, bytes.into(), false).with_context(failed)?;
                return Ok(written);
            }
        };
        let mut out = Counted::new(BufWriter::new(stream));
        match body(&mut out).and_then(|()| Ok(out.flush()?)) {
            // A reader of stdout that went away early (`| head`) wanted
            // no more, as with the tables.
            Err(err) if target == Target::Stdout && is_closed_pipe(&err) => Ok(out.bytes),
            written => written.with_context(failed).map(|()| out.bytes),
        }
    }

    /// Judge the path: `-` and this process's stdout are stdout, a stream
    /// is written into, a regular file (or a link to one: its target) is
    /// replaced unless it is rgrade's, and nothing else is touched (a URI
    /// never becomes a local file).
    fn target(&self) -> Result<Target> {
        let path = self.path;
        if path.as_os_str() == "-" {
            return Ok(Target::Stdout);
        }
        if let Location::Object(uri) = Location::parse(path)? {
            return self.object_target(uri);
        }
        let refuse = |what: &str| {
            anyhow::anyhow!(
                "{}: {what}; {} will not write there (name another file)",
                path.display(),
                self.output.option()
            )
        };
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                if path.symlink_metadata().is_ok() {
                    return Err(refuse("is a link to nothing"));
                }
                let (dir, name) = split(path)?;
                self.refuse_rgrade_file(&dir, &name)
                    .map_err(|what| refuse(&what))?;
                return file_target(dir, name);
            }
            Err(err) => {
                return Err(err).with_context(|| format!("{}: cannot read", path.display()))
            }
        };
        if stdout_identity().is_some_and(|stdout| stdout == identity(&meta)) {
            return Ok(Target::Stdout);
        }
        if is_stream(&meta) {
            return Ok(Target::Stream(path.to_path_buf()));
        }
        if meta.is_dir() {
            return Err(refuse("is a directory"));
        }
        if !meta.is_file() {
            return Err(refuse("is a device, not a stream or a regular file"));
        }
        if self.is_input(&meta) {
            return Err(refuse("is an input of this run"));
        }
        // Through a link, the file it names is replaced and the link kept.
        let real = path
            .canonicalize()
            .with_context(|| format!("{}: cannot resolve", path.display()))?;
        let (dir, name) = split(&real)?;
        self.refuse_rgrade_file(&dir, &name)
            .map_err(|what| refuse(&what))?;
        match (self.output, starts_as_key(&real)) {
            (Output::OpenMetrics, Some(true)) => Err(refuse("is a compiled answer key")),
            (Output::CompiledKey, Some(false)) => Err(refuse(
                "holds something other than a compiled answer key, which is all rgrade index replaces",
            )),
            _ => file_target(dir, name),
        }
    }

    /// Why `name` in `dir` is a file of an rgrade result, if it is one: a
    /// directory's lock, a file a run is writing, or a result's file in an
    /// output directory (one holding a lock or a result, or this run's).
    fn refuse_rgrade_file(&self, dir: &Path, name: &str) -> Result<(), String> {
        if name == LOCK_FILE {
            return Err("is the lock of an rgrade output directory".to_string());
        }
        if staged::is_temp_name(name) {
            return Err("is a file an rgrade run is writing".to_string());
        }
        let output_dir = dir.join(LOCK_FILE).exists()
            || ResultKind::of_dir(dir).is_some()
            || self.out_dir.is_some_and(|out| same_dir(dir, out));
        if is_result_file(name) && output_dir {
            return Err(format!(
                "is an output of the rgrade result in {}",
                dir.display()
            ));
        }
        Ok(())
    }

    /// Judge the object `uri` as [`Destination::target`] judges a file:
    /// not an input, not a file of a result's prefix, and a compiled key
    /// replaced only by one.
    fn object_target(&self, uri: ObjectUri) -> Result<Target> {
        let refuse = |what: &str| {
            anyhow::anyhow!(
                "{uri}: {what}; {} will not write there (name another object)",
                self.output.option()
            )
        };
        let same = |path: &Path| matches!(Location::parse(path), Ok(Location::Object(other)) if other == uri);
        if self.inputs.iter().any(|input| same(input)) {
            return Err(refuse("is an input of this run"));
        }
        let prefix = uri.parent();
        let out_dir = |path: &Path| matches!(Location::parse(path), Ok(Location::Object(out)) if out.same_folder(&prefix));
        if is_result_file(&uri.file_name())
            && (self.out_dir.is_some_and(out_dir) || bucket::holds_result(&prefix)?)
        {
            return Err(refuse(&format!(
                "is an output of the rgrade result under {prefix}"
            )));
        }
        let head = match objects::head(&uri)? {
            Some(found) if found.size > 0 => {
                let magic = objects::get_range(&uri, 0..found.size.min(MAGIC.len() as u64))?;
                Some(is_compiled(&magic))
            }
            _ => None,
        };
        match (self.output, head) {
            (Output::OpenMetrics, Some(true)) => Err(refuse("is a compiled answer key")),
            (Output::CompiledKey, Some(false)) => Err(refuse(
                "holds something other than a compiled answer key, which is all rgrade index replaces",
            )),
            _ => Ok(Target::Object(uri)),
        }
    }

    /// Whether `meta` is one of the run's inputs.
    fn is_input(&self, meta: &Metadata) -> bool {
        let ours = identity(meta);
        (self.inputs.iter())
            .any(|input| std::fs::metadata(input).is_ok_and(|m| identity(&m) == ours))
    }
}

/// `name` in `dir` as the file to replace, rid of the temporary file a
/// killed run left beside it (which no later run would otherwise take).
fn file_target(dir: PathBuf, name: String) -> Result<Target> {
    remove_abandoned(&dir, &name)?;
    Ok(Target::File { dir, name })
}

/// Write `name` in `dir` (created if missing) with `body`, under a
/// temporary name renamed over it once complete; returns the bytes written.
fn replace(dir: &Path, name: &str, body: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<u64> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let mut out = stage_alone(dir, name)?;
    body(&mut out)?;
    let written = staged::finish(out)?;
    let bytes = written.listed().bytes;
    staged::commit(vec![written])?;
    Ok(bytes)
}

/// `path`'s directory (`.` when it names none) and file name.
fn split(path: &Path) -> Result<(PathBuf, String)> {
    let name = (path.file_name().and_then(|n| n.to_str()))
        .with_context(|| format!("{}: not a file name to write to", path.display()))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Ok((dir.to_path_buf(), name.to_string()))
}

/// Whether `err` says the reader closed the pipe.
fn is_closed_pipe(err: &anyhow::Error) -> bool {
    (err.root_cause().downcast_ref::<io::Error>())
        .is_some_and(|err| err.kind() == io::ErrorKind::BrokenPipe)
}

/// Whether `a` and `b` are one directory: by their real paths where both
/// exist, else as absolute paths.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => match (std::path::absolute(a), std::path::absolute(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        },
    }
}

/// Whether the regular file at `path` is a compiled key, if it holds
/// anything (an empty file is none, and nothing else).
fn starts_as_key(path: &Path) -> Option<bool> {
    let mut head = Vec::with_capacity(MAGIC.len());
    let file = File::open(path).ok()?;
    file.take(MAGIC.len() as u64).read_to_end(&mut head).ok()?;
    (!head.is_empty()).then(|| is_compiled(&head))
}

/// Whether `meta` is a FIFO, a character device or a socket.
#[cfg(unix)]
fn is_stream(meta: &Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    kind.is_fifo() || kind.is_char_device() || kind.is_socket()
}

#[cfg(not(unix))]
fn is_stream(_: &Metadata) -> bool {
    false
}

/// The file this process's stdout is, to tell `/dev/stdout` (or any other
/// name of it) from a file of that name.
#[cfg(unix)]
fn stdout_identity() -> Option<(u64, u64)> {
    use std::os::fd::AsFd;
    let fd = io::stdout().as_fd().try_clone_to_owned().ok()?;
    File::from(fd).metadata().ok().map(|meta| identity(&meta))
}

#[cfg(not(unix))]
fn stdout_identity() -> Option<(u64, u64)> {
    None
}

/// Open the stream at `path` to write into: a socket is connected to, a
/// FIFO or a device opened as it is, never created nor truncated.
fn open_stream(path: &Path) -> io::Result<Box<dyn Write>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if std::fs::metadata(path)?.file_type().is_socket() {
            return Ok(Box::new(std::os::unix::net::UnixStream::connect(path)?));
        }
    }
    Ok(Box::new(File::options().write(true).open(path)?))
}

/// A writer that counts the bytes it passes on.
struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W> Counted<W> {
    fn new(inner: W) -> Self {
        Counted { inner, bytes: 0 }
    }
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
