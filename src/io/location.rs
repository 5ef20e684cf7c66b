//! Where a path argument points: a local path, or an object (or a prefix of
//! objects) in object storage named by a URI. Every path rgrade reads or
//! writes is judged here first, so that a URI is never taken for a local
//! file name: `-o s3://bucket/night` must not make a folder `./s3:`, and
//! `ftp://host/logs` must not be read as a missing file.
//!
//! A URI is shown (in messages and outputs) without what may be secret in
//! it: user info (`s3://key:secret@bucket/…`) and the query string (a
//! presigned URL's signature). Credentials come from the environment, as
//! each cloud's own tools read them (see [`crate::io::objects`]).

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use url::Url;

/// The URI schemes rgrade reads and writes, as the `object_store` crate
/// names the three clouds: Amazon S3 (and S3-compatible servers), Google
/// Cloud Storage, Azure Blob Storage (and Data Lake Gen2).
pub const SUPPORTED_SCHEMES: [&str; 6] = ["s3", "s3a", "gs", "az", "abfs", "abfss"];

/// A path argument, judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file or directory on this machine (or standard input, `-`).
    Local(PathBuf),
    /// An object, or a prefix of objects, in object storage.
    Object(ObjectUri),
}

impl Location {
    /// Judge `path`: a URI of a supported scheme is an object, a path
    /// without a scheme is local.
    ///
    /// # Errors
    /// `path` opens with a scheme (`name://`) rgrade does not read, or is
    /// a URI without a bucket.
    pub fn parse(path: &Path) -> Result<Self> {
        let Some(text) = path.to_str().filter(|text| scheme_of(text).is_some()) else {
            return Ok(Location::Local(path.to_path_buf()));
        };
        Ok(Location::Object(ObjectUri::parse(text)?))
    }

    /// The local path; an error naming `what` for an object URI, where
    /// rgrade does not read or write that yet.
    ///
    /// # Errors
    /// `path` is an object URI, or of a scheme rgrade does not support.
    pub fn local_only(path: &Path, what: &str) -> Result<PathBuf> {
        match Location::parse(path)? {
            Location::Local(path) => Ok(path),
            Location::Object(uri) => {
                bail!("{uri}: {what} cannot be in object storage; give a local path")
            }
        }
    }
}

/// The scheme `text` opens with (`s3` of `s3://…`), if it is a URI: a
/// letter, then letters, digits, `+`, `-` or `.`, then `://`.
fn scheme_of(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let rest_fits = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (first.is_ascii_alphabetic() && rest_fits).then_some(scheme)
}

/// An object-storage URI: `s3://bucket/key`, `gs://bucket/prefix/`,
/// `az://container/key`. What it shows is redacted (no user info, no
/// query string, no fragment); the object store is built from the
/// redacted URI too, so a secret written into it is never sent anywhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectUri {
    url: Url,
}

impl ObjectUri {
    /// Parse `text`, a URI of one of the [`SUPPORTED_SCHEMES`].
    ///
    /// # Errors
    /// Another scheme (named, with the supported ones), or no bucket.
    pub fn parse(text: &str) -> Result<Self> {
        let scheme = scheme_of(text).unwrap_or_default().to_ascii_lowercase();
        let shown = redact(text);
        if !SUPPORTED_SCHEMES.contains(&scheme.as_str()) {
            bail!(
                "{shown}: rgrade does not read or write {scheme}:// paths; it reads local \
                 paths and object storage ({})",
                SUPPORTED_SCHEMES.map(|s| format!("{s}://")).join(", ")
            );
        }
        let mut url = match Url::parse(text) {
            Ok(url) => url,
            Err(err) => bail!("{shown}: not a valid URI: {err}"),
        };
        if url.host_str().is_none_or(str::is_empty) {
            bail!("{shown}: names no bucket (write {scheme}://BUCKET/PATH)");
        }
        // Azure Data Lake's URIs name the container as the user
        // (`abfss://container@account.dfs.core.windows.net/…`): no secret.
        // Both setters are infallible for a URL with a host, as checked.
        if !scheme.starts_with("abfs") {
            let _ = url.set_username("");
        }
        let _ = url.set_password(None);
        url.set_query(None);
        url.set_fragment(None);
        Ok(ObjectUri { url })
    }

    /// The URI, redacted.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The store's root: `scheme://bucket`.
    pub fn root(&self) -> String {
        let user = match self.url.username() {
            "" => String::new(),
            container => format!("{container}@"),
        };
        let host = self.url.host_str().unwrap_or_default();
        format!("{}://{user}{host}", self.url.scheme())
    }

    /// The key (or prefix) inside the bucket, without a leading `/`.
    pub fn key(&self) -> String {
        let path = self.url.path().trim_start_matches('/');
        // Keys are stored as written, not percent-encoded.
        percent_decoded(path)
    }

    /// The URI of `key` in the same bucket.
    pub fn with_key(&self, key: &str) -> ObjectUri {
        let mut url = self.url.clone();
        url.set_path(key);
        ObjectUri { url }
    }

