//! The kinds of result rgrade writes into an output directory (or under
//! a prefix of object storage), each known by the file that marks it
//! complete and the files it may hold.

use std::path::Path;

use crate::base::schema::{
    AGREEMENT_SUMMARY_FILE, AGREE_FILES, ALARMS_FILE, COMPARE_FILES, COMPARISON_SUMMARY_FILE,
    GRADE_FILES, PARTIAL_SUMMARY_FILE, SUMMARY_FILE, TREND_FILES,
};

/// The kinds of result an output directory holds. Each marks itself by
/// the file it writes last; all write report.html, so their files must
/// not mix in one directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    /// `grade -o` (a partial grading too).
    Grading,
    /// `compare -o`.
    Comparison,
    /// `agree -o`.
    Agreement,
    /// `trend -o`.
    Trend,
}

impl ResultKind {
    pub(crate) const ALL: [ResultKind; 4] = [
        ResultKind::Grading,
        ResultKind::Comparison,
        ResultKind::Agreement,
        ResultKind::Trend,
    ];

    /// The files whose presence marks a result of this kind.
    pub(crate) fn markers(self) -> &'static [&'static str] {
        match self {
            ResultKind::Grading => &[SUMMARY_FILE, PARTIAL_SUMMARY_FILE],
            ResultKind::Comparison => &[COMPARISON_SUMMARY_FILE],
            ResultKind::Agreement => &[AGREEMENT_SUMMARY_FILE],
            ResultKind::Trend => &[ALARMS_FILE],
        }
    }

    /// Every file a result of this kind may hold.
    pub(crate) fn files(self) -> &'static [&'static str] {
        match self {
            ResultKind::Grading => &GRADE_FILES,
            ResultKind::Comparison => &COMPARE_FILES,
            ResultKind::Agreement => &AGREE_FILES,
            ResultKind::Trend => &TREND_FILES,
        }
    }

    /// What a message calls a result of this kind.
    pub(crate) fn described(self) -> &'static str {
        match self {
            ResultKind::Grading => "a grade output",
            ResultKind::Comparison => "a comparison",
            ResultKind::Agreement => "an agreement of answer keys",
            ResultKind::Trend => "a trend",
        }
    }

    /// Whether `name` is the file that marks some kind of result complete.
    pub(crate) fn is_marker(name: &str) -> bool {
        (ResultKind::ALL.iter()).any(|kind| kind.markers().contains(&name))
    }

    /// The kind of the complete result in `dir`, by its marker, if any.
    pub fn of_dir(dir: &Path) -> Option<(ResultKind, &'static str)> {
        let kinds = ResultKind::ALL.into_iter();
        kinds
            .flat_map(|kind| kind.markers().iter().map(move |&marker| (kind, marker)))
            .find(|(_, marker)| dir.join(marker).exists())
    }
}

/// Whether `name` is a file some result of rgrade may hold in its
/// directory.
pub(crate) fn is_result_file(name: &str) -> bool {
    (ResultKind::ALL.iter()).any(|kind| kind.files().contains(&name))
}
