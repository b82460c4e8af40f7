//! The chat-completions client: enrichment, conflict judgements, summaries, and failures.

use std::sync::Arc;
use std::time::Duration;

use memory_core::{MemoryError, MemoryItem, Namespace};
use memory_models::{ChatConfig, ChatModel, HttpConfig, LlmEnricher};
use memory_retrieve::{ConflictDetector, Enricher, EnrichmentConfig, Memory, Summarizer};

use crate::server::{Reply, chat, serve};

fn model(base: &str, attempts: u32, timeout: Duration) -> ChatModel {
    let mut config = ChatConfig::new(format!("{base}/v1"), "test-model");
    config.http = HttpConfig::new(format!("{base}/v1"))
        .with_api_key("test-key")
        .with_timeout(timeout)
        .with_retries(attempts, Duration::from_millis(1));
    ChatModel::new(config).unwrap()
}

fn item(text: &str) -> MemoryItem {
    MemoryItem::new(Namespace::parse("user").unwrap(), text).unwrap()
}

const ENRICHMENT: &str = r#"{"memories": [{"index": 0,
  "entities": [{"name": "Caroline", "type": "person", "tags": ["caroline"]},
               {"name": "Pixel", "type": "pet", "tags": ["dogs", "pet"]},
               {"name": "", "type": "broken"}],
  "relations": [{"source": "Caroline", "target": "Pixel", "type": "owns"}],
  "tags": ["pets"], "importance": 0.8, "fact_key": "caroline.dog"}]}"#;

#[tokio::test]
async fn the_enricher_reads_a_recorded_answer_and_links_the_memory() {
    let server = serve(vec![chat(ENRICHMENT)]).await;
    let enricher = LlmEnricher::new(model(&server.base, 1, Duration::from_secs(10)));
    let memory = Memory::builder()
        .enricher(Arc::new(enricher))
        .build()
        .unwrap();
    let user = Namespace::parse("user").unwrap();
    let id = memory
        .remember(&user, "Caroline adopted a dog named Pixel")
        .await
        .unwrap();
    memory.flush().await.unwrap();
    let stats = memory.enrichment_stats().unwrap();
    assert_eq!((stats.enriched, stats.failed), (1, 0));
    let graph = memory.graph();
    let pixel = graph.get_entity(&user, "pixel").await.unwrap().unwrap();
    assert_eq!(pixel.entity_type, "pet");
    let relations = graph.relations_of(&user, "caroline").await.unwrap();
    assert!(relations.iter().any(|r| r.relation_type == "owns"));
    let links = graph
        .relations_of(&user, &memory_retrieve::memory_node_id(&id))
        .await
        .unwrap();
    assert_eq!(links.len(), 2, "the entity without a name is dropped");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert!(request.headers.contains("authorization: bearer test-key"));
    assert_eq!(request.body["model"], "test-model");
    assert_eq!(request.body["response_format"]["type"], "json_object");
    let prompt = request.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("[0] Caroline adopted a dog named Pixel"),
        "{prompt}"
    );
}

#[tokio::test]
async fn the_enricher_validates_what_it_keeps() {
    let server = serve(vec![chat(ENRICHMENT)]).await;
    let enricher = LlmEnricher::new(model(&server.base, 1, Duration::from_secs(10)));
    let found = enricher
        .enrich(&[item("Caroline adopted Pixel"), item("second")])
        .await
        .unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].entities.len(), 2);
    assert_eq!(found[0].importance, Some(0.8));
    assert_eq!(found[0].fact_key.as_deref(), Some("caroline.dog"));
    assert_eq!(
        found[1],
        Default::default(),
        "no answer for it: nothing found"
    );
}

