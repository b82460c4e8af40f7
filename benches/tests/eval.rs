//! The evaluation path runs in the test suite on the synthetic conversations, and retrieval
//! on them is far better than chance.

use std::sync::Arc;

use agent_memory::inmem::InMemoryStore;
use agent_memory::{MemoryError, MemoryStore, Namespace};
use memory_benches::eval::{
    EvalOptions, Evaluation, Turn, each_longmemeval, evaluate, read_longmemeval, render,
};
use memory_benches::synthetic::{as_longmemeval, synthetic};

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
    assert_eq!(report.writes.writes, turns.len(), "every turn is counted");
    assert!(report.writes.merged <= report.writes.writes);
    assert!(report.latency_us["median"] > 0.0);
    let json = serde_json::to_value(&report).unwrap();
    for key in ["recall@1", "recall@5", "recall@10", "recall@20", "hit@10"] {
        assert!(json["overall"][key].is_number(), "{key} in the JSON report");
    }
}

/// A question asked to be explained keeps its first results with the signals that scored
/// them, in the ranking's order; the others are not explained.
#[tokio::test]
async fn an_explained_question_keeps_its_results_breakdown() {
    let (turns, queries) = synthetic(1, 60, 5);
    let asked = queries[0].qid.clone();
    let options = EvalOptions {
        explain: vec![asked.clone(), "no such question".into()],
        keep_ranked: true,
        ..EvalOptions::default()
    };
    let report = evaluate(&turns, &queries, Arc::new(InMemoryStore::new()), &options)
        .await
        .unwrap();
    assert_eq!(report.explained.len(), 1);
    let explained = &report.explained[0];
    assert_eq!(explained.qid, asked);
    assert_eq!(explained.evidence, queries[0].evidence);
    let ranked = &report.ranked[0];
    assert_eq!(ranked.qid, asked);
    let ids: Vec<&str> = explained.results.iter().map(|r| r.id.as_str()).collect();
    assert!(!ids.is_empty());
    assert!(ids.len() <= memory_benches::eval::EXPLAINED_RESULTS);
    assert!(
        ranked.turns.iter().zip(&ids).all(|(turn, id)| turn == id),
        "the ranking's order"
    );
    let first = &explained.results[0];
    assert!(
        first
            .signals
            .iter()
            .any(|(name, value, _)| name == "relevance" && *value > 0.0),
        "{first:?}"
    );
    assert!(first.score >= explained.results[ids.len() - 1].score);
    assert!(!first.text.is_empty());
    let text = explained.render();
    assert!(text.starts_with(&asked), "{text}");
    assert!(text.contains("relevance="), "{text}");
}

#[test]
fn synthetic_is_deterministic() {
    assert_eq!(synthetic(2, 50, 1), synthetic(2, 50, 1));
    assert_ne!(synthetic(2, 50, 1).0, synthetic(2, 50, 2).0);
}

/// The LongMemEval reader and the session-level metrics: the synthetic conversations written
/// in LongMemEval's JSON format read back as one haystack per question, with the question's
/// date as the clock, and rank as well as they do in their own format.
#[tokio::test]
async fn longmemeval_format_reads_and_scores_sessions() {
    let (turns, queries) = synthetic(2, 60, 11);
    let mut file = as_longmemeval(&turns, &queries);
    // An abstention question is skipped.
    if let serde_json::Value::Array(questions) = &mut file {
        let mut abstention = questions[0].clone();
        abstention["question_id"] = "q-9_abs".into();
        questions.push(abstention);
    }
    let path = written("format", &file);
    let (haystacks, questions) = read_longmemeval(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        questions.len(),
        queries.len(),
        "the _abs question is skipped"
    );
    assert!(
        questions
            .iter()
            .all(|q| q.asked_at.is_some() && !q.evidence_sessions.is_empty())
    );
    assert!(questions.iter().all(|q| q.evidence.len() == 1));
    let options = EvalOptions {
        keep_ranked: true,
        ..EvalOptions::default()
    };
    let report = evaluate(
        &haystacks,
        &questions,
        Arc::new(InMemoryStore::new()),
        &options,
    )
    .await
    .unwrap();
    let values = &report.overall.values;
    assert!(values["recall@10"] > 50.0, "{}", render(&report));
    // Session recall from the turn ranking: at least as good as turn hits at the same cut.
    assert!(
        values["recall_any@5"] >= values["hit@5"] - 1e-9,
        "{}",
        render(&report)
    );
    assert!(values["recall_all@10"] >= values["recall_all@5"]);
    assert!(values["ndcg@10"] > 0.0 && values["ndcg@10"] <= 100.0);
    assert_eq!(report.ranked.len(), questions.len());
    let first = &report.ranked[0];
    assert!(first.sessions.iter().all(|s| s.starts_with("syn-session-")));
    assert!(report.per_category.contains_key("single-session-user"));
}

