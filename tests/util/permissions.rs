//! The answer key and the grading call that the permission and stale-label
//! tests share.

use super::{grade, text, Run, Workdir};

/// Two labeled queries: q1 (a, b relevant; g judged 0) and q2 (c).
pub const LABELS: &str = concat!(
    r#"{"query_id": "q1", "relevant": {"a": 1, "b": 1, "g": 0}, "task": "t1", "language": "en"}"#,
    "\n",
    r#"{"query_id": "q2", "relevant": ["c"], "task": "t2", "language": "de"}"#,
    "\n",
);

/// Grade `logs` (one file, logs.jsonl) against [`LABELS`] at k = 1,3
/// into `out`, with `extra` options.
pub fn grade_logs(wd: &Workdir, logs: &[&str], extra: &[&str]) -> Run {
    wd.write("labels.jsonl", LABELS);
    wd.write("logs.jsonl", text(logs));
    let mut args = vec!["--labels", "labels.jsonl", "-k", "1,3", "-q", "-o", "out"];
    args.extend_from_slice(extra);
    args.push("logs.jsonl");
    grade(wd, &args)
}
