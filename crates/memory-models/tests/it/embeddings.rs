//! The `/embeddings` provider: batching, order, dimension checks and failures.

use std::time::Duration;

use memory_core::{EmbeddingProvider, MemoryError};
use memory_models::{EmbeddingConfig, HttpConfig, HttpEmbedder};

use crate::server::{Reply, serve};

fn embedder(base: &str, dimension: usize, batch_size: usize) -> HttpEmbedder {
    let mut config = EmbeddingConfig::new(format!("{base}/v1"), "test-embed", dimension);
    config.batch_size = batch_size;
    config.http = HttpConfig::new(format!("{base}/v1")).with_retries(2, Duration::from_millis(1));
    HttpEmbedder::new(config).unwrap()
}

fn answer(vectors: &[(usize, Vec<f32>)]) -> Reply {
    let data: Vec<serde_json::Value> = vectors
        .iter()
        .map(|(index, embedding)| serde_json::json!({"object": "embedding", "index": index, "embedding": embedding}))
        .collect();
    Reply::Json(
        200,
        serde_json::json!({"object": "list", "data": data}).to_string(),
    )
}

#[tokio::test]
async fn batches_are_split_and_kept_in_order() {
    let server = serve(vec![
        // Indexes out of order: the provider puts them back.
        answer(&[(1, vec![0.0, 1.0]), (0, vec![1.0, 0.0])]),
        answer(&[(0, vec![0.5, 0.5])]),
    ])
    .await;
    let provider = embedder(&server.base, 2, 2);
    let vectors = provider.embed_batch(&["a", "b", "c"]).await.unwrap();
    assert_eq!(
        vectors,
        vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.5, 0.5]]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/embeddings");
    assert_eq!(requests[0].body["input"], serde_json::json!(["a", "b"]));
    assert_eq!(requests[0].body["model"], "test-embed");
    assert_eq!(requests[1].body["input"], serde_json::json!(["c"]));
    assert_eq!(provider.dimension(), 2);
}

#[tokio::test]
async fn wrong_dimensions_and_shapes_are_errors() {
    let server = serve(vec![
        answer(&[(0, vec![1.0, 0.0, 0.0])]),
        answer(&[(0, vec![1.0, 0.0]), (1, vec![1.0, 0.0])]),
        answer(&[(3, vec![1.0, 0.0])]),
        Reply::Json(200, "{\"data\": 5}".into()),
    ])
    .await;
    let provider = embedder(&server.base, 2, 8);
    let error = provider.embed("a").await.unwrap_err();
    assert_eq!(error.field(), Some("dimension"), "{error}");
    assert!(error.to_string().contains("answered 3 values"), "{error}");
    let error = provider.embed("a").await.unwrap_err();
    assert!(
        error.to_string().contains("2 vectors for 1 texts"),
        "{error}"
    );
    let error = provider.embed("a").await.unwrap_err();
    assert!(error.to_string().contains("index 3"), "{error}");
    let error = provider.embed("a").await.unwrap_err();
    assert!(
        matches!(error, MemoryError::Serialization { .. }),
        "{error}"
    );
}

/// A vector of zeros (a text the model has no words for) is kept, not refused: the write
/// goes through, and the memory is found by its words.
#[tokio::test]
async fn a_vector_of_zeros_is_kept() {
    let server = serve(vec![
        answer(&[(0, vec![0.0, 0.0])]),
        answer(&[(0, vec![1.0, 0.0]), (1, vec![-0.0, 0.0])]),
    ])
    .await;
    let provider = embedder(&server.base, 2, 8);
    assert_eq!(provider.embed("a").await.unwrap(), vec![0.0, 0.0]);
    assert_eq!(
        provider.embed_batch(&["a", "b"]).await.unwrap(),
        vec![vec![1.0, 0.0], vec![-0.0, 0.0]]
    );
}