/// `file` (LongMemEval's JSON) written to a temporary path unique to `name`.
fn written(name: &str, file: &serde_json::Value) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "agent-memory-longmemeval-{name}-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, serde_json::to_vec(file).unwrap()).unwrap();
    path
}

/// A LongMemEval file read one question at a time, each haystack forgotten once asked, ranks
/// every question exactly as the whole file remembered at once does, and the store never
/// holds more than the haystack being asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_longmemeval_file_read_one_question_at_a_time_ranks_as_the_whole() {
    let (turns, queries) = synthetic(3, 60, 13);
    let path = written("stream", &as_longmemeval(&turns, &queries));
    let options = EvalOptions {
        keep_ranked: true,
        ..EvalOptions::default()
    };
    let (all_turns, all_queries) = read_longmemeval(&path).unwrap();
    let whole = evaluate(
        &all_turns,
        &all_queries,
        Arc::new(InMemoryStore::new()),
        &options,
    )
    .await
    .unwrap();

    let store: Arc<dyn MemoryStore> = Arc::new(InMemoryStore::new());
    let everything = Namespace::root().subtree();
    let mut evaluation = Evaluation::new(store.clone(), &options).unwrap();
    let runtime = tokio::runtime::Handle::current();
    let handed = tokio::task::block_in_place(|| {
        each_longmemeval(&path, |haystack| {
            runtime.block_on(async {
                assert_eq!(
                    store.count(&everything).await?,
                    0,
                    "the haystack before is forgotten"
                );
                let turns: Vec<&Turn> = haystack.turns.iter().collect();
                let id = haystack.query.conv_id.as_str();
                evaluation
                    .conversation(id, &turns, &[&haystack.query])
                    .await?;
                assert!(store.count(&everything).await? > 0);
                evaluation.forget(id).await
            })
        })
    })
    .unwrap();
    let _ = std::fs::remove_file(&path);
    let streamed = evaluation.finish();
    assert_eq!(handed, all_queries.len());
    assert_eq!(store.count(&everything).await.unwrap(), 0);
    assert_eq!(streamed.overall, whole.overall, "{}", render(&streamed));
    // The whole file is asked conversation by conversation in the order of their ids.
    let by_question = |report: &memory_benches::eval::Report| {
        let mut ranked: Vec<(String, Vec<String>)> = report
            .ranked
            .iter()
            .map(|question| (question.qid.clone(), question.turns.clone()))
            .collect();
        ranked.sort();
        ranked
    };
    assert_eq!(by_question(&streamed), by_question(&whole));
    assert_eq!(streamed.ranked.len(), all_queries.len());
    assert_eq!(streamed.ingest["turns"], whole.ingest["turns"]);
}

