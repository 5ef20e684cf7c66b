//! Integration tests: each module runs the real binary (or the library's
//! whole grade path) for one subcommand or concern.
mod prop_grade;
mod prop_permissions;
mod prop_stage_loss;
mod test_compare;
mod test_compare_rules;
mod test_compare_stats;
mod test_diagnostics_sample;
mod test_docs;
mod test_gen;
mod test_grade_cli;
mod test_inputs;
mod test_labels;
mod test_output_dir;
mod test_outputs;
mod test_permissions;
mod test_rejects;
mod test_repeats;
mod test_samples;
mod test_stage_loss;
mod test_stage_loss_generated;
mod test_stage_order;
mod test_stale_labels;
mod test_stdout_table;
mod test_streams;
mod test_trec;
mod util;