#[tokio::test]
async fn malformed_json_fails_clearly_and_the_memory_stays() {
    let server = serve(vec![
        chat("Sure! Here are the entities: Caroline"),
        chat("[1, 2, 3]"),
        chat(r#"{"memories": "none"}"#),
        Reply::Json(200, "this is not json".into()),
    ])
    .await;
    let enricher = LlmEnricher::new(model(&server.base, 1, Duration::from_secs(10)));
    let batch = [item("Caroline adopted Pixel")];
    let error = enricher.enrich(&batch).await.unwrap_err();
    assert!(
        matches!(error, MemoryError::Serialization { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("not JSON"), "{error}");
    let error = enricher.enrich(&batch).await.unwrap_err();
    assert!(error.to_string().contains("not an object"), "{error}");
    let error = enricher.enrich(&batch).await.unwrap_err();
    assert!(error.to_string().contains("asked shape"), "{error}");
    let error = enricher.enrich(&batch).await.unwrap_err();
    assert!(error.to_string().contains("unexpected JSON"), "{error}");
    assert!(error.to_string().contains(&server.base), "{error}");

    // Through a Memory: every attempt answers garbage; the memory is stored all the same.
    let server = serve(vec![chat("garbage"), chat("garbage")]).await;
    let memory = Memory::builder()
        .enricher_with(
            Arc::new(LlmEnricher::new(model(
                &server.base,
                1,
                Duration::from_secs(10),
            ))),
            EnrichmentConfig {
                max_attempts: 2,
                backoff: Duration::from_millis(1),
                ..EnrichmentConfig::default()
            },
        )
        .build()
        .unwrap();
    let user = Namespace::parse("user").unwrap();
    let id = memory
        .remember(&user, "Caroline adopted Pixel")
        .await
        .unwrap();
    memory.flush().await.unwrap();
    let stats = memory.enrichment_stats().unwrap();
    assert_eq!((stats.enriched, stats.failed, stats.retries), (0, 1, 1));
    assert!(memory.store().get(&user, &id).await.unwrap().is_some());
    assert_eq!(server.requests().len(), 2);
}

/// `null` (or missing, or not a list) entities, relations and tags read as empty: the
/// entry keeps what else it says, and the other entries are kept.
#[tokio::test]
async fn null_entities_and_relations_read_as_empty_and_the_good_entries_stay() {
    let server = serve(vec![chat(
        r#"{"memories": [
          {"index": 0, "entities": [{"name": "Caroline", "type": "person"}], "relations": null},
          {"index": 1, "entities": null, "relations": [{"source": "Ada", "target": "Engine",
            "type": "built"}], "tags": null, "importance": 0.4},
          {"index": 2, "entities": "Pixel", "fact_key": "pixel.owner"}]}"#,
    )])
    .await;
    let enricher = LlmEnricher::new(model(&server.base, 1, Duration::from_secs(10)));
    let found = enricher
        .enrich(&[
            item("Caroline"),
            item("Ada built the Engine"),
            item("Pixel"),
        ])
        .await
        .unwrap();
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].entities.len(), 1);
    assert_eq!(found[0].entities[0].name, "Caroline");
    assert_eq!(found[0].entities[0].entity_type, "person");
    assert!(found[0].relations.is_empty());
    assert!(found[1].entities.is_empty() && found[1].tags.is_empty());
    assert_eq!(found[1].relations.len(), 1);
    assert_eq!(found[1].relations[0].relation_type, "built");
    assert_eq!(found[1].importance, Some(0.4));
    assert!(found[2].entities.is_empty(), "a text is not a list");
    assert_eq!(found[2].fact_key.as_deref(), Some("pixel.owner"));
    assert_eq!(server.requests().len(), 1);
}

/// An entry whose index is negative, not an integer, missing or past the batch is dropped;
/// so is an entry that is not an object. The entries beside them are kept.
#[tokio::test]
async fn entries_with_bad_indexes_are_dropped_and_the_good_ones_stay() {
    let server = serve(vec![chat(
        r#"{"memories": [
          {"index": 0, "entities": [{"name": "Caroline", "type": "person"}]},
          {"index": -1, "entities": [{"name": "Negative"}]},
          {"index": 1.5, "entities": [{"name": "Fraction"}]},
          {"index": "1", "entities": [{"name": "Text"}]},
          {"index": null, "entities": [{"name": "Null"}]},
          {"entities": [{"name": "Missing"}]},
          {"index": 3, "entities": [{"name": "Past"}]},
          {"index": 18446744073709551616, "entities": [{"name": "Huge"}]},
          7,
          {"index": 2, "entities": [{"name": "Pixel", "type": "pet"}], "importance": 0.9}]}"#,
    )])
    .await;
    let enricher = LlmEnricher::new(model(&server.base, 1, Duration::from_secs(10)));
    let found = enricher
        .enrich(&[item("Caroline"), item("nothing said"), item("Pixel")])
        .await
        .unwrap();
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].entities.len(), 1);
    assert_eq!(found[0].entities[0].name, "Caroline");
    assert_eq!(
        found[1],
        Default::default(),
        "every entry naming it is dropped"
    );
    assert_eq!(found[2].entities[0].name, "Pixel");
    assert_eq!(found[2].importance, Some(0.9));
}