/// Reading stops at the first error: one `each` returns comes back as it was returned, a
/// question whose date does not parse is refused by its field's name, and a file cut short
/// is a serialization error, each after the questions before it were handed over.
#[test]
fn reading_a_longmemeval_file_stops_at_the_first_error() {
    let (turns, queries) = synthetic(3, 40, 3);
    let file = as_longmemeval(&turns, &queries);
    let count = file.as_array().unwrap().len();
    assert!(count >= 3);

    let path = written("stop", &file);
    let mut seen = Vec::new();
    let error = each_longmemeval(&path, |haystack| {
        seen.push(haystack.query.qid.clone());
        if seen.len() == 2 {
            return Err(MemoryError::invalid("stop here", "at the second"));
        }
        Ok(())
    })
    .unwrap_err();
    assert_eq!(seen.len(), 2, "nothing read after the error");
    assert!(
        matches!(&error, MemoryError::InvalidInput { field, .. } if field == "stop here"),
        "{error}"
    );

    let mut dated = file.clone();
    dated[1]["haystack_dates"][0] = "the day after".into();
    let path = written("date", &dated);
    let mut handed = 0;
    let error = each_longmemeval(&path, |_| {
        handed += 1;
        Ok(())
    })
    .unwrap_err();
    assert_eq!(handed, 1);
    assert!(
        matches!(&error, MemoryError::InvalidInput { field, .. } if field == "haystack_dates"),
        "{error}"
    );

    let text = serde_json::to_string(&file).unwrap();
    let second = serde_json::to_string(&file[1]).unwrap();
    let cut = text.find(&second).unwrap() + second.len() / 2;
    let path = std::env::temp_dir().join(format!(
        "agent-memory-longmemeval-cut-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, &text[..cut]).unwrap();
    let mut handed = 0;
    let error = each_longmemeval(&path, |_| {
        handed += 1;
        Ok(())
    })
    .unwrap_err();
    assert_eq!(handed, 1);
    assert!(
        matches!(error, MemoryError::Serialization { .. }),
        "{error}"
    );
    for name in ["stop", "date"] {
        let _ = std::fs::remove_file(std::env::temp_dir().join(format!(
            "agent-memory-longmemeval-{name}-{}.json",
            std::process::id()
        )));
    }
    let _ = std::fs::remove_file(&path);
}

/// A provider that points every question and every small-talk turn one way and every fact
/// another, so similarity favours exactly the turns that answer nothing. It counts the texts
/// it embeds.
#[derive(Debug, Default)]
struct SmallTalk {
    texts: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl agent_memory::EmbeddingProvider for SmallTalk {
    async fn embed(&self, text: &str) -> agent_memory::Result<Vec<f32>> {
        self.texts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The synthetic facts are told in the first person ("I adopted ...", "My sister ...",
        // "We went camping ..."), after the speaker's name; small talk and questions are not.
        let fact = [": I ", ": My ", ": We "]
            .iter()
            .any(|opening| text.contains(opening))
            && !text.contains("I know, right")
            && !text.contains(": I am happy");
        Ok(if fact { vec![0.0, 1.0] } else { vec![1.0, 0.0] })
    }

    fn dimension(&self) -> usize {
        2
    }
}

/// With an embedder, the eval recalls as `recall` does: the embedding channel runs and its
/// similarity weighs in the score (the weights an embedder switches the default scoring to),
/// so a provider that favours small talk pushes turns that answer nothing above some of the
/// keyword matches.
#[tokio::test]
async fn an_embedder_takes_part_in_the_ranking() {
    let (turns, queries) = synthetic(2, 80, 5);
    let plain = EvalOptions {
        keep_ranked: true,
        ..EvalOptions::default()
    };
    let provider = Arc::new(SmallTalk::default());
    let embedded = EvalOptions {
        embedder: Some(provider.clone()),
        ..plain.clone()
    };
    let without = evaluate(&turns, &queries, Arc::new(InMemoryStore::new()), &plain)
        .await
        .unwrap();
    let with = evaluate(&turns, &queries, Arc::new(InMemoryStore::new()), &embedded)
        .await
        .unwrap();
    let embedded_texts = provider.texts.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        embedded_texts >= turns.len() + queries.len(),
        "every turn and every question is embedded: {embedded_texts}"
    );
    let moved = without
        .ranked
        .iter()
        .zip(&with.ranked)
        .filter(|(a, b)| a.turns[..5.min(a.turns.len())] != b.turns[..5.min(b.turns.len())])
        .count();
    assert!(moved > 0, "similarity changes some top five");
    assert!(
        with.overall.values["recall@10"] < without.overall.values["recall@10"],
        "favouring small talk costs recall: {} against {}",
        with.overall.values["recall@10"],
        without.overall.values["recall@10"]
    );
}