#[tokio::test]
async fn rate_limits_are_retried_and_outages_reported() {
    let server = serve(vec![
        Reply::Json(429, "{}".into()),
        answer(&[(0, vec![1.0, 0.0])]),
        Reply::Json(500, "{}".into()),
        Reply::Json(500, "{}".into()),
    ])
    .await;
    let provider = embedder(&server.base, 2, 8);
    assert_eq!(provider.embed("a").await.unwrap(), vec![1.0, 0.0]);
    let error = provider.embed("a").await.unwrap_err();
    assert!(matches!(error, MemoryError::Unavailable { .. }), "{error}");
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn invalid_settings_name_the_field() {
    let config = EmbeddingConfig::new("http://127.0.0.1:9/v1", "m", 0);
    assert_eq!(
        HttpEmbedder::new(config).unwrap_err().field(),
        Some("dimension")
    );
    let mut config = EmbeddingConfig::new("http://127.0.0.1:9/v1", "m", 4);
    config.batch_size = 0;
    assert_eq!(
        HttpEmbedder::new(config).unwrap_err().field(),
        Some("batch_size")
    );
}

#[tokio::test]
async fn queries_and_stored_texts_get_their_prefixes() {
    let server = serve(vec![
        answer(&[(0, vec![1.0, 0.0]), (1, vec![0.0, 1.0])]),
        answer(&[(0, vec![1.0, 0.0])]),
        answer(&[(0, vec![0.5, 0.5])]),
    ])
    .await;
    let mut config = EmbeddingConfig::new(format!("{}/v1", server.base), "e5-small", 2);
    config.query_prefix = "query: ".to_owned();
    config.document_prefix = "passage: ".to_owned();
    let provider = HttpEmbedder::new(config).unwrap();
    provider
        .embed_batch(&["I adopted a kitten", "a"])
        .await
        .unwrap();
    provider.embed("b").await.unwrap();
    provider.embed_query("which cat do I have").await.unwrap();
    let inputs: Vec<serde_json::Value> = server
        .requests()
        .into_iter()
        .map(|request| request.body["input"].clone())
        .collect();
    assert_eq!(
        inputs,
        [
            serde_json::json!(["passage: I adopted a kitten", "passage: a"]),
            serde_json::json!(["passage: b"]),
            serde_json::json!(["query: which cat do I have"]),
        ]
    );
}

#[tokio::test]
async fn without_prefixes_a_query_is_sent_as_written() {
    let server = serve(vec![answer(&[(0, vec![1.0, 0.0])])]).await;
    let provider = embedder(&server.base, 2, 8);
    provider.embed_query("which cat").await.unwrap();
    assert_eq!(
        server.requests()[0].body["input"],
        serde_json::json!(["which cat"])
    );
}

#[test]
fn an_overlong_prefix_is_refused_by_name() {
    let mut config = EmbeddingConfig::new("http://127.0.0.1:9/v1", "m", 4);
    config.query_prefix = "x".repeat(1001);
    assert_eq!(
        HttpEmbedder::new(config).unwrap_err().field(),
        Some("query_prefix")
    );
    let mut config = EmbeddingConfig::new("http://127.0.0.1:9/v1", "m", 4);
    config.document_prefix = "x".repeat(1001);
    assert_eq!(
        HttpEmbedder::new(config).unwrap_err().field(),
        Some("document_prefix")
    );
}

/// An answer larger than the client reads is an error naming the batch size, not retried
/// (the same request would get the same answer) nor taken for an unreachable service.
#[tokio::test]
async fn an_answer_too_large_to_read_is_not_retried() {
    let huge = format!("{{\"data\": \"{}\"}}", "x".repeat(17 << 20));
    let server = serve(vec![Reply::Json(200, huge.clone()), Reply::Json(200, huge)]).await;
    let error = embedder(&server.base, 4, 8)
        .embed("text")
        .await
        .unwrap_err();
    assert!(matches!(error, MemoryError::LimitExceeded(_)), "{error}");
    assert!(error.to_string().contains("batch_size"), "{error}");
    assert_eq!(server.requests().len(), 1, "not retried");
}
