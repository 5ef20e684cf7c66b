//! Lines read a second time. What is decided after every block was
//! judged needs bytes that are gone by then; they are read again, and the
//! input is checked to be the one first read.

use std::io::{self, BufRead};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::io::decompress::Source;
use crate::io::inputs::{Input, InputStats};

/// Makes the process wait between two readings of the same inputs (or
/// between checking them and reading them) until the file it names
/// exists, having created that name with `.paused` added: how the tests
/// change an input at that very point.
const PAUSE_BETWEEN_READINGS: &str = "RGRADE_TEST_PAUSE_BETWEEN_READINGS";

/// Read an input again, handing `each` the given lines (sorted, 1-based)
/// without their line ends, then on to its end to check that its bytes
/// are those of the first reading, `first`. What is decided after every
/// block was judged (rejects of whole captures, the ids of pooled run
/// lines) needs bytes that are gone by then; this recovers them. Returns
/// false, reading nothing, for an input that cannot be read a second time
/// (stdin, a pipe).
///
/// # Errors
/// The input cannot be opened or read, or changed since it was first read.
pub fn read_lines_again(
    input: &Input,
    first: &InputStats,
    lines: &[u64],
    mut each: impl FnMut(u64, &[u8]),
) -> Result<bool> {
    let name = input.name();
    let path = match input {
        Input::File(path) => Some(path),
        // An object is read again as it was first read, streamed.
        Input::Object(_) => None,
        Input::Stdin | Input::Table(_) => return Ok(false),
        Input::Lines(handed, i) => {
            let mut wanted = lines.iter().copied().peekable();
            for (number, text) in handed.lines(*i) {
                if wanted.next_if_eq(&number).is_some() {
                    each(number, text);
                    while wanted.next_if_eq(&number).is_some() {}
                }
            }
            return Ok(true);
        }
    };
    // A file gone since is an error; a pipe simply cannot be read twice.
    if let Some(path) = path {
        let metadata =
            std::fs::metadata(path).with_context(|| format!("{name}: cannot read again"))?;
        if !metadata.is_file() {
            return Ok(false);
        }
    }
    let mut source = Source::open(input).with_context(|| format!("{name}: cannot open"))?;
    let mut wanted = lines.iter().copied().peekable();
    let mut line = Vec::new();
    let mut number = 0;
    let mut read = || -> io::Result<()> {
        while let Some(&next) = wanted.peek() {
            line.clear();
            if source.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            number += 1;
            if number == next {
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                each(number, text.strip_suffix(b"\r").unwrap_or(text));
                while wanted.next_if_eq(&number).is_some() {}
            }
        }
        io::copy(&mut source, &mut io::sink())?;
        Ok(())
    };
    read().with_context(|| format!("{name}: cannot read again"))?;
    ensure_unchanged(input, first, &source.digest().1)?;
    Ok(true)
}

/// Fail unless `hash`, of a second reading of `input`, is that of its
/// first reading: what is recovered from other bytes than those graded
/// would mislead.
///
/// # Errors
/// The input changed.
pub fn ensure_unchanged(input: &Input, first: &InputStats, hash: &str) -> Result<()> {
    unchanged(&input.name(), first, hash)
}

/// Fail unless a second reading of a run's inputs (`second`, each one's
/// name with what reading it taught) read the inputs of the first
/// (`first`), byte for byte: what pairs the two readings' figures (a
/// calibration, two keys' means of the same logs) would pair figures of
/// other logs.
///
/// # Errors
/// An input is among one reading's and not the other's, or changed.
pub fn ensure_read_alike(first: InputsRead<'_>, second: InputsRead<'_>) -> Result<()> {
    let ((first_names, first), (second_names, second)) = (first, second);
    if first_names != second_names {
        let in_both = |name: &&String| first_names.contains(name) && second_names.contains(name);
        let differs = (first_names.iter().chain(second_names)).find(|name| !in_both(name));
        bail!(
            "{}: among the logs on one reading and not the other, so they changed while they \
             were being graded; grade them again",
            differs.cloned().unwrap_or_else(|| first_names.join(", "))
        );
    }
    for ((name, first), second) in first_names.iter().zip(first).zip(second) {
        unchanged(name, first, &second.hash)?;
    }
    Ok(())
}

/// The inputs of one reading, by input index: each one's name, and what
/// reading it taught.
pub type InputsRead<'a> = (&'a [String], &'a [InputStats]);

/// [`ensure_unchanged`], of the input named `name`.
fn unchanged(name: &str, first: &InputStats, hash: &str) -> Result<()> {
    if hash != first.hash {
        bail!("{name}: changed while it was being graded; grade it again");
    }
    Ok(())
}

/// Wait here if the environment asks to ([`PAUSE_BETWEEN_READINGS`]; tests
/// only, unset this costs one look-up). Called where inputs read (or
/// checked) once are about to be read again.
///
/// # Panics
/// The file announcing the pause cannot be created: the test waiting for
/// it would wait forever.
pub fn pause_between_readings() {
    let Some(go) = std::env::var_os(PAUSE_BETWEEN_READINGS).map(PathBuf::from) else {
        return;
    };
    let mut paused = go.clone().into_os_string();
    paused.push(".paused");
    // Told once, it goes on without waiting at the next point.
    if go.exists() {
        return;
    }
    if let Err(err) = std::fs::write(&paused, b"") {
        panic!("{PAUSE_BETWEEN_READINGS}: cannot create {paused:?}: {err}");
    }
    while !go.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
}
