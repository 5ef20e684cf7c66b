//! A compiled answer key (`rgrade index`): the input is the key file, read
//! as `rgrade grade --labels KEY` does, as it is, with the hash it ends
//! with made to fit, and spliced into a key of a few labels; every key
//! read then answers every lookup of a grading.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rgrade_fuzz::read_key(data));