    /// The prefix holding the object: its key without the last segment.
    pub fn parent(&self) -> ObjectUri {
        let key = self.key();
        let folder = key
            .trim_end_matches('/')
            .rsplit_once('/')
            .map_or("", |(folder, _)| folder);
        self.with_key(folder)
    }

    /// Whether `other` names the same folder (a trailing `/` aside).
    pub fn same_folder(&self, other: &ObjectUri) -> bool {
        let folder = |uri: &ObjectUri| (uri.root(), uri.key().trim_end_matches('/').to_string());
        folder(self) == folder(other)
    }

    /// The last segment of the key: the object's file name.
    pub fn file_name(&self) -> String {
        let key = self.key();
        key.rsplit('/').next().unwrap_or_default().to_string()
    }
}

impl fmt::Display for ObjectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.root(), self.url.path())
    }
}

/// `text` as it may be shown: a URI's user info, query string and
/// fragment left out, whether or not it parses.
pub fn redact(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_string();
    };
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit('@').next().unwrap_or_default();
    format!("{scheme}://{host}{path}")
}

/// `path` as it may be shown: [`redact`]ed if it is a URI.
pub fn shown(path: &Path) -> String {
    redact(&path.to_string_lossy())
}

/// The file `name` in the directory (or prefix) `dir`, as it may be
/// shown: a URI's query string is not part of its folder.
pub fn shown_in(dir: &Path, name: &str) -> String {
    match Location::parse(dir) {
        Ok(Location::Object(uri)) => format!("{}/{name}", uri.to_string().trim_end_matches('/')),
        _ => dir.join(name).display().to_string(),
    }
}

/// A command line as outputs record it: each argument [`redact`]ed, so a
/// URI typed with a secret in it is recorded without.
pub fn redact_command(command: &[String]) -> Vec<String> {
    command.iter().map(|arg| redact(arg)).collect()
}

/// `text` with its `%XX` escapes undone (as the URL parser wrote them).
pub fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
        match escape {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Location> {
        Location::parse(Path::new(text))
    }

    #[test]
    fn paths_without_a_scheme_are_local() {
        for text in [
            "logs/a.jsonl",
            "-",
            "/tmp/x",
            "s3:/bucket/x",
            "C:\\logs",
            "a://",
        ] {
            let local = matches!(parse(text), Ok(Location::Local(_)));
            assert_eq!(local, text != "a://", "{text}");
        }
    }

    #[test]
    fn supported_schemes_are_objects_with_bucket_and_key() {
        let Location::Object(uri) =
            parse("s3://night-bucket/dt=2026-12-07/part 1.parquet").unwrap()
        else {
            panic!("not an object");
        };
        assert_eq!(uri.root(), "s3://night-bucket");
        assert_eq!(uri.key(), "dt=2026-12-07/part 1.parquet");
        assert_eq!(uri.file_name(), "part 1.parquet");
        for text in [
            "gs://b/k",
            "az://c/k",
            "abfss://c@acct.dfs.core.windows.net/k",
            "S3://b/k",
        ] {
            assert!(matches!(parse(text), Ok(Location::Object(_))), "{text}");
        }
    }

    #[test]
    fn other_schemes_are_refused_naming_the_scheme() {
        for text in [
            "ftp://host/logs",
            "hdfs://nn/logs",
            "file:///tmp/x",
            "https://h/k",
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains("does not read or write"), "{err}");
            assert!(err.contains(text.split_once(':').unwrap().0), "{err}");
        }
        let err = parse("s3:///key").unwrap_err().to_string();
        assert!(err.contains("names no bucket"), "{err}");
    }

    #[test]
    fn secrets_are_never_shown() {
        let text = "s3://AKIDEXAMPLE:wJalrXUtnFEMI@bucket/logs/a.jsonl?X-Amz-Signature=abc123#f";
        let Location::Object(uri) = parse(text).unwrap() else {
            panic!("not an object");
        };
        for shown in [uri.to_string(), uri.url().to_string(), redact(text)] {
            assert!(
                !shown.contains("AKID") && !shown.contains("wJalr"),
                "{shown}"
            );
            assert!(
                !shown.contains("Signature") && !shown.contains("abc123"),
                "{shown}"
            );
            assert!(shown.contains("bucket/logs/a.jsonl"), "{shown}");
        }
        let typed = [
            "grade".to_string(),
            format!("--labels={text}"),
            "-o".to_string(),
        ];
        let recorded = redact_command(&typed);
        assert_eq!(recorded[1], "--labels=s3://bucket/logs/a.jsonl");
        assert_eq!((&recorded[0], &recorded[2]), (&typed[0], &typed[2]));
        let err = parse("ftp://user:hunter2@host/x?sig=s3cret")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("hunter2") && !err.contains("s3cret"), "{err}");
        assert!(err.contains("ftp://host/x"), "{err}");
    }

    #[test]
    fn local_only_refuses_objects() {
        let err = Location::local_only(Path::new("s3://b/night"), "an output directory")
            .unwrap_err()
            .to_string();
        assert!(err.contains("s3://b/night: an output directory"), "{err}");
        assert!(Location::local_only(Path::new("night"), "x").is_ok());
    }
}
