//! The `/rerank` client: both request shapes, scores by index, and failures.

use std::sync::Arc;
use std::time::Duration;

use memory_core::{MemoryError, Namespace, RetrievalSource};
use memory_models::{HttpConfig, HttpReranker, RerankApi, RerankerConfig};
use memory_retrieve::{Memory, Reranker};

use crate::server::{Reply, serve};

fn reranker(base: &str, api: RerankApi) -> HttpReranker {
    let mut config = RerankerConfig::new(base, "test-rerank").with_api(api);
    config.http = HttpConfig::new(base).with_retries(1, Duration::from_millis(1));
    HttpReranker::new(config).unwrap()
}

#[tokio::test]
async fn cohere_shape_scores_by_index() {
    let server = serve(vec![Reply::Json(
        200,
        r#"{"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}"#
            .into(),
    )])
    .await;
    let scores = reranker(&server.base, RerankApi::Cohere)
        .rerank("query", &["a", "b", "c"])
        .await
        .unwrap();
    assert_eq!(scores, vec![0.1, 0.0, 0.9]);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/rerank");
    assert_eq!(
        request.body["documents"],
        serde_json::json!(["a", "b", "c"])
    );
    assert_eq!(request.body["top_n"], 3);
    assert_eq!(request.body["model"], "test-rerank");
}

#[tokio::test]
async fn tei_shape_maps_logits_into_the_unit_range() {
    let server = serve(vec![Reply::Json(
        200,
        r#"[{"index": 1, "score": 3.0}, {"index": 0, "score": -3.0}]"#.into(),
    )])
    .await;
    let scores = reranker(&server.base, RerankApi::Tei)
        .rerank("query", &["a", "b"])
        .await
        .unwrap();
    assert!(scores[0] < 0.1 && scores[1] > 0.9, "{scores:?}");
    assert_eq!(
        server.requests()[0].body["texts"],
        serde_json::json!(["a", "b"])
    );
}

/// Logits that fall partly inside `[0, 1]` keep their order: the whole answer is mapped,
/// not each score on its own.
#[tokio::test]
async fn logits_partly_in_the_unit_range_keep_their_order() {
    let server = serve(vec![Reply::Json(
        200,
        r#"[{"index": 0, "score": 0.9}, {"index": 1, "score": 1.1},
            {"index": 2, "score": -0.1}, {"index": 3, "score": 0.1}]"#
            .into(),
    )])
    .await;
    let scores = reranker(&server.base, RerankApi::Tei)
        .rerank("query", &["a", "b", "c", "d"])
        .await
        .unwrap();
    assert!(
        scores[1] > scores[0] && scores[0] > scores[3] && scores[3] > scores[2],
        "{scores:?}"
    );
    assert!(scores.iter().all(|score| (0.0..=1.0).contains(score)));
}

/// A document scored twice is an error: the later score would replace the earlier one and
/// leave another document unscored (0).
#[tokio::test]
async fn a_repeated_index_is_an_error() {
    let server = serve(vec![Reply::Json(
        200,
        r#"{"results": [{"index": 0, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}"#
            .into(),
    )])
    .await;
    let error = reranker(&server.base, RerankApi::Cohere)
        .rerank("query", &["a", "b"])
        .await
        .unwrap_err();
    assert!(
        matches!(error, MemoryError::Serialization { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("index 0"), "{error}");
    assert!(error.to_string().contains("repeated"), "{error}");
}

#[tokio::test]
async fn bad_answers_are_errors_and_recall_keeps_the_fused_order() {
    let server = serve(vec![
        Reply::Json(
            200,
            r#"{"results": [{"index": 9, "relevance_score": 0.5}]}"#.into(),
        ),
        Reply::Json(200, "<html>".into()),
        Reply::Json(500, "{}".into()),
    ])
    .await;
    let client = reranker(&server.base, RerankApi::Cohere);
    let error = client.rerank("q", &["a"]).await.unwrap_err();
    assert!(error.to_string().contains("index 9"), "{error}");
    let error = client.rerank("q", &["a"]).await.unwrap_err();
    assert!(
        matches!(error, MemoryError::Serialization { .. }),
        "{error}"
    );

    let memory = Memory::builder()
        .reranker(Arc::new(client))
        .build()
        .unwrap();
    let user = Namespace::parse("user").unwrap();
    let first = memory
        .remember(&user, "garden garden tomatoes")
        .await
        .unwrap();
    memory.remember(&user, "a garden shed").await.unwrap();
    let found = memory.recall(&user.exact(), "garden").await.unwrap();
    let top = match &found.items[0].record {
        RetrievalSource::Memory(item) => item.id.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(top, first, "the 500 leaves the fused order");
}
