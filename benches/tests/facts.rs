//! The changing-facts benchmark on a small generated set: with fact keys, recall answers
//! every question with the current value (or the value held at the asked time) and never
//! ranks an old value above it, and each fact's history is complete; without keys or
//! detection, old values do rank above current ones, so the benchmark tells them apart;
//! recall ranking newer facts first closes that gap on its own.

use memory_benches::facts::{FactsMode, FactsSpec, generate, render, run};

fn tiny() -> FactsSpec {
    FactsSpec {
        subjects: 6,
        near_misses: 0,
        seed: 7,
        ..FactsSpec::default()
    }
}

#[tokio::test]
async fn fact_keys_answer_with_the_current_value() {
    let set = generate(&tiny());
    assert_eq!(set.facts.len(), 36);
    let keys = run(&set, FactsMode::Keys, 10).await.unwrap();
    let baseline = run(&set, FactsMode::Baseline, 10).await.unwrap();
    let table = render(&set, &[keys.clone(), baseline.clone()]);
    assert_eq!(keys.questions, set.facts.len(), "{table}");
    assert_eq!(keys.top1_current, keys.questions, "{table}");
    assert_eq!(keys.stale_above_current, 0, "{table}");
    assert_eq!(keys.history_exact, Some(keys.questions), "{table}");
    assert_eq!(keys.as_of_questions, set.as_of.len(), "{table}");
    assert_eq!(keys.as_of_correct, keys.as_of_questions, "{table}");
    assert_eq!(
        keys.true_flags, 0,
        "fact keys supersede, they are not flagged"
    );
    // Every change superseded the value before it.
    assert_eq!(keys.superseded, keys.changes, "{table}");
    assert_eq!(baseline.history_exact, None);
    assert!(
        baseline.stale_above_current > 0,
        "without detection an old value ranks above the current one somewhere\n{table}"
    );
}

#[test]
fn generation_is_deterministic_and_consistent() {
    let spec = tiny();
    let set = generate(&spec);
    assert_eq!(set, generate(&spec));
    assert_ne!(set, generate(&FactsSpec { seed: 8, ..spec }));
    for (index, fact) in set.facts.iter().enumerate() {
        assert!((3..=6).contains(&fact.versions.len()));
        let mut previous = None;
        for (version, (value, statement)) in fact.versions.iter().enumerate() {
            let statement = &set.statements[*statement];
            assert_eq!(statement.states, Some((index, version)));
            assert!(statement.text.contains(value.as_str()));
            assert!(statement.text.contains(fact.subject.as_str()));
            assert!(
                previous.is_none_or(|at| at < statement.at),
                "versions in time order"
            );
            previous = Some(statement.at);
        }
    }
    assert!(set.statements.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(set.statements.iter().all(|s| s.at < set.now));
    for question in &set.as_of {
        let versions = &set.facts[question.fact].versions;
        let from = set.statements[versions[question.version].1].at;
        let until = set.statements[versions[question.version + 1].1].at;
        assert!(from < question.at && question.at < until);
    }
}

/// Without keys and without the write-time detector, recall's newer-facts-first ranking
/// alone answers with current values where relevance alone ranks old ones above them.
#[tokio::test]
async fn newer_facts_first_ranks_no_old_value_above_the_current_one() {
    let set = generate(&FactsSpec {
        subjects: 12,
        seed: 11,
        ..FactsSpec::default()
    });
    let recall = run(&set, FactsMode::Recall, 10).await.unwrap();
    let baseline = run(&set, FactsMode::Baseline, 10).await.unwrap();
    let table = render(&set, &[recall.clone(), baseline.clone()]);
    assert_eq!(recall.stale_above_current, 0, "{table}");
    assert!(
        baseline.stale_above_current > recall.questions / 2,
        "{table}"
    );
    assert!(recall.top1_current * 10 >= recall.questions * 8, "{table}");
    assert!(recall.as_of_correct > baseline.as_of_correct, "{table}");
    assert_eq!(recall.flagged, 0, "no detector ran\n{table}");
}
