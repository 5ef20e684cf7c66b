//! `rgrade grade` end to end, through the binary.