/// An index named twice keeps its first entry; the later one is dropped.
#[tokio::test]
async fn a_repeated_index_keeps_the_first_entry() {
    let server = serve(vec![chat(
        r#"{"memories": [
          {"index": 0, "entities": [{"name": "Caroline", "type": "person"}]},
          {"index": 1, "tags": ["second"]},
          {"index": 0, "entities": [{"name": "Impostor"}], "importance": 1.0}]}"#,
    )])
    .await;
    let enricher = LlmEnricher::new(model(&server.base, 1, Duration::from_secs(10)));
    let found = enricher
        .enrich(&[item("Caroline"), item("second")])
        .await
        .unwrap();
    assert_eq!(found[0].entities.len(), 1);
    assert_eq!(found[0].entities[0].name, "Caroline");
    assert_eq!(found[0].importance, None);
    assert_eq!(found[1].tags, vec!["second".to_owned()]);
}

/// Through a Memory: an answer with a malformed entry enriches the memory it names at the
/// first attempt; an answer that is not JSON, or has no `memories` list, is still an error
/// and is retried.
#[tokio::test]
async fn a_malformed_entry_is_not_retried_and_garbage_still_is() {
    let server = serve(vec![
        chat(
            r#"{"memories": [{"index": 0, "entities": [{"name": "Caroline", "type": "person"}],
              "relations": null}, {"index": -1}, {"index": 1, "entities": null}]}"#,
        ),
        chat("Sure! Caroline is a person."),
        chat(r#"{"memories": null}"#),
    ])
    .await;
    let memory = Memory::builder()
        .enricher_with(
            Arc::new(LlmEnricher::new(model(
                &server.base,
                1,
                Duration::from_secs(10),
            ))),
            EnrichmentConfig {
                max_attempts: 2,
                backoff: Duration::from_millis(1),
                ..EnrichmentConfig::default()
            },
        )
        .build()
        .unwrap();
    let user = Namespace::parse("user").unwrap();
    memory.remember(&user, "Caroline said hi").await.unwrap();
    memory.flush().await.unwrap();
    let stats = memory.enrichment_stats().unwrap();
    assert_eq!((stats.enriched, stats.failed, stats.retries), (1, 0, 0));
    let caroline = memory.graph().get_entity(&user, "caroline").await.unwrap();
    assert_eq!(caroline.unwrap().entity_type, "person");
    assert_eq!(server.requests().len(), 1);

    let id = memory.remember(&user, "Caroline again").await.unwrap();
    memory.flush().await.unwrap();
    let stats = memory.enrichment_stats().unwrap();
    assert_eq!((stats.enriched, stats.failed, stats.retries), (1, 1, 1));
    assert!(memory.store().get(&user, &id).await.unwrap().is_some());
    assert_eq!(server.requests().len(), 3);

    let server = serve(vec![
        chat("not json at all"),
        chat(r#"{"memories": null}"#),
        chat(r#"{"index": 0, "entities": []}"#),
    ])
    .await;
    let enricher = LlmEnricher::new(model(&server.base, 1, Duration::from_secs(10)));
    let batch = [item("Caroline")];
    let error = enricher.enrich(&batch).await.unwrap_err();
    assert!(error.to_string().contains("not JSON"), "{error}");
    for _ in 0..2 {
        let error = enricher.enrich(&batch).await.unwrap_err();
        assert!(
            matches!(error, MemoryError::Serialization { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("`memories` list"), "{error}");
    }
}

#[tokio::test]
async fn too_many_requests_and_server_errors_are_retried() {
    let server = serve(vec![
        Reply::WithHeaders(429, vec![("retry-after", "0".into())], "{}".into()),
        Reply::Json(503, "{\"error\":\"overloaded\"}".into()),
        chat("A summary."),
    ])
    .await;
    let chat_model = model(&server.base, 3, Duration::from_secs(10));
    let summary = chat_model.summarize(&["one", "two"], 50).await.unwrap();
    assert_eq!(summary, "A summary.");
    assert_eq!(server.requests().len(), 3);

    let server = serve(vec![
        Reply::Json(500, "{\"error\":\"boom\"}".into()),
        Reply::Json(500, "{\"error\":\"boom\"}".into()),
        Reply::Json(500, "{\"error\":\"boom\"}".into()),
    ])
    .await;
    let chat_model = model(&server.base, 3, Duration::from_secs(10));
    let error = chat_model.summarize(&["one"], 50).await.unwrap_err();
    assert!(matches!(error, MemoryError::Unavailable { .. }), "{error}");
    assert!(error.is_recoverable());
    let message = error.to_string();
    assert!(
        message.contains("HTTP 500") && message.contains("boom"),
        "{message}"
    );
    assert!(message.contains("/v1/chat/completions"), "{message}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = serve(vec![
        Reply::Json(401, "{\"error\":\"bad key\"}".into()),
        Reply::Json(404, "{}".into()),
    ])
    .await;
    let chat_model = model(&server.base, 3, Duration::from_secs(10));
    let error = chat_model.summarize(&["one"], 50).await.unwrap_err();
    assert_eq!(error.field(), Some("api_key"), "{error}");
    let error = chat_model.summarize(&["one"], 50).await.unwrap_err();
    assert_eq!(error.field(), Some("base_url"), "{error}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_silent_server_times_out_and_never_blocks_remember() {
    let server = serve(vec![Reply::Hang, Reply::Hang]).await;
    let chat_model = model(&server.base, 2, Duration::from_millis(100));
    let error = chat_model.summarize(&["one"], 50).await.unwrap_err();
    assert!(matches!(error, MemoryError::Timeout(_)), "{error}");
    assert!(error.to_string().contains("within 100 ms"), "{error}");
    assert_eq!(server.requests().len(), 2, "retried once");

    // An unreachable server: remember returns once stored, enrichment gives up.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let memory = Memory::builder()
        .enricher_with(
            Arc::new(LlmEnricher::new(model(
                &base,
                1,
                Duration::from_millis(500),
            ))),
            EnrichmentConfig {
                max_attempts: 1,
                ..EnrichmentConfig::default()
            },
        )
        .build()
        .unwrap();
    let user = Namespace::parse("user").unwrap();
    let id = memory.remember(&user, "stored anyway").await.unwrap();
    assert!(memory.store().get(&user, &id).await.unwrap().is_some());
    memory.flush().await.unwrap();
    assert_eq!(memory.enrichment_stats().unwrap().failed, 1);
}

#[tokio::test]
async fn the_conflict_judge_maps_indexes_to_ids() {
    let server = serve(vec![chat(
        r#"{"conflicts": [{"index": 1, "reason": "moved"}, {"index": 7}, {"index": 1}]}"#,
    )])
    .await;
    let judge = model(&server.base, 1, Duration::from_secs(10));
    let new = item("Caroline lives in Porto now");
    let candidates = vec![
        Arc::new(item("Caroline likes tea")),
        Arc::new(item("Caroline lives in Lisbon")),
    ];
    let conflicts = judge.detect(&new, &candidates).await.unwrap();
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].id, candidates[1].id);
    assert_eq!(conflicts[0].reason, "moved");
    let prompt = server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prompt.contains("New memory: Caroline lives in Porto now"),
        "{prompt}"
    );
    assert!(
        judge.detect(&new, &[]).await.unwrap().is_empty(),
        "no request without candidates"
    );
    assert_eq!(server.requests().len(), 1);
}

