//! Ids kept as text, back to back in one string, and addressed by place:
//! a million labeled queries cost their bytes, not a million allocations.

use anyhow::{bail, Result};

/// Where an id's text is in [`IdText`].
#[repr(C)]
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    zerocopy::FromBytes,
    zerocopy::IntoBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
pub struct IdRef {
    start: u32,
    len: u32,
}

impl IdRef {
    /// The same id in a text that has `offset` more bytes before it.
    pub fn shifted(self, offset: u32) -> IdRef {
        IdRef {
            start: self.start + offset,
            len: self.len,
        }
    }
}

/// Every query and doc id of the labels, back to back: an id costs its
/// bytes and eight more, instead of a separate allocation.
#[derive(Debug, Default)]
pub struct IdText(pub(super) String);

impl IdText {
    /// Add an id; returns where it is.
    pub fn push(&mut self, id: &str) -> Result<IdRef> {
        let start = self.append(id)?;
        Ok(IdRef {
            start,
            // Fits: the whole text does.
            len: id.len() as u32,
        })
    }

    /// Add `more` text; returns where it starts. Ids are addressed in u32,
    /// so the whole text must stay below 4 GiB.
    pub fn append(&mut self, more: &str) -> Result<u32> {
        let start = u32::try_from(self.0.len());
        let end = u32::try_from(self.0.len() + more.len());
        let (Ok(start), Ok(_)) = (start, end) else {
            bail!("the labels hold more than 4 GiB of ids; split the key");
        };
        self.0.push_str(more);
        Ok(start)
    }

    /// Whether `id` names a whole text of ours, cut where characters
    /// begin and end: what a compiled key is checked for.
    pub fn holds(&self, id: IdRef) -> bool {
        let (start, end) = (id.start as usize, id.start as usize + id.len as usize);
        end <= self.0.len() && self.0.is_char_boundary(start) && self.0.is_char_boundary(end)
    }

    /// The text of an id.
    pub fn get(&self, id: IdRef) -> &str {
        &self.0[id.start as usize..(id.start + id.len) as usize]
    }
}
