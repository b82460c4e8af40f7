//! The evaluation path runs in the test suite on the synthetic conversations, and retrieval
//! on them is far better than chance.

use std::sync::Arc;

use agent_memory::inmem::InMemoryStore;
use memory_benches::eval::{EvalOptions, evaluate, render};
use memory_benches::synthetic::synthetic;

#[tokio::test]
async fn synthetic_recall_is_well_above_random() {
    let (turns, queries) = synthetic(3, 120, 7);
    assert!(queries.len() > 30, "enough questions: {}", queries.len());
    let report = evaluate(
        &turns,
        &queries,
        Arc::new(InMemoryStore::new()),
        &EvalOptions::default(),
    )
    .await
    .unwrap();
    let recall_at_10 = report.overall.values["recall@10"];
    // Random ranking finds one evidence turn in the top 10 of 120 turns about 8% of the time.
    assert!(
        recall_at_10 > 50.0,
        "R@10 {recall_at_10}\n{}",
        render(&report)
    );
    assert_eq!(report.overall.questions, queries.len());
    assert!(report.latency_us["median"] > 0.0);
    let json = serde_json::to_value(&report).unwrap();
    for key in ["recall@1", "recall@5", "recall@10", "recall@20", "hit@10"] {
        assert!(json["overall"][key].is_number(), "{key} in the JSON report");
    }
}

#[test]
fn synthetic_is_deterministic() {
    assert_eq!(synthetic(2, 50, 1), synthetic(2, 50, 1));
    assert_ne!(synthetic(2, 50, 1).0, synthetic(2, 50, 2).0);
}
