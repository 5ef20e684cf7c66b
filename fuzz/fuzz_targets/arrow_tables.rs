//! Arrow tables handed over in memory (pandas, polars, pyarrow through the
//! Python package): the input spells a table (column names rgrade reads,
//! each of a type a dataframe library makes, with nulls), which is graded
//! as logs, once joined by query id and once by question text, and loaded
//! as labels.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rgrade::JoinBy;
use rgrade_fuzz::{grade_table, spell_table};

fuzz_target!(|data: &[u8]| {
    let Some(table) = spell_table(data) else {
        return;
    };
    grade_table(&table, JoinBy::Id);
    grade_table(&table, JoinBy::Text);
});
