//! What a reader of an output directory may rely on: one run writes into
//! it at a time (docs/guide.md, Outputs).

use std::fs::File;

use rgrade::schema::LOCK_FILE;

use crate::util::{seed, Workdir};

/// While another run holds DIR, grade and compare into it stop at once
/// (exit 2, naming DIR) and write nothing; once it is let go, they run.
#[test]
fn one_run_writes_into_a_directory_at_a_time() {
    let wd = Workdir::new("output_lock");
    let labels = seed("labels.jsonl");
    let logs = seed("logs.jsonl");
    let grade = [
        "grade", "--labels", &labels, "-k", "3", "-q", "-o", "out", &logs,
    ];
    wd.rgrade(&grade).expect_code(0);
    wd.rgrade(&[
        "grade", "--labels", &labels, "-k", "3", "-q", "-o", "other", &logs,
    ])
    .expect_code(0);
    let compare = ["compare", "out", "other", "-o", "cmp"];
    let graded = wd.read("out/per_query.csv");

    // Other runs hold the directories, as a running rgrade would.
    let hold = |dir: &str| {
        std::fs::create_dir_all(wd.path(dir)).expect("mkdir");
        let lock = File::create(wd.path(&format!("{dir}/{LOCK_FILE}"))).expect("lock file");
        lock.lock().expect("the test takes the lock");
        lock
    };
    let held = [hold("out"), hold("cmp")];
    wd.rgrade(&compare)
        .expect_code(2)
        .expect_stderr(&["cmp: another rgrade run is writing into this directory"]);
    wd.write(
        "out/per_query.csv",
        "left by the run that holds the directory\n",
    );
    wd.rgrade(&grade)
        .expect_code(2)
        .expect_stderr(&["out: another rgrade run is writing into this directory"]);
    assert_eq!(
        wd.read_text("out/per_query.csv"),
        "left by the run that holds the directory\n"
    );
    assert!(!wd.exists("cmp/comparison.csv"), "nothing written");

    drop(held);
    wd.rgrade(&grade).expect_code(0);
    assert_eq!(wd.read("out/per_query.csv"), graded);
    wd.rgrade(&compare).expect_code(0);
    assert!(wd.exists("cmp/comparison.csv"));
}
