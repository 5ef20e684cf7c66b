//! What a comparison tells the user to look at, though it went on: a
//! stage only one side graded, a rule that cannot fail.

use std::fmt;

use crate::base::failure::spelled_by_each_front_end;
use crate::base::text::plural;

/// Something the user should look at, though the comparison went on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Warning {
    /// A stage graded on one side only: it is left out.
    StageOnOneSide {
        /// The stage.
        stage: String,
        /// The side that graded it: `baseline` or `candidate`.
        side: &'static str,
    },
    /// A `no_significant_loss` rule that cannot fail: with this few
    /// queries no loss reaches a Holm p-value below alpha.
    RuleCannotFail {
        /// The rule's name.
        rule: String,
        /// The queries its selection measures.
        queries: usize,
        /// The distinct hypotheses in its Holm family.
        hypotheses: usize,
        /// The significance level.
        alpha: f64,
    },
}

spelled_by_each_front_end!(Warning);

impl Warning {
    /// The warning, each setting it names as a mark.
    fn write_marked(&self, f: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Warning::StageOnOneSide { stage, side } => {
                write!(
                    f,
                    "stage {stage} was graded in the {side} only; it is left out"
                )
            }
            Warning::RuleCannotFail {
                rule,
                queries,
                hypotheses,
                alpha,
            } => write!(
                f,
                "rule '{rule}': with {} and {} in the Holm family no loss can reach a Holm \
                 p-value below alpha {alpha}; it cannot fail",
                plural(*queries as u64, "query", "queries"),
                plural(*hypotheses as u64, "hypothesis", "hypotheses")
            ),
        }
    }
}
