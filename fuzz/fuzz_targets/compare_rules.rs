//! compare's acceptance rules: the input is a rules TOML file, resolved
//! against the compare sample's paired queries (bm25-v3 against
//! hybrid-v2), and each rule it holds is checked for whether it can fail
//! and evaluated, as `rgrade compare --rules` does.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rgrade::fuzzing::{load_graded, load_rules, pair, RuleContext, Side, StatSettings};
use rgrade::Cutoff;
use rgrade_fuzz::{grade_sample, write_input};

/// The compare sample, graded and paired as its README does.
struct Compared {
    paired: rgrade::fuzzing::Paired,
    metrics: Vec<usize>,
}

fn compared() -> &'static Compared {
    static COMPARED: OnceLock<Compared> = OnceLock::new();
    COMPARED.get_or_init(|| {
        let labels = "realistic/labels.jsonl";
        let ks = [Cutoff::At(1), Cutoff::At(5), Cutoff::At(10), Cutoff::All];
        let baseline = grade_sample(labels, &["realistic/logs"], &ks, "baseline");
        let candidate = grade_sample(labels, &["compare/candidate"], &ks, "candidate");
        let load = |dir, side| load_graded(dir, None, side).expect("the sample reads back");
        let paired = pair(
            load(&baseline, Side::Baseline),
            load(&candidate, Side::Candidate),
        )
        .expect("the compare sample pairs");
        let metrics = (0..paired.metrics.len()).collect();
        Compared { paired, metrics }
    })
}

fuzz_target!(|data: &[u8]| {
    let Compared { paired, metrics } = compared();
    let context = RuleContext {
        compared_metrics: metrics,
        // Few draws: the statistics are not under test, the rules are.
        settings: StatSettings {
            permutations: 100,
            confidence: 0.95,
            seed: 1,
            alpha: 0.05,
            mde: None,
        },
        alpha: 0.05,
    };
    let path = write_input("rules.toml", data);
    let Ok(rules) = load_rules(&path, paired, &context) else {
        return;
    };
    for rule in rules {
        let _ = rule.cannot_fail(paired, &context);
        let _ = rule.evaluate(paired, &context);
    }
});
