//! JSON dict labels: the whole file one JSON object of query id to an
//! object of doc id to grade, `{"q1": {"d1": 1, "d2": 0}}`, as ranx's
//! `Qrels.save` and pytrec_eval's users write qrels. A query keyed twice
//! is found afterwards, when the index is built, as in JSONL.
//!
//! The object is read as a stream (serde_json), never held whole. A file
//! may be one line or pretty-printed: each query and judgment is given the
//! line its key is on, counted from the newlines read before it, so that
//! every message names a line as the other formats' do; a message about
//! the JSON itself names a column too, since a dict is often one line.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::Read;
use std::rc::Rc;

use anyhow::anyhow;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::build::{whole_grade, Builder, LineError, NOT_NAMED};
use crate::base::whole::whole_float;

/// Read the JSON dict labels of `source` into `builder`.
///
/// # Errors
/// Text that is no JSON object of objects of whole-number grades, or
/// anything after the object, named by line and column.
pub(super) fn read_dict(source: impl Read, builder: &mut Builder) -> Result<(), LineError> {
    let newlines = Rc::new(Cell::new(0));
    let counted = CountedLines {
        inner: source,
        newlines: Rc::clone(&newlines),
    };
    let mut json = serde_json::Deserializer::from_reader(counted);
    let failed = RefCell::new(None);
    let queries = Queries {
        builder,
        newlines: &newlines,
        failed: &failed,
    };
    queries.deserialize(&mut json).map_err(|err| {
        failed
            .take()
            .unwrap_or_else(|| (Some(err.line()), anyhow!("{}", where_not_said(&err))))
    })?;
    json.end().map_err(|err| {
        let column = err.column();
        let hint = "a JSON dict file holds one object of query id to {doc id: grade}";
        let what = format!("more after the JSON object (column {column}): {hint}");
        (Some(err.line()), anyhow!(what))
    })
}

/// What `err` says, with its column but not its line, which the caller
/// puts first as the other formats do.
fn where_not_said(err: &serde_json::Error) -> String {
    let said = err.to_string();
    let place = format!(" at line {} column {}", err.line(), err.column());
    let what = said.strip_suffix(&place).unwrap_or(&said);
    format!("{what} (column {})", err.column())
}

/// The error of the builder or of a grade, kept with the line of its key:
/// serde_json would say where it had read to, past the value.
type Failed = RefCell<Option<LineError>>;

/// Keep `err`, of `line`, and stop the reading.
fn fail<E: de::Error>(failed: &Failed, line: usize, err: anyhow::Error) -> E {
    *failed.borrow_mut() = Some((Some(line), err));
    E::custom("stopped")
}

/// A reader that counts the newlines read through it: serde_json reads a
/// byte at a time, so the count is the line of the byte read last.
struct CountedLines<R> {
    inner: R,
    newlines: Rc<Cell<usize>>,
}

impl<R: Read> Read for CountedLines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        let newlines = buf[..read].iter().filter(|&&b| b == b'\n').count();
        self.newlines.set(self.newlines.get() + newlines);
        Ok(read)
    }
}

/// The line a key just read is on: serde_json has read up to its closing
/// quote, and no further.
fn line_now(newlines: &Cell<usize>) -> usize {
    newlines.get() + 1
}

/// The outer object: query id to judgments.
struct Queries<'b> {
    builder: &'b mut Builder,
    newlines: &'b Cell<usize>,
    failed: &'b Failed,
}

impl<'de> DeserializeSeed<'de> for Queries<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, json: D) -> Result<(), D::Error> {
        json.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Queries<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("one JSON object of query id to an object of doc id to grade")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(query) = map.next_key::<String>()? {
            let line = line_now(self.newlines);
            let q = (self.builder.push_query(&query, line))
                .map_err(|err| fail(self.failed, line, err))?;
            map.next_value_seed(Judgments {
                builder: self.builder,
                newlines: self.newlines,
                failed: self.failed,
                query: q,
                query_id: &query,
            })?;
        }
        Ok(())
    }
}

/// One query's object: doc id to grade.
struct Judgments<'b> {
    builder: &'b mut Builder,
    newlines: &'b Cell<usize>,
    failed: &'b Failed,
    query: usize,
    query_id: &'b str,
}

impl<'de> DeserializeSeed<'de> for Judgments<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, json: D) -> Result<(), D::Error> {
        json.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Judgments<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let query = self.query_id;
        write!(f, "an object of doc id to grade for query '{query}'")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(doc) = map.next_key::<String>()? {
            let line = line_now(self.newlines);
            let grade = map.next_value_seed(Grade {
                doc: &doc,
                line,
                failed: self.failed,
            })?;
            (self.builder.judge(self.query, &doc, grade, NOT_NAMED, line))
                .map_err(|err| fail(self.failed, line, err))?;
        }
        Ok(())
    }
}

/// A doc's grade: a whole number, written as an integer or a float.
struct Grade<'d> {
    doc: &'d str,
    line: usize,
    failed: &'d Failed,
}

impl<'de> DeserializeSeed<'de> for Grade<'_> {
    type Value = i64;

    fn deserialize<D: Deserializer<'de>>(self, json: D) -> Result<i64, D::Error> {
        json.deserialize_any(self)
    }
}

impl Grade<'_> {
    fn of<E: de::Error>(&self, whole: Option<i128>, written: impl fmt::Display) -> Result<i64, E> {
        let what = || format!("the grade of '{}' ({written})", self.doc);
        whole_grade(whole, what).map_err(|err| fail(self.failed, self.line, err))
    }
}

impl Visitor<'_> for Grade<'_> {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a whole-number grade for doc '{}'", self.doc)
    }

    fn visit_i64<E: de::Error>(self, grade: i64) -> Result<i64, E> {
        Ok(grade)
    }

    fn visit_u64<E: de::Error>(self, grade: u64) -> Result<i64, E> {
        self.of(Some(grade.into()), grade)
    }

    fn visit_f64<E: de::Error>(self, grade: f64) -> Result<i64, E> {
        self.of(whole_float(grade), grade)
    }
}