/// The conflict judge drops entries it cannot map to a candidate instead of failing the
/// judgement; an answer without a `conflicts` list is still an error.
#[tokio::test]
async fn the_conflict_judge_drops_malformed_entries() {
    let server = serve(vec![
        chat(
            r#"{"conflicts": [{"index": -1, "reason": "negative"}, {"index": "0"},
              {"index": 0.5}, {"index": 1, "reason": null}, {"index": 0, "reason": 3}]}"#,
        ),
        chat(r#"{"conflicts": null}"#),
        chat(r#"{"conflicts": "none"}"#),
    ])
    .await;
    let judge = model(&server.base, 1, Duration::from_secs(10));
    let new = item("Caroline lives in Porto now");
    let candidates = vec![
        Arc::new(item("Caroline lives in Faro")),
        Arc::new(item("Caroline lives in Lisbon")),
    ];
    let conflicts = judge.detect(&new, &candidates).await.unwrap();
    assert_eq!(conflicts.len(), 2);
    assert_eq!(conflicts[0].id, candidates[1].id);
    assert_eq!(conflicts[0].reason, "contradiction judged by the model");
    assert_eq!(conflicts[1].id, candidates[0].id);
    assert_eq!(conflicts[1].reason, "contradiction judged by the model");
    assert!(judge.detect(&new, &candidates).await.unwrap().is_empty());
    let error = judge.detect(&new, &candidates).await.unwrap_err();
    assert!(
        matches!(error, MemoryError::Serialization { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("`conflicts` list"), "{error}");
}

#[test]
fn invalid_settings_name_the_field() {
    let mut config = ChatConfig::new("http://127.0.0.1:9/v1", "");
    assert_eq!(
        ChatModel::new(config.clone()).unwrap_err().field(),
        Some("model")
    );
    config.model = "m".into();
    config.temperature = f32::NAN;
    assert_eq!(
        ChatModel::new(config.clone()).unwrap_err().field(),
        Some("temperature")
    );
    config.temperature = 0.0;
    config.http.base_url = "localhost:8080".into();
    assert_eq!(
        ChatModel::new(config).unwrap_err().field(),
        Some("base_url")
    );
}

/// An answer cut at its token limit is not a summary; the prompt asks for the budget the
/// request carries (the config's cap), not one the model cannot answer in.
#[tokio::test]
async fn an_answer_cut_at_its_token_limit_is_refused() {
    let cut = Reply::Json(
        200,
        serde_json::json!({
            "choices": [{"index": 0, "message": {"role": "assistant",
                "content": "The user moved to Lis"}, "finish_reason": "length"}],
        })
        .to_string(),
    );
    let server = serve(vec![cut]).await;
    let chat_model = model(&server.base, 3, Duration::from_secs(10));
    let error = chat_model.summarize(&["one"], 5000).await.unwrap_err();
    assert!(matches!(error, MemoryError::LimitExceeded(_)), "{error}");
    let request = &server.requests()[0];
    let cap = chat_model.config().max_tokens;
    assert_eq!(request.body["max_tokens"], cap);
    let system = request.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        system.contains(&format!("at most {cap} tokens")),
        "{system}"
    );
    assert_eq!(server.requests().len(), 1, "not retried");
    // A small budget leaves the answer room to overshoot it.
    let server = serve(vec![chat("A summary.")]).await;
    let chat_model = model(&server.base, 1, Duration::from_secs(10));
    chat_model.summarize(&["one"], 64).await.unwrap();
    let request = &server.requests()[0];
    assert_eq!(request.body["max_tokens"], 128);
    let system = request.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(system.contains("at most 64 tokens"), "{system}");
}

/// Credentials in the base URL are refused without being repeated; a key's line break is
/// trimmed, and a key a header cannot carry is named as the key.
#[tokio::test]
async fn credentials_in_the_url_and_keys_with_line_breaks() {
    let mut config = ChatConfig::new("http://user:hunter2@localhost:9/v1", "test-model");
    config.http = HttpConfig::new("http://user:hunter2@localhost:9/v1");
    let error = ChatModel::new(config).unwrap_err();
    assert_eq!(error.field(), Some("base_url"), "{error}");
    assert!(!error.to_string().contains("hunter2"), "{error}");

    let server = serve(vec![chat("A summary.")]).await;
    let mut config = ChatConfig::new(format!("{}/v1", server.base), "test-model");
    config.http = HttpConfig::new(format!("{}/v1", server.base)).with_api_key("sk-test\r\n");
    let summary = ChatModel::new(config)
        .unwrap()
        .summarize(&["one"], 50)
        .await
        .unwrap();
    assert_eq!(summary, "A summary.");
    assert!(
        server.requests()[0]
            .headers
            .contains("authorization: bearer sk-test\r\n"),
        "the key is sent trimmed"
    );
    let mut config = ChatConfig::new(format!("{}/v1", server.base), "test-model");
    config.http = HttpConfig::new(format!("{}/v1", server.base)).with_api_key("sk\ntest");
    let error = ChatModel::new(config)
        .unwrap()
        .summarize(&["one"], 50)
        .await
        .unwrap_err();
    assert_eq!(error.field(), Some("api_key"), "{error}");
}
